package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testCompact(t *testing.T, opener Opener) {
	parallel(t, opener, "Keep", compactKeep)
	parallel(t, opener, "Replace", compactReplace)
	parallel(t, opener, "Append", compactAppend)
	parallel(t, opener, "Lineage", compactLineage)
	parallel(t, opener, "NeverAcrossGroups", compactNeverAcrossGroups)
	parallel(t, opener, "OnlyNeverClaimed", compactOnlyNeverClaimed)
	parallel(t, opener, "Threshold", compactThreshold)
	parallel(t, opener, "AtomicWithClaims", compactAtomicWithClaims)
	parallel(t, opener, "KindSetting", compactKindSetting)
	parallel(t, opener, "LargeGroup", compactLargeGroup)
	parallel(t, opener, "ManyBatches", compactManyBatches)
}

// A group of more jobs than a store replaces in one statement is replaced whole, with its
// lineage and idempotency keys.
func compactLargeGroup(t *testing.T, b *bundle) {
	const n = 1200
	keyed := map[int]bool{0: true, 999: true, 1000: true, n - 1: true}
	item := func(i int) *store.InsertParams {
		p := params(t, withGroup("big"), withArgs(fmt.Sprintf("[%d]", i)))
		if keyed[i] {
			withKey(fmt.Sprintf("k%d", i), time.Hour)(p)
		}
		return p
	}
	ps := make([]*store.InsertParams, n)
	want := make([]string, n)
	for i := range ps {
		ps[i] = item(i)
		want[i] = ps[i].ID
	}
	b.insertMany(t, ps...)
	job := b.compactOne(t, defaultKind, hoppertype.MergeReplace, want...)
	require.JSONEq(t, fmt.Sprintf("[%d]", n-1), string(job.Args))
	from, err := b.store.JobCompactedFrom(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, want, from)
	for i := range keyed {
		require.Equal(t, hoppertype.StateCanceled, b.get(t, want[i]).State)
		res := b.insertMany(t, item(i))
		require.True(t, res[0].Existing, "key %d", i)
		require.Equal(t, job.ID, res[0].Job.ID, "key %d", i)
	}
}

// A compaction of more jobs than one batch (store.CompactBatchJobs) replaces every group whole,
// in group key order, and each replaced job names its group's new job.
func compactManyBatches(t *testing.T, b *bundle) {
	groups := 7
	per := store.CompactBatchJobs/3 + 1 // three groups are more than a batch
	want := map[string][]string{}
	var ps []*store.InsertParams
	for i := range groups * per {
		g := fmt.Sprintf("g%d", i%groups)
		p := params(t, withGroup(g))
		ps = append(ps, p)
		want[g] = append(want[g], p.ID)
	}
	b.insertMany(t, ps...)
	res := b.compact(t, defaultKind, hoppertype.MergeKeep, 0)
	require.Len(t, res.Groups, groups)
	for i, g := range res.Groups {
		require.Equal(t, fmt.Sprintf("g%d", i), g.GroupKey)
		require.NoError(t, g.Refused)
		require.Equal(t, want[g.GroupKey], g.Replaced, g.GroupKey)
		for _, id := range []string{g.Replaced[0], g.Replaced[per-1]} {
			into, err := b.store.JobCompactedInto(t.Context(), id)
			require.NoError(t, err)
			require.Equal(t, g.NewJobID, into)
		}
	}
	require.Empty(t, b.compact(t, defaultKind, hoppertype.MergeKeep, 0).Groups, "nothing left to compact")
}

// A kind's compaction setting is stored, listed, kept beside its other settings and removed
// with over 0; a row left with no setting is removed.
func compactKindSetting(t *testing.T, b *bundle) {
	ctx := t.Context()
	list := func() []*store.KindSettings {
		ks, err := b.store.KindList(ctx)
		require.NoError(t, err)
		return ks
	}
	require.NoError(t, b.store.KindSetCompaction(ctx, "digest", 10, hoppertype.MergeAppend))
	require.NoError(t, b.store.KindSetCompaction(ctx, "plain", 3, ""))
	require.Equal(t, []*store.KindSettings{{Name: "digest", CompactOver: 10, CompactMerge: hoppertype.MergeAppend},
		{Name: "plain", CompactOver: 3}}, list())
	require.NoError(t, b.store.KindSetDisabled(ctx, "digest", true))
	require.NoError(t, b.store.KindSetDisabled(ctx, "digest", false))
	require.NoError(t, b.store.KindSetCompaction(ctx, "plain", 4, hoppertype.MergeReplace))
	require.Equal(t, []*store.KindSettings{{Name: "digest", CompactOver: 10, CompactMerge: hoppertype.MergeAppend},
		{Name: "plain", CompactOver: 4, CompactMerge: hoppertype.MergeReplace}}, list(), "enabling keeps the setting")
	require.NoError(t, b.store.KindSetDisabled(ctx, "plain", true))
	require.NoError(t, b.store.KindSetCompaction(ctx, "plain", 0, ""))
	require.NoError(t, b.store.KindSetCompaction(ctx, "digest", 0, ""))
	require.Equal(t, []*store.KindSettings{{Name: "plain", Disabled: true}}, list())
}

