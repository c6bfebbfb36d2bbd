package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testCancel(t *testing.T, opener Opener) {
	parallel(t, opener, "NonTerminal", cancelNonTerminal)
	parallel(t, opener, "Running", cancelRunning)
	parallel(t, opener, "CanceledIsNotRun", cancelCanceledIsNotRun)
	parallel(t, opener, "Terminal", cancelTerminal)
	parallel(t, opener, "Unknown", cancelUnknown)
}

func (b *bundle) cancel(t *testing.T, id string) *hoppertype.JobRow {
	t.Helper()
	job, err := b.store.JobCancel(t.Context(), &store.CancelParams{ID: id, Actor: hoppertype.ActorOperator, Reason: "customer left"})
	require.NoError(t, err)
	return job
}

// Contract 6: every non-terminal state can be canceled; the cancel is recorded with its actor.
func cancelNonTerminal(t *testing.T, b *bundle) {
	for _, state := range []hoppertype.JobState{
		hoppertype.StateScheduled, hoppertype.StateQueued, hoppertype.StateRunning, hoppertype.StateSuspended,
	} {
		job := b.jobIn(t, state)
		b.clock.Advance(time.Second)
		now := b.clock.Now()

		returned := b.cancel(t, job.ID)
		for _, got := range []*hoppertype.JobRow{returned, b.get(t, job.ID)} {
			require.Equal(t, hoppertype.StateCanceled, got.State, "from %s", state)
			sameTime(t, now, got.FinishedAt, "finished_at")
			require.Empty(t, got.WorkerID, "from %s", state)
			require.True(t, got.LeaseExpiresAt.IsZero(), "from %s", state)
		}
		evs := b.events(t, job.ID)
		last := evs[len(evs)-1]
		require.Equal(t, state, last.From)
		require.Equal(t, hoppertype.StateCanceled, last.To)
		require.Equal(t, hoppertype.ActorOperator, last.Actor)
		require.Equal(t, "customer left", last.Reason)
		sameTime(t, now, last.At, "cancel event time")
	}
}

// Canceling a running job voids its lease and records the attempt as canceled.
func cancelRunning(t *testing.T, b *bundle) {
	job := b.running(t)
	b.clock.Advance(4 * time.Second)
	b.cancel(t, job.ID)
	before := b.get(t, job.ID)

	b.staleCalls(t, job.ID, job.Token)
	require.Equal(t, before, b.get(t, job.ID))

	as := b.attempts(t, job.ID)
	require.Len(t, as, 1)
	require.Equal(t, hoppertype.OutcomeCanceled, as[0].Outcome)
	require.Equal(t, job.Token, as[0].Token)
	require.Equal(t, workerA, as[0].WorkerID)
	sameTime(t, job.StartedAt, as[0].StartedAt, "attempt start")
	sameTime(t, b.clock.Now(), as[0].EndedAt, "attempt end")

	b.clock.Advance(time.Hour)
	require.Empty(t, b.rescue(t).JobIDs, "a canceled job has no lease to rescue")
}

// Canceled queued and scheduled jobs are never claimed nor promoted.
func cancelCanceledIsNotRun(t *testing.T, b *bundle) {
	queued := b.jobIn(t, hoppertype.StateQueued)
	scheduled := b.jobIn(t, hoppertype.StateScheduled)
	b.cancel(t, queued.ID)
	b.cancel(t, scheduled.ID)

	b.clock.Advance(2 * time.Hour)
	res := b.promote(t)
	require.Zero(t, res.Promoted)
	require.True(t, res.NextRunAt.IsZero())
	require.Empty(t, b.claim(t, defaultQueue, 10))
}

// Terminal jobs refuse a cancel with ErrInvalidTransition and stay as they were.
func cancelTerminal(t *testing.T, b *bundle) {
	for _, state := range []hoppertype.JobState{
		hoppertype.StateCompleted, hoppertype.StateFailed, hoppertype.StateCanceled,
	} {
		job := b.jobIn(t, state)
		b.clock.Advance(time.Second)
		evs := b.events(t, job.ID)

		_, err := b.store.JobCancel(t.Context(), &store.CancelParams{ID: job.ID, Actor: hoppertype.ActorAPI, Reason: "late"})
		require.ErrorIs(t, err, store.ErrInvalidTransition, "from %s", state)
		require.Equal(t, job, b.get(t, job.ID), "from %s", state)
		require.Equal(t, evs, b.events(t, job.ID), "from %s", state)
	}
}

func cancelUnknown(t *testing.T, b *bundle) {
	b.insert(t)
	_, err := b.store.JobCancel(t.Context(), &store.CancelParams{ID: newID(t), Actor: hoppertype.ActorAPI})
	require.ErrorIs(t, err, store.ErrNotFound)
}
