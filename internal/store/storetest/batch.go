package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Batches (JobClaimBatch): the jobs of one group, of one kind, claimed together, each with its
// own lease; the group rule, caps, pause and disabled kinds hold for a batch as for any claim.
func testBatch(t *testing.T, opener Opener) {
	parallel(t, opener, "OneGroupInOrder", batchOneGroupInOrder)
	parallel(t, opener, "MaxJobs", batchMaxJobs)
	parallel(t, opener, "GroupExclusive", batchGroupExclusive)
	parallel(t, opener, "OlderJobBlocks", batchOlderJobBlocks)
	parallel(t, opener, "Linger", batchLinger)
	parallel(t, opener, "Ungrouped", batchUngrouped)
	parallel(t, opener, "Caps", batchCaps)
	parallel(t, opener, "LimitsPerKey", batchLimitsPerKey)
	parallel(t, opener, "PausedAndDisabled", batchPausedAndDisabled)
	parallel(t, opener, "LeaseExpiry", batchLeaseExpiry)
	parallel(t, opener, "Concurrent", batchConcurrent)
}

const batchKind = "index-doc"

func (b *bundle) claimBatch(t *testing.T, p store.BatchClaimParams) *store.BatchClaim {
	t.Helper()
	if p.Queue == "" {
		p.Queue = defaultQueue
	}
	if p.Kind == "" {
		p.Kind = batchKind
	}
	p.WorkerID, p.LeaseDuration = workerA, defaultLease
	got, err := b.store.JobClaimBatch(t.Context(), &p)
	require.NoError(t, err)
	require.LessOrEqual(t, len(got.Jobs), p.MaxJobs)
	for _, j := range got.Jobs {
		require.Equal(t, hoppertype.StateRunning, j.State)
		require.Equal(t, p.Kind, j.Kind)
		require.Equal(t, p.Queue, j.Queue)
		require.Equal(t, workerA, j.WorkerID)
	}
	return got
}

func batchOneGroupInOrder(t *testing.T, b *bundle) {
	a1 := b.insert(t, withKind(batchKind), withGroup("g1"))
	a2 := b.insert(t, withKind(batchKind), withGroup("g1"), withPriority(5)) // group order, not priority
	a3 := b.insert(t, withKind(batchKind), withGroup("g1"))
	other := b.insert(t, withKind("other"), withGroup("g1"))
	b.insert(t, withKind(batchKind), withGroup("g1"))
	c1 := b.insert(t, withKind(batchKind), withGroup("g2"))
	b.insert(t, withKind(batchKind)) // no group: not batched without Ungrouped

	got := b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10})
	require.Equal(t, []string{a1.ID, a2.ID, a3.ID}, ids(got.Jobs), "the group's consecutive jobs of the kind, in group order")
	tokens := map[int64]bool{}
	for _, j := range got.Jobs {
		require.Equal(t, 1, j.Attempt)
		tokens[j.Token] = true
	}
	require.NotEmpty(t, tokens)
	got = b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10})
	require.Equal(t, []string{c1.ID}, ids(got.Jobs), "never across groups: the next batch is the next group's")
	require.Empty(t, b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10}).Jobs, "g1 runs, g2 runs")
	for _, j := range got.Jobs {
		require.NoError(t, b.finish(t, finishing(j, hoppertype.StateCompleted)))
	}
	first := b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10})
	require.Empty(t, first.Jobs, "g1's batch still runs")
	require.Equal(t, hoppertype.StateQueued, b.get(t, other.ID).State)
}

func batchMaxJobs(t *testing.T, b *bundle) {
	var want []string
	for range 5 {
		want = append(want, b.insert(t, withKind(batchKind), withGroup("g")).ID)
	}
	got := b.claimBatch(t, store.BatchClaimParams{MaxJobs: 2})
	require.Equal(t, want[:2], ids(got.Jobs))
	require.Empty(t, b.claimBatch(t, store.BatchClaimParams{MaxJobs: 2}).Jobs, "the group runs: its next jobs wait")
	require.Empty(t, b.claim(t, defaultQueue, 10), "for a plain claim too")
	for _, j := range got.Jobs {
		require.NoError(t, b.finish(t, finishing(j, hoppertype.StateCompleted)))
	}
	require.Equal(t, want[2:4], ids(b.claimBatch(t, store.BatchClaimParams{MaxJobs: 2}).Jobs))
}

func batchGroupExclusive(t *testing.T, b *bundle) {
	first := b.insert(t, withKind(batchKind), withGroup("g"))
	b.insert(t, withKind(batchKind), withGroup("g"))
	require.Equal(t, first.ID, b.claimOne(t, defaultQueue).ID)
	require.Empty(t, b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10}).Jobs, "a job of the group runs elsewhere")
}