// compact compacts kind's groups under policy and requires success.
func (b *bundle) compact(t *testing.T, kind string, policy hoppertype.MergePolicy, over int) *store.CompactResult {
	t.Helper()
	res, err := b.store.JobCompact(t.Context(), &store.CompactParams{
		Kind: kind, Policy: policy, Over: over, NewID: func() string { return newID(t) },
		Actor: hoppertype.ActorOperator, Retention: time.Hour, MaxArgsBytes: 1 << 20,
	})
	require.NoError(t, err)
	return res
}

// compactOne compacts kind under policy, requires that exactly one group was compacted, and
// returns its new job.
func (b *bundle) compactOne(t *testing.T, kind string, policy hoppertype.MergePolicy, replaced ...string) *hoppertype.JobRow {
	t.Helper()
	res := b.compact(t, kind, policy, 0)
	require.Len(t, res.Groups, 1)
	g := res.Groups[0]
	require.NoError(t, g.Refused)
	require.Equal(t, replaced, g.Replaced)
	return b.get(t, g.NewJobID)
}

// A queued group of one kind: keep gives the new job the oldest job's args and options, and
// the group's jobs end canceled.
func compactKeep(t *testing.T, b *bundle) {
	first := b.insert(t, withGroup("g"), withArgs(`{"n":1}`), withPriority(3), withMaxAttempts(7), withFairness("tenant-a"))
	b.clock.Advance(time.Second)
	second := b.insert(t, withGroup("g"), withArgs(`{"n":2}`), withPriority(9), inQueue("elsewhere"))
	third := b.insert(t, withGroup("g"), withArgs(`{"n":3}`))
	b.clock.Advance(time.Second)
	job := b.compactOne(t, defaultKind, hoppertype.MergeKeep, first.ID, second.ID, third.ID)
	require.JSONEq(t, `{"n":1}`, string(job.Args))
	require.Equal(t, hoppertype.StateQueued, job.State)
	require.Equal(t, defaultKind, job.Kind)
	require.Equal(t, defaultQueue, job.Queue)
	require.Equal(t, 3, job.Priority)
	require.Equal(t, 7, job.MaxAttempts)
	require.Equal(t, "g", job.GroupKey)
	require.Equal(t, "tenant-a", job.FairnessKey, "the oldest job's fairness key: its tenant's job stays its tenant's")
	require.Empty(t, job.MergeKey)
	require.Zero(t, job.Token)
	sameTime(t, b.clock.Now(), job.RunAt, "run_at")
	for _, id := range []string{first.ID, second.ID, third.ID} {
		old := b.get(t, id)
		require.Equal(t, hoppertype.StateCanceled, old.State)
		sameTime(t, b.clock.Now(), old.FinishedAt, "finished_at")
		sameTime(t, b.clock.Now().Add(time.Hour), old.ExpiresAt, "expires_at")
	}
	require.Equal(t, []string{job.ID}, ids(b.listAll(t, store.ListParams{States: []hoppertype.JobState{hoppertype.StateQueued}})))
}

// Replace gives the new job the newest job's args.
func compactReplace(t *testing.T, b *bundle) {
	first := b.insert(t, withGroup("g"), withArgs(`{"n":1}`), withPriority(3))
	second := b.insert(t, withGroup("g"), withArgs(`{"n":2}`))
	job := b.compactOne(t, defaultKind, hoppertype.MergeReplace, first.ID, second.ID)
	require.JSONEq(t, `{"n":2}`, string(job.Args))
	require.Equal(t, 3, job.Priority, "the options are still the oldest's")
}

