package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Minute stats: inserts and finished attempts are counted per minute, queue and kind in the
// transactions that make them, listed from a minute on, and pruned.
func testStats(t *testing.T, opener Opener) {
	parallel(t, opener, "EnqueueAndFinish", statsEnqueueAndFinish)
	parallel(t, opener, "KeysAndStaleTokensNotCounted", statsKeysAndStaleTokensNotCounted)
	parallel(t, opener, "MinutesAndFilters", statsMinutesAndFilters)
	parallel(t, opener, "Prune", statsPrune)
	parallel(t, opener, "ScheduleFireCounts", statsScheduleFire)
	parallel(t, opener, "LostAndOverdueFailuresCount", statsLostAndOverdue)
}

// Jobs that fail without a worker finishing them count as failed too, in the transaction
// that fails them: a job whose worker is lost once more than its max_rescues allow (outcome
// worker_lost), however the loss is found (an expired lease, a dead node, a lease the caller
// knows is lost, alone or in a rescue pass), and a job still suspended at its deadline. A
// rescue that gives the job back to its queue counts in none of the counters.
func statsLostAndOverdue(t *testing.T, b *bundle) {
	ctx := t.Context()
	// counted returns, by kind, the failed count and the sum of the other counters.
	counted := func() (failed, other map[string]int64) {
		failed, other = map[string]int64{}, map[string]int64{}
		for _, r := range b.stats(t, store.StatsParams{Since: Start}) {
			failed[r.Kind] += r.Failed
			other[r.Kind] += r.Completed + r.Retried
		}
		return failed, other
	}
	expires := func() time.Time { return b.clock.Now().Add(time.Hour) }
	// lose runs the job to the loss that fails it (its bound is 1: one rescue, then failed),
	// finding each loss with rescue, and checks the first loss counted nothing.
	lose := func(kind string, rescue func(job *hoppertype.JobRow) *store.RescueResult) {
		t.Helper()
		job := b.running(t, withKind(kind), withMaxRescues(1))
		require.Equal(t, []string{job.ID}, rescue(job).JobIDs, "%s: the first loss requeues", kind)
		failed, _ := counted()
		require.Zero(t, failed[kind], "%s: a requeued job is not a failure", kind)
		job = b.claimOne(t, job.Queue)
		require.Equal(t, []string{job.ID}, rescue(job).Failed, "%s: the second loss fails", kind)
	}
	lose("expired", func(*hoppertype.JobRow) *store.RescueResult { return b.expireAndRescue(t) })
	lose("lease", func(job *hoppertype.JobRow) *store.RescueResult { return b.rescueLeases(t, leaseOf(job)) })
	lose("dead-node", func(job *hoppertype.JobRow) *store.RescueResult {
		require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: job.WorkerID, Host: "h", PID: 1}))
		b.clock.Advance(time.Minute)
		res, err := b.store.JobRescueDeadNodes(ctx, &store.RescueDeadParams{NodeTTL: 30 * time.Second, ExpiresAt: expires()})
		require.NoError(t, err)
		return res
	})
	lose("pass", func(*hoppertype.JobRow) *store.RescueResult {
		b.clock.Advance(defaultLease + time.Second)
		res, err := b.store.JobRescuePass(ctx, &store.RescuePassParams{Expired: &store.RescueParams{ExpiresAt: expires()},
			Overdue: &store.OverdueParams{Limit: 10, ExpiresAt: expires()}})
		require.NoError(t, err)
		return res.Expired
	})

	alone := b.suspended(t, b.clock.Now().Add(time.Minute))
	inPass := b.suspended(t, b.clock.Now().Add(time.Minute))
	b.clock.Advance(2 * time.Minute)
	ids, err := b.store.JobFailOverdue(ctx, &store.OverdueParams{Limit: 1, ExpiresAt: expires()})
	require.NoError(t, err)
	require.Len(t, ids, 1)
	res, err := b.store.JobRescuePass(ctx, &store.RescuePassParams{Overdue: &store.OverdueParams{Limit: 10, ExpiresAt: expires()}})
	require.NoError(t, err)
	require.Len(t, res.Overdue, 1)
	require.ElementsMatch(t, []string{alone.ID, inPass.ID}, append(ids, res.Overdue...))

	failed, other := counted()
	require.Equal(t, map[string]int64{"expired": 1, "lease": 1, "dead-node": 1, "pass": 1, alone.Kind: 2}, failed)
	for kind, n := range other {
		require.Zero(t, n, "%s: completed and retried (a rescue or a suspension is neither)", kind)
	}
}

// The jobs a schedule's fire enqueues count as enqueued; a fire time already enqueued (its
// key live) does not count again.
func statsScheduleFire(t *testing.T, b *bundle) {
	b.upsertSchedule(t, newSchedule("s", Start))
	b.clock.Advance(time.Minute)
	at := Start.Add(time.Minute)
	job := fireJob(t, "s", at, `{}`)
	again := fireJob(t, "s", at, `{}`)
	res := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: at,
		NewNext: at.Add(time.Minute), Jobs: []*store.InsertParams{job, again}})
	require.Len(t, res.Jobs, 1)
	rows := b.stats(t, store.StatsParams{Since: Start})
	require.Len(t, rows, 1)
	require.Equal(t, int64(1), rows[0].Enqueued)
	require.Equal(t, job.Queue, rows[0].Queue)
}

