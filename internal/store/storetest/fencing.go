package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testFencing(t *testing.T, opener Opener) {
	parallel(t, opener, "StaleTokenAfterReclaim", fencingStaleTokenAfterReclaim)
	parallel(t, opener, "StaleTokenWhileQueued", fencingStaleTokenWhileQueued)
	parallel(t, opener, "UnissuedToken", fencingUnissuedToken)
	parallel(t, opener, "NoSecondFinish", fencingNoSecondFinish)
	parallel(t, opener, "UnknownJob", fencingUnknownJob)
}

// staleCalls makes every fenced call with token and requires each to be refused with
// ErrLeaseLost, and not ErrNotFound: the job exists.
func (b *bundle) staleCalls(t *testing.T, id string, token int64) {
	t.Helper()
	for what, err := range b.fencedCalls(t, id, token) {
		require.ErrorIs(t, err, store.ErrLeaseLost, what)
		require.NotErrorIs(t, err, store.ErrNotFound, what)
	}
}

// fencedCalls makes every call fenced by a lease token and returns each one's verdict.
func (b *bundle) fencedCalls(t *testing.T, id string, token int64) map[string]error {
	t.Helper()
	ctx := t.Context()
	out := map[string]error{}
	// A batch call's error is its item's, or the whole batch's when the store refused it.
	item := func(errs []error, err error) error {
		if err != nil {
			return err
		}
		require.Len(t, errs, 1)
		return errs[0]
	}
	out["finish"] = item(b.store.JobFinishMany(ctx, []*store.FinishParams{{
		ID: id, Token: token, State: hoppertype.StateCompleted, Outcome: hoppertype.OutcomeOK,
		Result: []byte(`{"stale":true}`), Actor: hoppertype.ActorWorker,
	}}))
	out["extend"] = item(b.store.JobExtendLeases(ctx, []*store.ExtendParams{{ID: id, Token: token, Duration: time.Hour}}))
	out["heartbeat"] = b.store.JobHeartbeat(ctx, &store.HeartbeatParams{ID: id, Token: token})
	out["progress"] = b.store.JobProgress(ctx, &store.ProgressParams{ID: id, Token: token, Percent: 77, Message: "stale"})
	return out
}

// A fenced call naming no job says so (ErrNotFound), apart from a stale token of a job that
// exists; it matches ErrLeaseLost too, since the caller owns nothing. In a batch, only that
// item is refused.
func fencingUnknownJob(t *testing.T, b *bundle) {
	unknown := newID(t)
	for what, err := range b.fencedCalls(t, unknown, 1) {
		require.ErrorIs(t, err, store.ErrNotFound, what)
		require.ErrorIs(t, err, store.ErrLeaseLost, what)
	}
	job := b.running(t)
	errs, err := b.store.JobFinishMany(t.Context(), []*store.FinishParams{
		finishing(&hoppertype.JobRow{ID: unknown, Token: 1}, hoppertype.StateCompleted),
		finishing(job, hoppertype.StateCompleted),
		finishing(&hoppertype.JobRow{ID: job.ID, Token: job.Token + 1}, hoppertype.StateCompleted),
	})
	require.NoError(t, err)
	require.ErrorIs(t, errs[0], store.ErrNotFound)
	require.NoError(t, errs[1])
	require.ErrorIs(t, errs[2], store.ErrLeaseLost)
	require.NotErrorIs(t, errs[2], store.ErrNotFound)
	require.Equal(t, hoppertype.StateCompleted, b.get(t, job.ID).State)
}

// Contract 2: after a rescue and a new claim, the old token changes nothing and the new one works.
func fencingStaleTokenAfterReclaim(t *testing.T, b *bundle) {
	old := b.running(t)
	current := b.expireAndReclaim(t, old)
	b.clock.Advance(5 * time.Second)
	before := b.get(t, old.ID)
	attemptsBefore := b.attempts(t, old.ID)

	b.staleCalls(t, old.ID, old.Token)

	after := b.get(t, old.ID)
	require.Equal(t, before, after, "stale calls changed the job")
	require.Equal(t, hoppertype.StateRunning, after.State)
	require.Equal(t, workerB, after.WorkerID)
	require.Equal(t, current.Token, after.Token)
	sameTime(t, current.LeaseExpiresAt, after.LeaseExpiresAt, "lease_expires_at")
	require.Zero(t, after.ProgressPercent)
	require.Equal(t, attemptsBefore, b.attempts(t, old.ID))

	ctx := t.Context()
	require.NoError(t, b.store.JobHeartbeat(ctx, &store.HeartbeatParams{ID: old.ID, Token: current.Token}))
	require.NoError(t, b.store.JobProgress(ctx, &store.ProgressParams{ID: old.ID, Token: current.Token, Percent: 10}))
	errs, err := b.store.JobExtendLeases(ctx, []*store.ExtendParams{{ID: old.ID, Token: current.Token, Duration: time.Minute}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.NoError(t, b.finish(t, finishing(current, hoppertype.StateCompleted)))
	require.Equal(t, hoppertype.StateCompleted, b.get(t, old.ID).State)
}

// A token is void as soon as its lease is rescued, before anyone claims the job again.
func fencingStaleTokenWhileQueued(t *testing.T, b *bundle) {
	old := b.running(t)
	b.clock.Advance(defaultLease + time.Second)
	require.Equal(t, []string{old.ID}, b.rescue(t).JobIDs)
	before := b.get(t, old.ID)

	b.staleCalls(t, old.ID, old.Token)

	require.Equal(t, before, b.get(t, old.ID))
	require.Equal(t, hoppertype.StateQueued, before.State)
}

// A token that was never issued is refused while the real lease is live.
func fencingUnissuedToken(t *testing.T, b *bundle) {
	job := b.running(t)
	b.clock.Advance(time.Second)
	before := b.get(t, job.ID)

	b.staleCalls(t, job.ID, job.Token+1)
	b.staleCalls(t, job.ID, job.Token-1)

	require.Equal(t, before, b.get(t, job.ID))
	require.NoError(t, b.finish(t, finishing(job, hoppertype.StateCompleted)))
}

// A finished attempt's token cannot finish, extend or report again.
func fencingNoSecondFinish(t *testing.T, b *bundle) {
	job := b.running(t)
	done := finishing(job, hoppertype.StateCompleted)
	done.Result = []byte(`{"first":true}`)
	require.NoError(t, b.finish(t, done))
	b.clock.Advance(time.Second)
	before := b.get(t, job.ID)

	b.staleCalls(t, job.ID, job.Token)

	after := b.get(t, job.ID)
	require.Equal(t, before, after)
	require.JSONEq(t, `{"first":true}`, string(after.Result))
	require.Len(t, b.attempts(t, job.ID), 1)
}