// Append joins the lists of jobs enqueued with merge policy append, oldest first; a group
// holding a job that is not such a list is refused and left as it was.
func compactAppend(t *testing.T, b *bundle) {
	var lists []string
	for i, args := range []string{`[1]`, `[2,3]`, `[]`, `[{"n":4}]`} {
		lists = append(lists, b.insert(t, withGroup("lists"), withMerge(fmt.Sprintf("m%d", i), hoppertype.MergeAppend), withArgs(args)).ID)
	}
	plain := b.insert(t, withGroup("mixed"), withMerge("x", hoppertype.MergeAppend), withArgs(`[1]`))
	other := b.insert(t, withGroup("mixed"), withArgs(`{"n":1}`))

	res := b.compact(t, defaultKind, hoppertype.MergeAppend, 0)
	require.Len(t, res.Groups, 2)
	byKey := map[string]*store.CompactedGroup{}
	for _, g := range res.Groups {
		byKey[g.GroupKey] = g
	}
	g := byKey["lists"]
	require.NoError(t, g.Refused)
	require.Equal(t, lists, g.Replaced)
	job := b.get(t, g.NewJobID)
	require.JSONEq(t, `[1,2,3,{"n":4}]`, string(job.Args))

	mixed := byKey["mixed"]
	require.ErrorIs(t, mixed.Refused, store.ErrMergeConflict)
	var me *store.MergeError
	require.ErrorAs(t, mixed.Refused, &me)
	require.Equal(t, other.ID, me.JobID)
	require.Empty(t, mixed.NewJobID)
	for _, id := range []string{plain.ID, other.ID} {
		require.Equal(t, hoppertype.StateQueued, b.get(t, id).State)
	}
	groups, jobs := res.Compacted()
	require.Equal(t, 1, groups)
	require.Equal(t, 4, jobs)

	// The new job is a list too: a later append compaction takes it in.
	later := b.insert(t, withGroup("lists"), withMerge("m9", hoppertype.MergeAppend), withArgs(`[5]`))
	res = b.compact(t, defaultKind, hoppertype.MergeAppend, 0)
	require.Len(t, res.Groups, 2, "lists, and mixed refused again")
	g = res.Groups[0]
	require.Equal(t, "lists", g.GroupKey)
	require.Equal(t, []string{job.ID, later.ID}, g.Replaced)
	require.JSONEq(t, `[1,2,3,{"n":4},5]`, string(b.get(t, g.NewJobID).Args))

	// The args of an append count against MaxArgsBytes.
	big := b.insert(t, withGroup("big"), withMerge("b1", hoppertype.MergeAppend), withArgs(`["aaaaaaaaaa"]`))
	b.insert(t, withGroup("big"), withMerge("b2", hoppertype.MergeAppend), withArgs(`["bbbbbbbbbb"]`))
	res, err := b.store.JobCompact(t.Context(), &store.CompactParams{Kind: defaultKind, GroupKey: "big",
		Policy: hoppertype.MergeAppend, NewID: func() string { return newID(t) }, Actor: hoppertype.ActorOperator, MaxArgsBytes: 20})
	require.NoError(t, err)
	require.Len(t, res.Groups, 1)
	require.ErrorIs(t, res.Groups[0].Refused, store.ErrArgsTooLarge)
	require.Equal(t, hoppertype.StateQueued, b.get(t, big.ID).State)
}

// Lineage both ways: the replaced jobs' history names the new job, the lineage table maps
// each to it and it to them, and their idempotency keys now name it.
func compactLineage(t *testing.T, b *bundle) {
	first := b.insert(t, withGroup("g"), withKey("idem-1", time.Hour))
	second := b.insert(t, withGroup("g"))
	t0 := b.clock.Now()
	job := b.compactOne(t, defaultKind, hoppertype.MergeKeep, first.ID, second.ID)

	from, err := b.store.JobCompactedFrom(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, []string{first.ID, second.ID}, from)
	for _, id := range []string{first.ID, second.ID} {
		into, err := b.store.JobCompactedInto(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, job.ID, into)
		evs := b.events(t, id)
		last := evs[len(evs)-1]
		require.Equal(t, hoppertype.StateQueued, last.From)
		require.Equal(t, hoppertype.StateCanceled, last.To)
		require.Equal(t, hoppertype.ActorOperator, last.Actor)
		require.Equal(t, "compacted into "+job.ID, last.Reason)
		sameTime(t, t0, last.At, "event time")
	}
	evs := b.events(t, job.ID)
	require.Len(t, evs, 1)
	require.Equal(t, hoppertype.StateQueued, evs[0].To)
	require.Equal(t, hoppertype.ActorOperator, evs[0].Actor)
	require.Equal(t, "compacted 2 jobs (keep)", evs[0].Reason)

	none, err := b.store.JobCompactedFrom(t.Context(), first.ID)
	require.NoError(t, err)
	require.Empty(t, none)
	into, err := b.store.JobCompactedInto(t.Context(), job.ID)
	require.NoError(t, err)
	require.Empty(t, into)

	res := b.insertMany(t, params(t, withGroup("g"), withKey("idem-1", time.Hour)))
	require.True(t, res[0].Existing, "the key of a replaced job names the new job")
	require.Equal(t, job.ID, res[0].Job.ID)
}

