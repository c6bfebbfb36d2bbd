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
	parallel(t, opener, "EveryEnd", historyEveryEnd)
	parallel(t, opener, "CreatedScheduled", historyCreatedScheduled)
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

// The job's history (a rule under every contract, with no number of its own): insert → claim →
// retry → promote → claim → complete, every transition recorded in order with who did it, why
// and when.
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

// Every way an attempt can end the job (a finish in each terminal state, a cancel, a rescue
// out of rescues) leaves the same history, whatever the store keeps it in: every transition
// numbered from 1 without a gap, the last claim and the end, and the attempt that ended the
// job with its worker, token, times, outcome and error. The job itself no longer names a
// worker.
func historyEveryEnd(t *testing.T, b *bundle) {
	type ending struct {
		name    string
		to      hoppertype.JobState
		outcome hoppertype.Outcome
		actor   hoppertype.Actor
		lost    bool // the job loses its worker once first, then again, out of rescues
		end     func(job *hoppertype.JobRow)
	}
	finishAs := func(state hoppertype.JobState, outcome hoppertype.Outcome) func(*hoppertype.JobRow) {
		return func(job *hoppertype.JobRow) {
			p := finishing(job, state)
			p.Outcome, p.Error, p.Stack = outcome, "why "+string(state), "stack "+string(state)
			require.NoError(t, b.finish(t, p))
		}
	}
	rescued := func(job *hoppertype.JobRow) {
		b.clock.Advance(defaultLease)
		res := b.rescue(t)
		require.Equal(t, []string{job.ID}, append(res.JobIDs, res.Failed...))
	}
	endings := []ending{
		{"completed", hoppertype.StateCompleted, hoppertype.OutcomeOK, hoppertype.ActorWorker, false,
			finishAs(hoppertype.StateCompleted, hoppertype.OutcomeOK)},
		{"failed", hoppertype.StateFailed, hoppertype.OutcomeError, hoppertype.ActorWorker, false,
			finishAs(hoppertype.StateFailed, hoppertype.OutcomeError)},
		{"canceled by its worker", hoppertype.StateCanceled, hoppertype.OutcomeCanceled, hoppertype.ActorWorker, false,
			finishAs(hoppertype.StateCanceled, hoppertype.OutcomeCanceled)},
		{"canceled", hoppertype.StateCanceled, hoppertype.OutcomeCanceled, hoppertype.ActorOperator, false,
			func(job *hoppertype.JobRow) { b.cancel(t, job.ID) }},
		{"worker lost", hoppertype.StateFailed, hoppertype.OutcomeWorkerLost, hoppertype.ActorLeader, true, rescued},
	}
	for _, e := range endings {
		created := b.clock.Now()
		job := b.running(t, withMaxRescues(1))
		if e.lost {
			rescued(job)
			job = b.claimOne(t, job.Queue)
		}
		b.clock.Advance(time.Second)
		b.signsOfLife(t, job) // no transitions: the numbering below has no gap for them
		e.end(job)
		ended := b.clock.Now()
		b.clock.Advance(time.Second)

		got := b.get(t, job.ID)
		require.Equal(t, e.to, got.State, e.name)
		require.Empty(t, got.WorkerID, e.name)

		evs := b.events(t, job.ID)
		for i, ev := range evs {
			require.Equal(t, int64(i+1), ev.Seq, "%s: event %d seq", e.name, i)
		}
		first, last := evs[:1], evs[len(evs)-2:]
		requireEvents(t, job.ID, []wantEvent{{"", hoppertype.StateQueued, hoppertype.ActorAPI, "enqueue", created}}, first)
		requireEvents(t, job.ID, []wantEvent{
			{hoppertype.StateQueued, hoppertype.StateRunning, hoppertype.ActorWorker, "", job.StartedAt},
			{hoppertype.StateRunning, e.to, e.actor, "", ended},
		}, last)

		as := b.attempts(t, job.ID)
		wantAttempts := 1
		if e.lost {
			wantAttempts = 2
			require.Len(t, evs, 5, e.name)
			require.Equal(t, hoppertype.OutcomeLeaseExpired, as[0].Outcome, e.name)
		} else {
			require.Len(t, evs, 3, e.name)
		}
		require.Len(t, as, wantAttempts, e.name)
		a := as[len(as)-1]
		require.Equal(t, job.Token, a.Token, e.name)
		require.Equal(t, 1, a.Attempt, e.name) // a rescue gives its attempt back
		require.Equal(t, workerA, a.WorkerID, e.name)
		require.Equal(t, e.outcome, a.Outcome, e.name)
		require.Equal(t, got.LastError, a.Error, e.name)
		sameTime(t, job.StartedAt, a.StartedAt, e.name+": attempt start")
		sameTime(t, ended, a.EndedAt, e.name+": attempt end")
		if e.actor == hoppertype.ActorWorker {
			require.Equal(t, "why "+string(e.to), a.Error, e.name)
			require.Equal(t, "stack "+string(e.to), a.Stack, e.name)
		}
	}
}

// A job created scheduled says so in its history before and after it moves on.
func historyCreatedScheduled(t *testing.T, b *bundle) {
	t0 := b.clock.Now()
	job := b.insert(t, withRunAt(t0.Add(time.Minute)))
	require.Equal(t, hoppertype.StateScheduled, job.State)
	requireEvents(t, job.ID, []wantEvent{{"", hoppertype.StateScheduled, hoppertype.ActorAPI, "enqueue", t0}}, b.events(t, job.ID))

	b.clock.Advance(time.Minute)
	t1 := b.clock.Now()
	require.Equal(t, 1, b.promote(t).Promoted)
	running := b.claimOne(t, defaultQueue)
	require.NoError(t, b.finish(t, finishing(running, hoppertype.StateCompleted)))
	requireEvents(t, job.ID, []wantEvent{
		{"", hoppertype.StateScheduled, hoppertype.ActorAPI, "enqueue", t0},
		{hoppertype.StateScheduled, hoppertype.StateQueued, hoppertype.ActorLeader, "", t1},
		{hoppertype.StateQueued, hoppertype.StateRunning, hoppertype.ActorWorker, "", t1},
		{hoppertype.StateRunning, hoppertype.StateCompleted, hoppertype.ActorWorker, "", t1},
	}, b.events(t, job.ID))
}
