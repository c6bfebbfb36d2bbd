package hopper

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type chargeCard struct{ Declines int }

func (chargeCard) Kind() string { return "charge" }

// chargeWorker declines the card on the job's first Declines attempts; its kind retries
// business errors after 10 s, then 20 s.
type chargeWorker struct{ WorkerDefaults[chargeCard] }

func (chargeWorker) Work(ctx context.Context, job *Job[chargeCard]) error {
	if job.Attempt <= job.Args.Declines {
		return BusinessError{Code: "card_declined", Message: "insufficient funds"}
	}
	return nil
}

func (chargeWorker) RetryPolicy(*Job[chargeCard]) *RetryPolicy {
	return &RetryPolicy{Base: 10 * time.Second, Multiplier: 2, Jitter: -1, RetryBusinessErrors: true}
}

// A kind whose policy retries business errors gets them retried with its backoff; each failed
// attempt keeps its code, and a job whose attempts run out fails with the code.
func TestBusinessErrorRetriedByTheKindsPolicy(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorker[chargeCard](ws, chargeWorker{})
	b := setup(t, ws, nil)

	res, err := b.client.Enqueue(t.Context(), chargeCard{Declines: 2}, &InsertOpts{MaxAttempts: 3})
	require.NoError(t, err)
	job := b.waitForAttempt(t, res.Job.ID, 1, StateScheduled)
	require.Equal(t, testStart.Add(10*time.Second), job.RunAt, "the kind's backoff")
	require.Equal(t, "card_declined", job.LastErrorCode)
	b.clock.Advance(10 * time.Second)
	job = b.waitForAttempt(t, res.Job.ID, 2, StateScheduled)
	require.Equal(t, b.clock.Now().Add(20*time.Second), job.RunAt)
	b.clock.Advance(20 * time.Second)
	job = b.waitFor(t, res.Job.ID, StateCompleted)
	require.Equal(t, 3, job.Attempt)
	require.Empty(t, job.LastErrorCode, "the last attempt succeeded")
	attempts, err := b.client.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 3)
	for i, code := range []string{"card_declined", "card_declined", ""} {
		require.Equal(t, code, attempts[i].ErrorCode, "attempt %d", i+1)
	}
	require.Equal(t, OutcomeOK, attempts[2].Outcome)

	res, err = b.client.Enqueue(t.Context(), chargeCard{Declines: 5}, &InsertOpts{MaxAttempts: 2})
	require.NoError(t, err)
	b.waitForAttempt(t, res.Job.ID, 1, StateScheduled)
	b.clock.Advance(10 * time.Second)
	job = b.waitFor(t, res.Job.ID, StateFailed)
	require.Equal(t, 2, job.Attempt)
	require.Equal(t, "card_declined", job.LastErrorCode, "the attempts ran out: failed with the code")
}