// Groups are per kind and group key: other groups, other kinds in the same group, jobs with
// no group and a group named alone are compacted apart, or not at all.
func compactNeverAcrossGroups(t *testing.T, b *bundle) {
	a1 := b.insert(t, withGroup("a"), withArgs(`{"g":"a1"}`))
	c1 := b.insert(t, withGroup("c"), withArgs(`{"g":"c1"}`))
	b1 := b.insert(t, withGroup("b"), withArgs(`{"g":"b1"}`))
	a2 := b.insert(t, withGroup("a"), withArgs(`{"g":"a2"}`))
	otherKind := b.insert(t, withGroup("a"), withKind("other-kind"))
	b2 := b.insert(t, withGroup("b"), withArgs(`{"g":"b2"}`))
	c2 := b.insert(t, withGroup("c"), withArgs(`{"g":"c2"}`))
	loose1, loose2 := b.insert(t), b.insert(t)

	res, err := b.store.JobCompact(t.Context(), &store.CompactParams{Kind: defaultKind, GroupKey: "c",
		Policy: hoppertype.MergeReplace, NewID: func() string { return newID(t) }, Actor: hoppertype.ActorOperator})
	require.NoError(t, err)
	require.Len(t, res.Groups, 1)
	require.Equal(t, []string{c1.ID, c2.ID}, res.Groups[0].Replaced)
	require.Equal(t, hoppertype.StateQueued, b.get(t, a1.ID).State, "a group not named stays")

	res = b.compact(t, defaultKind, hoppertype.MergeReplace, 0)
	require.Len(t, res.Groups, 2)
	want := map[string][]string{"a": {a1.ID, a2.ID}, "b": {b1.ID, b2.ID}}
	for _, g := range res.Groups {
		require.Equal(t, want[g.GroupKey], g.Replaced, "group %s", g.GroupKey)
		job := b.get(t, g.NewJobID)
		require.Equal(t, g.GroupKey, job.GroupKey)
		require.JSONEq(t, fmt.Sprintf(`{"g":"%s2"}`, g.GroupKey), string(job.Args))
	}
	for _, id := range []string{otherKind.ID, loose1.ID, loose2.ID} {
		require.Equal(t, hoppertype.StateQueued, b.get(t, id).State)
	}
	require.Empty(t, b.compact(t, "other-kind", hoppertype.MergeKeep, 0).Groups, "a group of one")
}

// Only jobs never claimed are replaced: a running job, and one back in its queue after an
// attempt, stay, and what is left of their group is too small to compact.
func compactOnlyNeverClaimed(t *testing.T, b *bundle) {
	q := "q-" + newID(t)
	first := b.insert(t, inQueue(q), withGroup("g"))
	claimed := b.claimOne(t, q)
	require.Equal(t, first.ID, claimed.ID)
	second := b.insert(t, inQueue(q), withGroup("g"))
	require.Empty(t, b.compact(t, defaultKind, hoppertype.MergeKeep, 0).Groups)

	p := finishing(claimed, hoppertype.StateScheduled)
	p.RunAt = b.clock.Now()
	require.NoError(t, b.finish(t, p))
	require.Equal(t, 1, b.promote(t).Promoted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, first.ID).State, "back in its queue")
	require.Empty(t, b.compact(t, defaultKind, hoppertype.MergeKeep, 0).Groups)

	third := b.insert(t, inQueue(q), withGroup("g"))
	job := b.compactOne(t, defaultKind, hoppertype.MergeKeep, second.ID, third.ID)
	require.Equal(t, hoppertype.StateQueued, b.get(t, first.ID).State)
	require.Equal(t, first.ID, b.claimOne(t, q).ID, "the retried job keeps its place")
	require.Equal(t, hoppertype.StateQueued, b.get(t, job.ID).State)
}

