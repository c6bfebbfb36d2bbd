package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Contract 3, bounded: every way of losing a worker (an expired lease, a dead node, a lease
// the caller knows is lost) counts a rescue, and the loss after the job's last rescue fails
// it with outcome worker_lost, as a dead letter.
func testRescues(t *testing.T, opener Opener) {
	parallel(t, opener, "Bound", rescuesBound)
	parallel(t, opener, "UnderBoundRequeues", rescuesUnderBoundRequeue)
	parallel(t, opener, "AtBoundFails", rescuesAtBoundFail)
	parallel(t, opener, "Unbounded", rescuesUnbounded)
	parallel(t, opener, "DeadNodeAtBound", rescuesDeadNodeAtBound)
	parallel(t, opener, "Leases", rescuesLeases)
	parallel(t, opener, "LeasesFenced", rescuesLeasesFenced)
	parallel(t, opener, "LeasesAtBound", rescuesLeasesAtBound)
	parallel(t, opener, "ReplayStartsAfresh", rescuesReplayStartsAfresh)
	parallel(t, opener, "Pass", rescuesPass)
}

func withMaxRescues(n int) option { return func(p *store.InsertParams) { p.MaxRescues = n } }

const leaseLost = "lease expired before the attempt ended"

// expireAndRescue lets job's lease expire and runs the expired-lease rescue.
func (b *bundle) expireAndRescue(t *testing.T) *store.RescueResult {
	t.Helper()
	b.clock.Advance(defaultLease + time.Second)
	res, err := b.store.JobRescueExpired(t.Context(), &store.RescueParams{ExpiresAt: b.clock.Now().Add(time.Hour)})
	require.NoError(t, err)
	return res
}

// The bound is stored resolved: 0 is the default, any negative value unbounded (-1).
func rescuesBound(t *testing.T, b *bundle) {
	for _, tc := range []struct{ in, want int }{{0, store.DefaultMaxRescues}, {1, 1}, {7, 7}, {-1, -1}, {-5, -1}} {
		inserted := b.insert(t, withMaxRescues(tc.in))
		require.Equal(t, tc.want, inserted.MaxRescues, "insert returns the bound of %d", tc.in)
		got := b.get(t, inserted.ID)
		require.Equal(t, tc.want, got.MaxRescues, "stored bound of %d", tc.in)
		require.Zero(t, got.Rescues)
	}
}

// Under its bound a lost job goes back to queued, its attempt given back and its rescue
// counted.
func rescuesUnderBoundRequeue(t *testing.T, b *bundle) {
	job := b.running(t) // the default bound, 3
	for n := 1; n <= store.DefaultMaxRescues; n++ {
		res := b.expireAndRescue(t)
		require.Equal(t, []string{job.ID}, res.JobIDs)
		require.Equal(t, []string{job.Queue}, res.Queues)
		require.Empty(t, res.Failed)
		require.Equal(t, []store.RescuedJob{{ID: job.ID, Kind: job.Kind, Queue: job.Queue, State: hoppertype.StateQueued}},
			res.Jobs, "each job with its kind and queue (rescue logs and metrics name them)")
		got := b.get(t, job.ID)
		require.Equal(t, hoppertype.StateQueued, got.State)
		require.Equal(t, n, got.Rescues)
		require.Equal(t, 0, got.Attempt, "the attempt is given back")
		require.True(t, got.FinishedAt.IsZero())
		require.True(t, got.ExpiresAt.IsZero())
		b.claimOne(t, job.Queue)
	}
}

// At its bound, the next loss fails the job with worker_lost: a dead letter with its expiry,
// its last attempt recorded with the outcome, and the transition in its history.
func rescuesAtBoundFail(t *testing.T, b *bundle) {
	job := b.running(t, withMaxRescues(2))
	for range 2 {
		require.Equal(t, []string{job.ID}, b.expireAndRescue(t).JobIDs)
		job = b.claimOne(t, job.Queue)
	}
	b.clock.Advance(defaultLease + time.Second)
	failedAt := b.clock.Now()
	expires := failedAt.Add(7 * 24 * time.Hour)
	res, err := b.store.JobRescueExpired(t.Context(), &store.RescueParams{ExpiresAt: expires})
	require.NoError(t, err)
	require.Empty(t, res.JobIDs)
	require.Empty(t, res.Queues, "nothing went back to a queue")
	require.Equal(t, []string{job.ID}, res.Failed)
	require.Equal(t, []store.RescuedJob{{ID: job.ID, Kind: job.Kind, Queue: job.Queue, State: hoppertype.StateFailed}}, res.Jobs)

	got := b.get(t, job.ID)
	wantErr := store.WorkerLostError(3, 2, leaseLost)
	require.Equal(t, "worker lost 3 times (max_rescues 2); last: "+leaseLost, wantErr)
	require.Equal(t, hoppertype.StateFailed, got.State)
	require.Equal(t, 2, got.Rescues)
	require.Equal(t, 1, got.Attempt, "the last attempt is not given back")
	require.Equal(t, wantErr, got.LastError)
	require.Empty(t, got.WorkerID)
	require.True(t, got.LeaseExpiresAt.IsZero())
	sameTime(t, failedAt, got.FinishedAt, "finished_at")
	sameTime(t, expires, got.ExpiresAt, "expires_at")

	as := b.attempts(t, job.ID)
	require.Len(t, as, 3)
	for _, a := range as[:2] {
		require.Equal(t, hoppertype.OutcomeLeaseExpired, a.Outcome)
		require.Equal(t, leaseLost, a.Error)
	}
	last := as[2]
	require.Equal(t, hoppertype.OutcomeWorkerLost, last.Outcome)
	require.Equal(t, wantErr, last.Error)
	require.Equal(t, job.Token, last.Token)
	require.Equal(t, workerA, last.WorkerID)
	sameTime(t, failedAt, last.EndedAt, "attempt end")

	evs := b.events(t, job.ID)
	ev := evs[len(evs)-1]
	require.Equal(t, hoppertype.StateRunning, ev.From)
	require.Equal(t, hoppertype.StateFailed, ev.To)
	require.Equal(t, hoppertype.ActorLeader, ev.Actor)
	require.Equal(t, "lease expired: out of rescues (max_rescues 2)", ev.Reason)

	st, err := b.deadLetters(t).DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Count, "a dead letter")
	require.ErrorIs(t, b.finish(t, finishing(job, hoppertype.StateCompleted)), store.ErrLeaseLost)
	require.Empty(t, b.expireAndRescue(t).Failed, "a failed job is not rescued again")
}