func batchOlderJobBlocks(t *testing.T, b *bundle) {
	later := b.insert(t, withKind(batchKind), withGroup("g"), withRunAt(b.clock.Now().Add(time.Hour)))
	require.Equal(t, hoppertype.StateScheduled, later.State)
	b.insert(t, withKind(batchKind), withGroup("g"))
	require.Empty(t, b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10}).Jobs, "an older scheduled job keeps the group's order")
}

func batchLinger(t *testing.T, b *bundle) {
	p := store.BatchClaimParams{MaxJobs: 3, MaxWait: 10 * time.Second}
	first := b.insert(t, withKind(batchKind), withGroup("g"))
	b.clock.Advance(time.Second)
	b.insert(t, withKind(batchKind), withGroup("g"))
	got := b.claimBatch(t, p)
	require.Empty(t, got.Jobs, "two of three, the oldest due for 1s of 10s: it lingers")
	sameTime(t, first.RunAt.Add(10*time.Second), got.ReadyAt, "ready once the oldest was due for MaxWait")
	b.insert(t, withKind(batchKind), withGroup("g"))
	require.Len(t, b.claimBatch(t, p).Jobs, 3, "full: claimed at once")

	b.insert(t, withKind(batchKind), withGroup("h"))
	require.Empty(t, b.claimBatch(t, p).Jobs)
	b.clock.Advance(9 * time.Second)
	require.Empty(t, b.claimBatch(t, p).Jobs)
	b.clock.Advance(time.Second)
	require.Len(t, b.claimBatch(t, p).Jobs, 1, "due for MaxWait: claimed as it is")

	b.insert(t, withKind(batchKind), withGroup("i"))
	require.Len(t, b.claimBatch(t, store.BatchClaimParams{MaxJobs: 3}).Jobs, 1, "no linger: claimed at once")
}

func batchUngrouped(t *testing.T, b *bundle) {
	var want []string
	for range 3 {
		want = append(want, b.insert(t, withKind(batchKind)).ID)
	}
	b.insert(t, withKind("other"))
	require.Empty(t, b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10}).Jobs, "ungrouped jobs only when asked")
	got := b.claimBatch(t, store.BatchClaimParams{MaxJobs: 2, Ungrouped: true})
	require.Equal(t, want[:2], ids(got.Jobs))
	got = b.claimBatch(t, store.BatchClaimParams{MaxJobs: 2, Ungrouped: true})
	require.Equal(t, want[2:], ids(got.Jobs), "ungrouped jobs do not exclude each other")
}

func batchCaps(t *testing.T, b *bundle) {
	for range 5 {
		b.insert(t, withKind(batchKind), withGroup("g"))
	}
	b.insert(t, withKind(batchKind), withGroup("h"))
	b.setLimit(t, store.LimitKind, batchKind, 2)
	got := b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10})
	require.Len(t, got.Jobs, 2, "a kind capped at 2 runs 2, batch or not")
	require.True(t, got.Hold.Capped)
	got = b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10})
	require.Empty(t, got.Jobs, "the cap is full")
	require.True(t, got.Hold.Capped)
	b.setLimit(t, store.LimitKind, batchKind, 0)
	b.setLimit(t, store.LimitQueue, defaultQueue, 3)
	require.Len(t, b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10}).Jobs, 1, "the queue's cap: 3 running, 2 of them before")
}

// Limits per fairness key bind batches too: a batch ends before its first job whose key has
// no slot (or start) left, and its jobs count against their key's cap.
func batchLimitsPerKey(t *testing.T, b *bundle) {
	var want []string
	for i := range 5 {
		key := "tenant-a"
		if i == 3 {
			key = "tenant-b"
		}
		want = append(want, b.insert(t, withKind(batchKind), withGroup("g"), withFairness(key)).ID)
	}
	b.setCapPerKey(t, store.LimitKind, batchKind, 2)
	got := b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10})
	require.Equal(t, want[:2], ids(got.Jobs), "tenant-a's cap of 2 ends the batch at its third job")
	require.True(t, got.Hold.Capped)
	require.Equal(t, map[string]int{"tenant-a": 2}, b.runningPerKey(t, ""))
	b.setCapPerKey(t, store.LimitKind, batchKind, 0)
	b.setRatePerKey(t, store.LimitQueue, defaultQueue, 1, time.Hour)
	b.completeAll(t, got.Jobs)
	got = b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10})
	require.Equal(t, want[2:4], ids(got.Jobs), "tenant-a's one start an hour, then tenant-b's; tenant-a's next job ends the batch")
	b.completeAll(t, got.Jobs)
	got = b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10})
	require.Empty(t, got.Jobs, "tenant-a's next start is an hour away: the group waits")
	require.True(t, got.Hold.Capped)
	require.Positive(t, got.Hold.Wait)
}