// Over: a group is compacted only when more than Over of its jobs wait.
func compactThreshold(t *testing.T, b *bundle) {
	var g []string
	for range 3 {
		g = append(g, b.insert(t, withGroup("g")).ID)
	}
	require.Empty(t, b.compact(t, defaultKind, hoppertype.MergeKeep, 3).Groups)
	res := b.compact(t, defaultKind, hoppertype.MergeKeep, 2)
	require.Len(t, res.Groups, 1)
	require.Equal(t, g, res.Groups[0].Replaced)
}

// Enqueues, claims (each claimed job completed at once) and compactions run at once: every job
// ends either claimed or compacted, never both, and each replaced job's lineage names a job
// that exists and lists it.
func compactAtomicWithClaims(t *testing.T, b *bundle) {
	const groups, rounds = 8, 12
	q := "q-" + newID(t)
	var claimed sync.Map
	var compactions atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, 4*rounds*groups)
	wg.Go(func() {
		<-start
		for range rounds {
			var ps []*store.InsertParams
			for i := range groups {
				ps = append(ps, params(t, inQueue(q), withGroup(fmt.Sprintf("g%02d", i))))
			}
			if _, err := b.store.JobInsertMany(t.Context(), ps); err != nil {
				errs <- err
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			<-start
			for range rounds * 2 {
				jobs, _, err := b.store.JobClaim(t.Context(), &store.ClaimParams{Queue: q, Limit: 3,
					WorkerID: workerA, LeaseDuration: defaultLease})
				if err != nil {
					errs <- err
					return
				}
				var done []*store.FinishParams
				for _, j := range jobs {
					if _, dup := claimed.LoadOrStore(j.ID, j.Token); dup {
						errs <- fmt.Errorf("job %s claimed twice", j.ID)
					}
					done = append(done, finishing(j, hoppertype.StateCompleted))
				}
				if len(done) == 0 {
					continue
				}
				res, err := b.store.JobFinishMany(t.Context(), done)
				if err != nil {
					errs <- err
					return
				}
				for i, err := range res {
					if err != nil {
						errs <- fmt.Errorf("finish job %s: %w", done[i].ID, err)
					}
				}
			}
		})
	}
	var compactor sync.WaitGroup
	stop := make(chan struct{})
	compactor.Go(func() { // compacts for as long as the others run
		<-start
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := b.store.JobCompact(t.Context(), &store.CompactParams{Kind: defaultKind,
				Policy: hoppertype.MergeKeep, NewID: func() string { return newID(t) }, Actor: hoppertype.ActorLeader,
				Retention: time.Hour})
			if err != nil {
				errs <- err
				return
			}
			groups, _ := res.Compacted()
			compactions.Add(int64(groups))
		}
	})
	close(start)
	wg.Wait()
	close(stop)
	compactor.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// One more compaction once everything is still: it must leave no group over one.
	b.compact(t, defaultKind, hoppertype.MergeKeep, 0)

	counts := map[hoppertype.JobState]int{}
	waiting := map[string]int{}
	for _, job := range b.listAll(t, store.ListParams{}) {
		counts[job.State]++
		into, err := b.store.JobCompactedInto(t.Context(), job.ID)
		require.NoError(t, err)
		_, wasClaimed := claimed.Load(job.ID)
		switch job.State {
		case hoppertype.StateCanceled:
			require.NotEmpty(t, into, "job %s canceled by a compaction", job.ID)
			require.False(t, wasClaimed, "job %s was claimed and compacted", job.ID)
			require.Zero(t, job.Token)
			from, err := b.store.JobCompactedFrom(t.Context(), into)
			require.NoError(t, err)
			require.Contains(t, from, job.ID)
			b.get(t, into)
		case hoppertype.StateCompleted:
			require.Empty(t, into)
			require.True(t, wasClaimed, "job %s completed but not claimed here", job.ID)
		default:
			require.Equal(t, hoppertype.StateQueued, job.State)
			require.Empty(t, into)
			require.False(t, wasClaimed)
			waiting[job.GroupKey]++
			require.Equal(t, 1, waiting[job.GroupKey], "group %s", job.GroupKey)
		}
	}
	t.Logf("%d groups compacted; jobs by state: %v", compactions.Load(), counts)
}
