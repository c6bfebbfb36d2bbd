package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testFinish(t *testing.T, opener Opener) {
	parallel(t, opener, "RetryScheduled", finishRetryScheduled)
	parallel(t, opener, "Failed", finishFailed)
	parallel(t, opener, "Completed", finishCompleted)
	parallel(t, opener, "GiveBack", finishGiveBack)
	parallel(t, opener, "InvalidTarget", finishInvalidTarget)
	parallel(t, opener, "MixedBatch", finishMixedBatch)
	parallel(t, opener, "CheckpointKept", finishCheckpointKept)
	parallel(t, opener, "OddErrorText", finishOddErrorText)
	parallel(t, opener, "MaxAttemptsOverride", finishMaxAttemptsOverride)
}

// A remote worker's "retries left" override replaces the attempt budget with the outcome;
// zero keeps the stored budget.
func finishMaxAttemptsOverride(t *testing.T, b *bundle) {
	job := b.running(t, withMaxAttempts(3))
	p := finishing(job, hoppertype.StateScheduled)
	p.RunAt, p.Error, p.MaxAttempts = b.clock.Now(), "later", job.Attempt+5
	require.NoError(t, b.finish(t, p))
	require.Equal(t, 6, b.get(t, job.ID).MaxAttempts)

	b.promote(t)
	again := b.claimOne(t, job.Queue)
	p = finishing(again, hoppertype.StateScheduled)
	p.RunAt, p.Error = b.clock.Now(), "again"
	require.NoError(t, b.finish(t, p))
	require.Equal(t, 6, b.get(t, job.ID).MaxAttempts, "zero keeps the budget")
}

// Contract 4: a failed attempt with retries left goes to scheduled and is claimable only after a
// promotion at its run_at; the attempt stays counted.
func finishRetryScheduled(t *testing.T, b *bundle) {
	job := b.running(t)
	b.clock.Advance(time.Second)
	retryAt := b.clock.Now().Add(time.Minute)
	p := finishing(job, hoppertype.StateScheduled)
	p.RunAt, p.Error = retryAt, "connection refused"
	require.NoError(t, b.finish(t, p))

	got := b.get(t, job.ID)
	require.Equal(t, hoppertype.StateScheduled, got.State)
	sameTime(t, retryAt, got.RunAt, "run_at")
	require.Equal(t, 1, got.Attempt)
	require.Equal(t, "connection refused", got.LastError)
	require.Empty(t, got.WorkerID)
	require.True(t, got.LeaseExpiresAt.IsZero())
	require.True(t, got.FinishedAt.IsZero(), "a retry is not the end")

	require.Empty(t, b.claim(t, job.Queue, 1))
	b.clock.Advance(30 * time.Second)
	require.Zero(t, b.promote(t).Promoted)
	require.Empty(t, b.claim(t, job.Queue, 1))
	b.clock.Advance(30 * time.Second)
	require.Equal(t, 1, b.promote(t).Promoted)
	again := b.claim(t, job.Queue, 1)
	require.Len(t, again, 1)
	require.Equal(t, 2, again[0].Attempt)
}

// No retry: failed is terminal, with the error and stack on the attempt record.
func finishFailed(t *testing.T, b *bundle) {
	job := b.running(t)
	b.clock.Advance(2 * time.Second)
	now := b.clock.Now()
	p := finishing(job, hoppertype.StateFailed)
	p.Error, p.Stack = "card declined", "main.charge()\n\tcharge.go:42"
	require.NoError(t, b.finish(t, p))

	got := b.get(t, job.ID)
	require.Equal(t, hoppertype.StateFailed, got.State)
	require.Equal(t, "card declined", got.LastError)
	sameTime(t, now, got.FinishedAt, "finished_at")
	require.Empty(t, got.WorkerID)

	as := b.attempts(t, job.ID)
	require.Len(t, as, 1)
	require.Equal(t, hoppertype.OutcomeError, as[0].Outcome)
	require.Equal(t, "card declined", as[0].Error)
	require.Equal(t, p.Stack, as[0].Stack)
	require.Equal(t, job.Token, as[0].Token)
	require.Equal(t, 1, as[0].Attempt)
	require.Equal(t, workerA, as[0].WorkerID)
	sameTime(t, job.StartedAt, as[0].StartedAt, "attempt start")
	sameTime(t, now, as[0].EndedAt, "attempt end")

	b.clock.Advance(time.Hour)
	require.Zero(t, b.promote(t).Promoted)
	require.Empty(t, b.claim(t, job.Queue, 1))
}

// Success stores the result, the finish time and the record's expiry.
func finishCompleted(t *testing.T, b *bundle) {
	job := b.running(t)
	b.clock.Advance(3 * time.Second)
	now := b.clock.Now()
	p := finishing(job, hoppertype.StateCompleted)
	p.Result, p.ExpiresAt = []byte(`{"receipt":"r-1"}`), now.Add(24*time.Hour)
	require.NoError(t, b.finish(t, p))

	got := b.get(t, job.ID)
	require.Equal(t, hoppertype.StateCompleted, got.State)
	require.JSONEq(t, `{"receipt":"r-1"}`, string(got.Result))
	sameTime(t, now, got.FinishedAt, "finished_at")
	sameTime(t, now.Add(24*time.Hour), got.ExpiresAt, "expires_at")
	as := b.attempts(t, job.ID)
	require.Len(t, as, 1)
	require.Equal(t, hoppertype.OutcomeOK, as[0].Outcome)
	require.Empty(t, as[0].Error)
}