// An unbounded job (-1) is rescued however often its worker is lost.
func rescuesUnbounded(t *testing.T, b *bundle) {
	job := b.running(t, withMaxRescues(-1))
	for n := 1; n <= 6; n++ {
		require.Equal(t, []string{job.ID}, b.expireAndRescue(t).JobIDs)
		require.Equal(t, n, b.get(t, job.ID).Rescues)
		b.claimOne(t, job.Queue)
	}
}

// A dead node's jobs go through the same transition: rescued under their bound, failed with
// worker_lost at it, and the node is deregistered either way.
func rescuesDeadNodeAtBound(t *testing.T, b *bundle) {
	ctx := t.Context()
	const nodeTTL = 30 * time.Second
	rescueDead := func(node string) *store.RescueResult {
		t.Helper()
		require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: node, Host: "h", PID: 1}))
		b.clock.Advance(nodeTTL + time.Second)
		res, err := b.store.JobRescueDeadNodes(ctx, &store.RescueDeadParams{NodeTTL: nodeTTL,
			ExpiresAt: b.clock.Now().Add(time.Hour)})
		require.NoError(t, err)
		return res
	}
	job := b.running(t, withMaxRescues(1)) // claimed by workerA
	res := rescueDead(workerA)
	require.Equal(t, []string{job.ID}, res.JobIDs)
	require.Empty(t, res.Failed)
	require.Equal(t, []store.RescuedJob{{ID: job.ID, Kind: job.Kind, Queue: job.Queue, State: hoppertype.StateQueued}}, res.Jobs)
	require.Equal(t, 1, b.get(t, job.ID).Rescues)

	b.claimAs(t, &store.ClaimParams{Queue: job.Queue, Limit: 1, WorkerID: workerB, LeaseDuration: time.Hour})
	res = rescueDead(workerB)
	require.Empty(t, res.JobIDs)
	require.Equal(t, []string{job.ID}, res.Failed)
	got := b.get(t, job.ID)
	require.Equal(t, hoppertype.StateFailed, got.State)
	require.Equal(t, store.WorkerLostError(2, 1, "node "+workerB+" stopped heartbeating"), got.LastError)
	sameTime(t, b.clock.Now().Add(time.Hour), got.ExpiresAt, "expires_at")
	as := b.attempts(t, job.ID)
	require.Len(t, as, 2)
	require.Equal(t, hoppertype.OutcomeWorkerLost, as[1].Outcome)
	require.Equal(t, workerB, as[1].WorkerID)
	evs := b.events(t, job.ID)
	require.Equal(t, "node dead: out of rescues (max_rescues 1)", evs[len(evs)-1].Reason)
	nodes, err := b.store.NodeList(ctx)
	require.NoError(t, err)
	require.Empty(t, nodes, "both dead nodes are deregistered")
}