func (b *bundle) stats(t *testing.T, p store.StatsParams) []*hoppertype.MinuteStats {
	t.Helper()
	rows, err := b.store.StatsList(t.Context(), &p)
	require.NoError(t, err)
	return rows
}

func statsEnqueueAndFinish(t *testing.T, b *bundle) {
	b.insertMany(t, params(t, inQueue("q"), withKind("a")), params(t, inQueue("q"), withKind("a")),
		params(t, inQueue("q"), withKind("a")), params(t, inQueue("q"), withKind("b")))
	b.clock.Advance(250 * time.Millisecond) // each claimed job waited 250 ms
	jobs := b.claim(t, "q", 4)
	require.Len(t, jobs, 4)
	byKind := map[string][]*hoppertype.JobRow{}
	for _, j := range jobs {
		byKind[j.Kind] = append(byKind[j.Kind], j)
	}
	a := byKind["a"]
	retry := finishing(a[2], hoppertype.StateScheduled)
	retry.RunAt = b.clock.Now().Add(time.Minute)
	snooze := finishing(byKind["b"][0], hoppertype.StateScheduled)
	snooze.Outcome, snooze.GiveBack, snooze.RunAt = hoppertype.OutcomeSnoozed, true, b.clock.Now().Add(time.Minute)
	// The completed end carries its claimed Job, as the engine's do; the others leave the
	// store to read their rows. Both count alike.
	done := finishing(a[0], hoppertype.StateCompleted)
	done.Job = a[0]
	require.Equal(t, 250*time.Millisecond, a[0].StartedAt.Sub(a[0].RunAt))
	errs, err := b.store.JobFinishMany(t.Context(), []*store.FinishParams{
		done, finishing(a[1], hoppertype.StateFailed), retry, snooze})
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil, nil, nil}, errs)

	rows := b.stats(t, store.StatsParams{Since: Start})
	require.Len(t, rows, 2)
	wantWait := hoppertype.WaitHistogram{}
	wantWait[hoppertype.WaitBucket(250*time.Millisecond)] = 2 // the completed and the failed attempt
	require.Equal(t, &hoppertype.MinuteStats{Minute: Start, Queue: "q", Kind: "a", Enqueued: 3, Completed: 1,
		Failed: 1, Retried: 1, Wait: wantWait}, rows[0])
	require.Equal(t, &hoppertype.MinuteStats{Minute: Start, Queue: "q", Kind: "b", Enqueued: 1}, rows[1])
	require.Equal(t, 500*time.Millisecond, rows[0].Wait.Percentile(50))
}

func statsKeysAndStaleTokensNotCounted(t *testing.T, b *bundle) {
	b.insert(t, inQueue("q"), withKey("k", time.Hour))
	again := b.insertMany(t, params(t, inQueue("q"), withKey("k", time.Hour)))
	require.True(t, again[0].Existing) // the same job again: not a new one
	job := b.claimOne(t, "q")
	stale := finishing(job, hoppertype.StateCompleted)
	stale.Token++
	require.ErrorIs(t, b.finish(t, stale), store.ErrLeaseLost)

	rows := b.stats(t, store.StatsParams{Since: Start})
	require.Len(t, rows, 1)
	require.Equal(t, int64(1), rows[0].Enqueued)
	require.Zero(t, rows[0].Completed)
	require.Zero(t, rows[0].Wait.Count())
}

func statsMinutesAndFilters(t *testing.T, b *bundle) {
	b.insert(t, inQueue("q1"), withKind("a"))
	b.clock.Advance(90 * time.Second) // 12:01:30
	b.insert(t, inQueue("q1"), withKind("a"))
	b.insert(t, inQueue("q2"), withKind("b"))

	all := b.stats(t, store.StatsParams{Since: Start})
	require.Len(t, all, 3)
	require.Equal(t, Start, all[0].Minute)
	require.Equal(t, Start.Add(time.Minute), all[1].Minute)

	later := b.stats(t, store.StatsParams{Since: b.clock.Now()}) // its minute, 12:01, on
	require.Len(t, later, 2)
	require.Equal(t, []string{"q1", "q2"}, []string{later[0].Queue, later[1].Queue})

	q1 := b.stats(t, store.StatsParams{Since: Start, Queue: "q1"})
	require.Len(t, q1, 2)
	kb := b.stats(t, store.StatsParams{Since: Start, Kind: "b"})
	require.Len(t, kb, 1)
	require.Equal(t, "q2", kb[0].Queue)
}

func statsPrune(t *testing.T, b *bundle) {
	b.insert(t, inQueue("q"))
	b.clock.Advance(2 * time.Minute)
	b.insert(t, inQueue("q"))
	n, err := b.store.StatsPrune(t.Context(), Start.Add(time.Minute))
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	rows := b.stats(t, store.StatsParams{Since: Start})
	require.Len(t, rows, 1)
	require.Equal(t, Start.Add(2*time.Minute), rows[0].Minute)
}
