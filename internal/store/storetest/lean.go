package storetest

import (
	"testing"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// HistoryRows counts the rows a store's history tables hold for one job: its job_events and
// its job_attempts rows.
type HistoryRows func(t *testing.T, st store.Store, jobID string) (events, attempts int)

// RunLeanHistory checks where a store keeps history (the stores' history.go): the job row
// holds its creation and the attempt that ended it, so those write no row, while every other
// transition and attempt has one. It counts rows with rows, which knows the store's tables; the
// conformance suite checks what the history reads.
func RunLeanHistory(t *testing.T, opener Opener, rows HistoryRows) {
	t.Helper()
	b := setup(t, opener)
	count := func(job *hoppertype.JobRow) [2]int {
		events, attempts := rows(t, b.store, job.ID)
		return [2]int{events, attempts}
	}

	queued := b.insert(t)
	require.Equal(t, [2]int{0, 0}, count(queued), "an enqueue writes no history row")

	completed := b.running(t)
	b.signsOfLife(t, completed)
	require.NoError(t, b.finish(t, finishing(completed, hoppertype.StateCompleted)))
	require.Equal(t, [2]int{0, 0}, count(completed), "one attempt that completed")

	failed := b.running(t)
	require.NoError(t, b.finish(t, finishing(failed, hoppertype.StateFailed)))
	require.Equal(t, [2]int{0, 0}, count(failed), "one attempt that failed")

	canceled := b.running(t)
	b.cancel(t, canceled.ID)
	require.Equal(t, [2]int{0, 0}, count(canceled), "a cancel of the running attempt")

	lost := b.running(t, withMaxRescues(1))
	b.clock.Advance(defaultLease)
	require.Equal(t, []string{lost.ID}, b.rescue(t).JobIDs)
	lost = b.claimOne(t, lost.Queue)
	b.clock.Advance(defaultLease)
	require.Equal(t, []string{lost.ID}, b.rescue(t).Failed)
	require.Equal(t, [2]int{0, 1}, count(lost), "the rescued attempt has a row, the lost one is the job's")

	retried := b.running(t)
	p := finishing(retried, hoppertype.StateScheduled)
	p.RunAt = b.clock.Now()
	require.NoError(t, b.finish(t, p))
	require.Equal(t, 1, b.promote(t).Promoted)
	retried = b.claimOne(t, retried.Queue)
	require.NoError(t, b.finish(t, finishing(retried, hoppertype.StateCompleted)))
	require.Equal(t, [2]int{1, 1}, count(retried), "the retry's attempt and its promotion have rows")
	require.Len(t, b.attempts(t, retried.ID), 2)
	require.Len(t, b.events(t, retried.ID), 6)

	// An ending that gives its attempt back changes the row's attempt number, so the store
	// records the attempt in job_attempts although the row keeps its worker: it is read once.
	givenBack := b.running(t)
	p = finishing(givenBack, hoppertype.StateFailed)
	p.GiveBack = true
	require.NoError(t, b.finish(t, p))
	require.Equal(t, [2]int{0, 1}, count(givenBack))
	as := b.attempts(t, givenBack.ID)
	require.Len(t, as, 1, "the attempt is read once")
	require.Equal(t, givenBack.Token, as[0].Token)
	require.Len(t, b.events(t, givenBack.ID), 3, "creation, claim and end, once each")
}

// signsOfLife sends job's running attempt a heartbeat, a progress report and a lease
// extension, none of which is a transition.
func (b *bundle) signsOfLife(t *testing.T, job *hoppertype.JobRow) {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, b.store.JobHeartbeat(ctx, &store.HeartbeatParams{ID: job.ID, Token: job.Token}))
	require.NoError(t, b.store.JobProgress(ctx, &store.ProgressParams{ID: job.ID, Token: job.Token, Percent: 50}))
	errs, err := b.store.JobExtendLeases(ctx, []*store.ExtendParams{{ID: job.ID, Token: job.Token, Duration: defaultLease}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
}

// RequireCompletedOnce checks that job id's history reads as one enqueue, one claim by worker
// and one completion: three events numbered 1 to 3, and one successful attempt.
func RequireCompletedOnce(t *testing.T, st store.Store, id, worker string) {
	t.Helper()
	evs, err := st.JobEvents(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, evs, 3, id)
	for i, want := range []hoppertype.JobState{hoppertype.StateQueued, hoppertype.StateRunning, hoppertype.StateCompleted} {
		require.Equal(t, int64(i+1), evs[i].Seq, id)
		require.Equal(t, want, evs[i].To, id)
	}
	as, err := st.JobAttempts(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, as, 1, id)
	require.Equal(t, hoppertype.OutcomeOK, as[0].Outcome, id)
	require.Equal(t, worker, as[0].WorkerID, id)
}

// RequireJustEnqueued checks that job id's history is its enqueue by the API, once.
func RequireJustEnqueued(t *testing.T, st store.Store, id string) {
	t.Helper()
	evs, err := st.JobEvents(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, evs, 1, id)
	require.Equal(t, hoppertype.StateQueued, evs[0].To, id)
	require.Equal(t, hoppertype.ActorAPI, evs[0].Actor, id)
}