const streamClosed = "stream closed: worker went away"

func (b *bundle) rescueLeases(t *testing.T, refs ...store.LeaseRef) *store.RescueResult {
	t.Helper()
	res, err := b.store.JobRescueLeases(t.Context(), &store.RescueLeasesParams{Leases: refs,
		Actor: hoppertype.ActorServer, Reason: streamClosed, Error: streamClosed, ExpiresAt: b.clock.Now().Add(time.Hour)})
	require.NoError(t, err)
	return res
}

func leaseOf(j *hoppertype.JobRow) store.LeaseRef { return store.LeaseRef{ID: j.ID, Token: j.Token} }

// A lease the caller knows is lost is rescued at once, before it expires, by its actor.
func rescuesLeases(t *testing.T, b *bundle) {
	job := b.running(t)
	other := b.running(t)
	b.clock.Advance(time.Second)
	res := b.rescueLeases(t, leaseOf(job))
	require.Equal(t, []string{job.ID}, res.JobIDs)
	require.Equal(t, []string{job.Queue}, res.Queues)
	require.Empty(t, res.Failed)
	require.Equal(t, []store.RescuedJob{{ID: job.ID, Kind: job.Kind, Queue: job.Queue, State: hoppertype.StateQueued}}, res.Jobs)

	got := b.get(t, job.ID)
	require.Equal(t, hoppertype.StateQueued, got.State)
	require.Equal(t, 1, got.Rescues)
	require.Equal(t, 0, got.Attempt, "the attempt is given back")
	require.Empty(t, got.WorkerID)
	as := b.attempts(t, job.ID)
	require.Len(t, as, 1)
	require.Equal(t, hoppertype.OutcomeLeaseExpired, as[0].Outcome)
	require.Equal(t, streamClosed, as[0].Error)
	evs := b.events(t, job.ID)
	require.Equal(t, hoppertype.ActorServer, evs[len(evs)-1].Actor)
	require.Equal(t, streamClosed, evs[len(evs)-1].Reason)
	require.Equal(t, hoppertype.StateRunning, b.get(t, other.ID).State, "other leases are left alone")
	require.ErrorIs(t, b.finish(t, finishing(job, hoppertype.StateCompleted)), store.ErrLeaseLost)
}

// Only the current lease of a running job is rescued: a stale token, a finished job or an
// unknown id changes nothing.
func rescuesLeasesFenced(t *testing.T, b *bundle) {
	require.Empty(t, b.rescueLeases(t).JobIDs, "no leases, nothing to do")
	stale := b.running(t)
	b.clock.Advance(defaultLease + time.Second)
	require.Equal(t, []string{stale.ID}, b.rescue(t).JobIDs)
	current := b.claimOne(t, stale.Queue)
	require.Greater(t, current.Token, stale.Token)
	done := b.running(t)
	require.NoError(t, b.finish(t, finishing(done, hoppertype.StateCompleted)))

	res := b.rescueLeases(t, leaseOf(stale), leaseOf(done), store.LeaseRef{ID: newID(t), Token: 1})
	require.Empty(t, res.JobIDs)
	require.Empty(t, res.Failed)
	got := b.get(t, current.ID)
	require.Equal(t, hoppertype.StateRunning, got.State)
	require.Equal(t, current.Token, got.Token)
	require.Equal(t, 1, got.Rescues, "only the expiry counted")
	require.Equal(t, hoppertype.StateCompleted, b.get(t, done.ID).State)

	res = b.rescueLeases(t, leaseOf(stale), leaseOf(current))
	require.Equal(t, []string{current.ID}, res.JobIDs, "the current token is rescued, the stale one skipped")
	require.Equal(t, 2, b.get(t, current.ID).Rescues)
}