func batchPausedAndDisabled(t *testing.T, b *bundle) {
	b.insert(t, withKind(batchKind), withGroup("g"))
	b.insert(t, withKind(batchKind))
	require.NoError(t, b.store.QueueSetPaused(t.Context(), defaultQueue, true))
	require.Empty(t, b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10, Ungrouped: true}).Jobs, "a paused queue")
	require.NoError(t, b.store.QueueSetPaused(t.Context(), defaultQueue, false))
	require.NoError(t, b.store.KindSetDisabled(t.Context(), batchKind, true))
	require.Empty(t, b.claimBatch(t, store.BatchClaimParams{MaxJobs: 10, Ungrouped: true}).Jobs, "a disabled kind")
}

func batchLeaseExpiry(t *testing.T, b *bundle) {
	for range 3 {
		b.insert(t, withKind(batchKind), withGroup("g"))
	}
	got := b.claimBatch(t, store.BatchClaimParams{MaxJobs: 3})
	require.Len(t, got.Jobs, 3)
	// One job's lease is renewed, the others' lapse: each job is rescued alone.
	errs, err := b.store.JobExtendLeases(t.Context(), []*store.ExtendParams{{ID: got.Jobs[1].ID, Token: got.Jobs[1].Token, Duration: 2 * defaultLease}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	b.clock.Advance(defaultLease + time.Second)
	res := b.rescue(t)
	require.ElementsMatch(t, []string{got.Jobs[0].ID, got.Jobs[2].ID}, res.JobIDs)
	for _, j := range []*hoppertype.JobRow{got.Jobs[0], got.Jobs[2]} {
		as := b.attempts(t, j.ID)
		require.Len(t, as, 1)
		require.Equal(t, hoppertype.OutcomeLeaseExpired, as[0].Outcome)
		require.Equal(t, j.Token, as[0].Token)
	}
	require.Equal(t, hoppertype.StateRunning, b.get(t, got.Jobs[1].ID).State)
	require.NoError(t, b.finish(t, finishing(got.Jobs[1], hoppertype.StateCompleted)), "its own token still holds")
	stale := finishing(got.Jobs[0], hoppertype.StateCompleted)
	require.ErrorIs(t, b.finish(t, stale), store.ErrLeaseLost, "a rescued job's old token is void")
}

// Concurrent batch claims, and plain claims beside them, split no group and take no job
// twice: nothing ends, so each group is taken by one claim (a batch, or a plain claim of its
// first job) and no more.
func batchConcurrent(t *testing.T, b *bundle) {
	const groups, per = 8, 4
	for g := range groups {
		for range per {
			b.insert(t, withKind(batchKind), withGroup(string(rune('a'+g))))
		}
	}
	var mu sync.Mutex
	seen := map[string]bool{}
	byGroup := map[string]int{}
	record := func(jobs []*hoppertype.JobRow) {
		mu.Lock()
		defer mu.Unlock()
		for _, j := range jobs {
			if seen[j.ID] {
				t.Errorf("job %s claimed twice", j.ID)
			}
			seen[j.ID] = true
		}
		groupsOf := map[string]bool{}
		for _, j := range jobs {
			groupsOf[j.GroupKey] = true
		}
		for g := range groupsOf {
			byGroup[g]++
		}
	}
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for range groups {
				if w%3 == 2 {
					jobs, _, err := b.store.JobClaim(t.Context(), &store.ClaimParams{Queue: defaultQueue, Limit: 2,
						WorkerID: workerB, LeaseDuration: defaultLease})
					if assertNoErr(t, err) {
						record(jobs)
					}
					continue
				}
				got, err := b.store.JobClaimBatch(t.Context(), &store.BatchClaimParams{Queue: defaultQueue, Kind: batchKind,
					MaxJobs: per, WorkerID: workerB, LeaseDuration: defaultLease})
				if !assertNoErr(t, err) {
					return
				}
				for _, j := range got.Jobs {
					if j.GroupKey != got.Jobs[0].GroupKey {
						t.Errorf("a batch across groups %s and %s", j.GroupKey, got.Jobs[0].GroupKey)
					}
				}
				record(got.Jobs)
			}
		})
	}
	wg.Wait()
	require.Len(t, byGroup, groups, "every group was claimed")
	for g, n := range byGroup {
		require.Equal(t, 1, n, "group %s taken by one claim", g)
	}
}

func assertNoErr(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// completeAll completes every job's attempt.
func (b *bundle) completeAll(t *testing.T, jobs []*hoppertype.JobRow) {
	t.Helper()
	for _, j := range jobs {
		require.NoError(t, b.finish(t, &store.FinishParams{ID: j.ID, Token: j.Token,
			State: hoppertype.StateCompleted, Outcome: hoppertype.OutcomeOK}))
	}
}
