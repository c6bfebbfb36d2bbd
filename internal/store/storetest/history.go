package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testHistory(t *testing.T, opener Opener) {
	parallel(t, opener, "Lifecycle", historyLifecycle)
	parallel(t, opener, "Attempts", historyAttempts)
	parallel(t, opener, "NoAttemptsYet", historyNoAttemptsYet)
	parallel(t, opener, "Unknown", historyUnknown)
}

// wantEvent is one expected history entry; an empty reason means "any non-empty reason" (the
// store chooses the words for its own transitions).
type wantEvent struct {
	from, to hoppertype.JobState
	actor    hoppertype.Actor
	reason   string
	at       time.Time
}

func requireEvents(t *testing.T, id string, want []wantEvent, got []*hoppertype.Event) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		e := got[i]
		require.Equal(t, id, e.JobID, "event %d", i)
		require.Equal(t, w.from, e.From, "event %d from", i)
		require.Equal(t, w.to, e.To, "event %d to", i)
		require.Equal(t, w.actor, e.Actor, "event %d actor", i)
		if w.reason != "" {
			require.Equal(t, w.reason, e.Reason, "event %d reason", i)
		}
		require.NotEmpty(t, e.Reason, "event %d reason", i)
		sameTime(t, w.at, e.At, "event time")
		if i > 0 {
			require.Greater(t, e.Seq, got[i-1].Seq, "event %d seq", i)
		}
	}
}

// Contract 11 (audit): insert → claim → retry → promote → claim → complete, every transition
// recorded in order with who did it, why and when.
func historyLifecycle(t *testing.T, b *bundle) {
	t0 := b.clock.Now()
	job := b.insert(t)
	b.clock.Advance(time.Second)
	t1 := b.clock.Now()
	first := b.claimOne(t, defaultQueue)
	b.clock.Advance(2 * time.Second)
	t2 := b.clock.Now()
	p := finishing(first, hoppertype.StateScheduled)
	p.RunAt, p.Reason = t2.Add(10*time.Second), "retry after timeout"
	require.NoError(t, b.finish(t, p))
	b.clock.Advance(10 * time.Second)
	t3 := b.clock.Now()
	require.Equal(t, 1, b.promote(t).Promoted)
	b.clock.Advance(time.Second)
	t4 := b.clock.Now()
	second := b.claimOne(t, defaultQueue)
	b.clock.Advance(time.Second)
	t5 := b.clock.Now()
	p = finishing(second, hoppertype.StateCompleted)
	p.Reason = "done"
	require.NoError(t, b.finish(t, p))

	requireEvents(t, job.ID, []wantEvent{
		{"", hoppertype.StateQueued, hoppertype.ActorAPI, "enqueue", t0},
		{hoppertype.StateQueued, hoppertype.StateRunning, hoppertype.ActorWorker, "", t1},
		{hoppertype.StateRunning, hoppertype.StateScheduled, hoppertype.ActorWorker, "retry after timeout", t2},
		{hoppertype.StateScheduled, hoppertype.StateQueued, hoppertype.ActorLeader, "", t3},
		{hoppertype.StateQueued, hoppertype.StateRunning, hoppertype.ActorWorker, "", t4},
		{hoppertype.StateRunning, hoppertype.StateCompleted, hoppertype.ActorWorker, "done", t5},
	}, b.events(t, job.ID))
}

// Every ended attempt is listed in token order with its worker, times and outcome.
func historyAttempts(t *testing.T, b *bundle) {
	job := b.insert(t)
	claimFor := func(worker string) *hoppertype.JobRow {
		jobs := b.claimAs(t, &store.ClaimParams{Queue: defaultQueue, Limit: 1, WorkerID: worker, LeaseDuration: defaultLease})
		require.Len(t, jobs, 1)
		return jobs[0]
	}
	first := claimFor("w1")
	b.clock.Advance(time.Second)
	p := finishing(first, hoppertype.StateScheduled)
	p.RunAt, p.Error = b.clock.Now(), "boom"
	require.NoError(t, b.finish(t, p))
	require.Equal(t, 1, b.promote(t).Promoted)

	second := claimFor("w2")
	b.clock.Advance(defaultLease + time.Second)
	rescuedAt := b.clock.Now()
	require.Equal(t, []string{job.ID}, b.rescue(t).JobIDs)

	third := claimFor("w3")
	b.clock.Advance(time.Second)
	require.NoError(t, b.finish(t, finishing(third, hoppertype.StateCompleted)))

	as := b.attempts(t, job.ID)
	require.Len(t, as, 3)
	want := []struct {
		claimed *hoppertype.JobRow
		worker  string
		outcome hoppertype.Outcome
		attempt int
	}{
		{first, "w1", hoppertype.OutcomeError, 1},
		{second, "w2", hoppertype.OutcomeLeaseExpired, 2},
		{third, "w3", hoppertype.OutcomeOK, 2},
	}
	for i, w := range want {
		require.Equal(t, job.ID, as[i].JobID)
		require.Equal(t, w.claimed.Token, as[i].Token, "attempt %d token", i)
		require.Equal(t, w.attempt, as[i].Attempt, "attempt %d number", i)
		require.Equal(t, w.worker, as[i].WorkerID, "attempt %d worker", i)
		require.Equal(t, w.outcome, as[i].Outcome, "attempt %d outcome", i)
		sameTime(t, w.claimed.StartedAt, as[i].StartedAt, "attempt start")
		require.True(t, as[i].EndedAt.After(as[i].StartedAt), "attempt %d ends after it starts", i)
	}
	require.Less(t, as[0].Token, as[1].Token)
	require.Less(t, as[1].Token, as[2].Token)
	require.Equal(t, "boom", as[0].Error)
	sameTime(t, rescuedAt, as[1].EndedAt, "rescue time")
}

func historyNoAttemptsYet(t *testing.T, b *bundle) {
	job := b.insert(t)
	require.Empty(t, b.attempts(t, job.ID))
	require.Len(t, b.events(t, job.ID), 1)
}

func historyUnknown(t *testing.T, b *bundle) {
	b.insert(t)
	_, err := b.store.JobEvents(t.Context(), newID(t))
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.store.JobAttempts(t.Context(), newID(t))
	require.ErrorIs(t, err, store.ErrNotFound)
}