// GiveBack returns the attempt to the budget: snooze (scheduled) and release (queued).
func finishGiveBack(t *testing.T, b *bundle) {
	snoozed := b.running(t)
	p := finishing(snoozed, hoppertype.StateScheduled)
	p.GiveBack, p.Outcome, p.RunAt = true, hoppertype.OutcomeOK, b.clock.Now().Add(10*time.Second)
	require.NoError(t, b.finish(t, p))
	got := b.get(t, snoozed.ID)
	require.Equal(t, hoppertype.StateScheduled, got.State)
	require.Equal(t, 0, got.Attempt)

	released := b.running(t)
	p = finishing(released, hoppertype.StateQueued)
	p.GiveBack, p.Outcome = true, hoppertype.OutcomeOK
	require.NoError(t, b.finish(t, p))
	got = b.get(t, released.ID)
	require.Equal(t, hoppertype.StateQueued, got.State)
	require.Equal(t, 0, got.Attempt)
	again := b.claim(t, released.Queue, 1)
	require.Len(t, again, 1)
	require.Equal(t, 1, again[0].Attempt)
}

// A target the state machine forbids from running is refused per item and changes nothing.
func finishInvalidTarget(t *testing.T, b *bundle) {
	job := b.running(t)
	b.clock.Advance(time.Second)
	before := b.get(t, job.ID)
	for _, target := range []hoppertype.JobState{hoppertype.StateRunning, "bogus", ""} {
		err := b.finish(t, finishing(job, target))
		require.ErrorIs(t, err, store.ErrInvalidTransition, "target %q", target)
		require.Equal(t, before, b.get(t, job.ID), "target %q", target)
	}
	require.Empty(t, b.attempts(t, job.ID))
	require.NoError(t, b.finish(t, finishing(job, hoppertype.StateCompleted)))
}

// One batch: good items apply, stale and invalid items report their own error.
func finishMixedBatch(t *testing.T, b *bundle) {
	good1, good2 := b.running(t), b.running(t)
	old := b.running(t)
	bad := b.running(t)
	// Keep good1, good2 and bad alive while old's lease expires and is re-claimed.
	b.clock.Advance(defaultLease - time.Second)
	for _, j := range []*hoppertype.JobRow{good1, good2, bad} {
		b.extend(t, j, time.Hour)
	}
	current := b.expireAndReclaim(t, old)

	errs, err := b.store.JobFinishMany(t.Context(), []*store.FinishParams{
		finishing(good1, hoppertype.StateCompleted),
		finishing(old, hoppertype.StateCompleted),
		finishing(bad, hoppertype.StateRunning),
		finishing(good2, hoppertype.StateFailed),
	})
	require.NoError(t, err)
	require.Len(t, errs, 4)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], store.ErrLeaseLost)
	require.ErrorIs(t, errs[2], store.ErrInvalidTransition)
	require.NoError(t, errs[3])

	require.Equal(t, hoppertype.StateCompleted, b.get(t, good1.ID).State)
	require.Equal(t, hoppertype.StateFailed, b.get(t, good2.ID).State)
	require.Equal(t, hoppertype.StateRunning, b.get(t, bad.ID).State)
	got := b.get(t, old.ID)
	require.Equal(t, hoppertype.StateRunning, got.State)
	require.Equal(t, current.Token, got.Token)
}

// A nil checkpoint keeps the one an earlier attempt left (contract 13).
func finishCheckpointKept(t *testing.T, b *bundle) {
	job := b.running(t)
	p := finishing(job, hoppertype.StateScheduled)
	p.GiveBack, p.Outcome, p.Checkpoint = true, hoppertype.OutcomeOK, []byte(`{"page":3}`)
	p.RunAt = b.clock.Now().Add(time.Second)
	require.NoError(t, b.finish(t, p))
	b.clock.Advance(time.Second)
	require.Equal(t, 1, b.promote(t).Promoted)
	next := b.claim(t, job.Queue, 1)
	require.Len(t, next, 1)
	require.JSONEq(t, `{"page":3}`, string(next[0].Checkpoint))

	require.NoError(t, b.finish(t, finishing(next[0], hoppertype.StateCompleted)))
	require.JSONEq(t, `{"page":3}`, string(b.get(t, job.ID).Checkpoint))
}

// A handler's error text may hold anything (NUL bytes, invalid UTF-8); it is stored (cleaned
// where the database needs it) and never fails the batch it is written in.
func finishOddErrorText(t *testing.T, b *bundle) {
	odd := b.running(t)
	plain := b.running(t)
	p := finishing(odd, hoppertype.StateFailed)
	p.Error, p.Stack = "bad \x00 bytes \xff here", "stack \x00"
	errs, err := b.store.JobFinishMany(t.Context(), []*store.FinishParams{p, finishing(plain, hoppertype.StateCompleted)})
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil}, errs)
	require.Equal(t, hoppertype.StateFailed, b.get(t, odd.ID).State)
	require.Contains(t, b.get(t, odd.ID).LastError, "bad ")
	require.Equal(t, hoppertype.StateCompleted, b.get(t, plain.ID).State)
}