// A lost lease at the job's bound fails it like any other loss.
func rescuesLeasesAtBound(t *testing.T, b *bundle) {
	job := b.running(t, withMaxRescues(1))
	require.Equal(t, []string{job.ID}, b.rescueLeases(t, leaseOf(job)).JobIDs)
	job = b.claimOne(t, job.Queue)
	res := b.rescueLeases(t, leaseOf(job))
	require.Empty(t, res.JobIDs)
	require.Equal(t, []string{job.ID}, res.Failed)
	got := b.get(t, job.ID)
	require.Equal(t, hoppertype.StateFailed, got.State)
	require.Equal(t, store.WorkerLostError(2, 1, streamClosed), got.LastError)
	sameTime(t, b.clock.Now(), got.FinishedAt, "finished_at")
	sameTime(t, b.clock.Now().Add(time.Hour), got.ExpiresAt, "expires_at")
	evs := b.events(t, job.ID)
	require.Equal(t, hoppertype.ActorServer, evs[len(evs)-1].Actor)
	require.Equal(t, hoppertype.StateFailed, evs[len(evs)-1].To)
}

// A replay of a job that ran out of rescues keeps its bound and starts with none used.
func rescuesReplayStartsAfresh(t *testing.T, b *bundle) {
	job := b.running(t, withMaxRescues(1))
	b.rescueLeases(t, leaseOf(job))
	job = b.claimOne(t, job.Queue)
	require.Equal(t, []string{job.ID}, b.rescueLeases(t, leaseOf(job)).Failed)
	r := b.replay(t, job.ID, "ops")
	got := b.get(t, r.Job.ID)
	require.Equal(t, hoppertype.StateQueued, got.State)
	require.Equal(t, 0, got.Rescues)
	require.Equal(t, 1, got.MaxRescues)
	require.Equal(t, 0, r.Job.Rescues)
	require.Equal(t, 1, r.Job.MaxRescues)
}

// A rescue pass runs the parts it is given, each as its own call would: an expired lease, a
// dead node's job and an overdue suspension in one pass; a part not given is not run.
func rescuesPass(t *testing.T, b *bundle) {
	ctx := t.Context()
	const nodeTTL = 30 * time.Second
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: workerB, Host: "h", PID: 2}))
	expired := b.running(t) // workerA, defaultLease
	overdue := b.suspended(t, b.clock.Now().Add(time.Minute))
	queued := b.insert(t)
	dead := b.claimAs(t, &store.ClaimParams{Queue: queued.Queue, Limit: 1, WorkerID: workerB, LeaseDuration: time.Hour})[0]
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: workerA, Host: "h", PID: 1}))
	b.clock.Advance(2 * time.Minute)
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: workerA, Host: "h", PID: 1}))
	expires := b.clock.Now().Add(time.Hour)

	res, err := b.store.JobRescuePass(ctx, &store.RescuePassParams{Overdue: &store.OverdueParams{Limit: 10, ExpiresAt: expires}})
	require.NoError(t, err)
	require.Nil(t, res.Expired, "a part not asked for")
	require.Nil(t, res.Dead, "a part not asked for")
	require.Equal(t, []string{overdue.ID}, res.Overdue)
	require.Equal(t, hoppertype.StateRunning, b.get(t, expired.ID).State, "no expired-lease rescue ran")
	require.Equal(t, hoppertype.StateRunning, b.get(t, dead.ID).State, "no dead-node rescue ran")

	res, err = b.store.JobRescuePass(ctx, &store.RescuePassParams{
		Expired: &store.RescueParams{ExpiresAt: expires},
		Dead:    &store.RescueDeadParams{NodeTTL: nodeTTL, ExpiresAt: expires},
		Overdue: &store.OverdueParams{Limit: 10, ExpiresAt: expires},
	})
	require.NoError(t, err)
	require.Equal(t, []string{expired.ID}, res.Expired.JobIDs)
	require.Equal(t, []string{dead.ID}, res.Dead.JobIDs)
	require.Empty(t, res.Overdue)
	require.Equal(t, hoppertype.StateFailed, b.get(t, overdue.ID).State)
	for _, id := range []string{expired.ID, dead.ID} {
		got := b.get(t, id)
		require.Equal(t, hoppertype.StateQueued, got.State)
		require.Equal(t, 1, got.Rescues)
	}
	nodes, err := b.store.NodeList(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 1, "the dead node is deregistered, the live one stays")
	require.Equal(t, workerA, nodes[0].ID)
}
