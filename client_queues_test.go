package hopper

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestKindLimitHoldsAcrossTheProcess(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	var running, peak atomic.Int32
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Millisecond) // let the others try to start meanwhile
		running.Add(-1)
		return nil
	})
	b := setup(t, ws, func(c *Config) { c.MaxWorkers = 10; c.PollInterval = 5 * time.Millisecond; c.Clock = nil })
	require.NoError(t, b.client.SetLimit(t.Context(), Limit{Kind: "send-email", MaxRunning: 2}))
	batch := make([]EnqueueParams, 30)
	for i := range batch {
		batch[i] = EnqueueParams{Args: sendEmail{}}
	}
	res, err := b.client.EnqueueMany(t.Context(), batch)
	require.NoError(t, err)
	for _, r := range res {
		b.waitFor(t, r.Job.ID, StateCompleted)
	}
	require.LessOrEqual(t, peak.Load(), int32(2))
	limits, err := b.client.Limits(t.Context())
	require.NoError(t, err)
	require.Equal(t, []Limit{{Kind: "send-email", MaxRunning: 2}}, limits)

	require.ErrorIs(t, b.client.SetLimit(t.Context(), Limit{Queue: "q", Kind: "k", MaxRunning: 1}), ErrInvalid)
	require.ErrorIs(t, b.client.SetLimit(t.Context(), Limit{Queue: "q", MaxRunning: -1}), ErrInvalid)
}

func TestPauseAndResumeQueue(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error { return nil })
	b := setup(t, ws, nil)
	require.NoError(t, b.client.PauseQueue(t.Context(), "default"))
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	require.Never(t, func() bool {
		job, err := b.client.Get(context.Background(), res.Job.ID)
		require.NoError(t, err)
		return job.State != StateQueued
	}, 100*time.Millisecond, 5*time.Millisecond, "a paused queue starts nothing")
	require.NoError(t, b.client.ResumeQueue(t.Context(), "default"))
	b.waitFor(t, res.Job.ID, StateCompleted)
	require.ErrorIs(t, b.client.PauseQueue(t.Context(), "bad name"), ErrInvalid)
}

// The oldest queued job of a queue is the earliest enqueued, with the time it became due;
// a queue with none queued answers the zero time.
func TestOldestQueuedAt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	at, err := b.client.OldestQueuedAt(t.Context(), "mail")
	require.NoError(t, err)
	require.True(t, at.IsZero(), "no queued job")
	_, err = b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Queue: "mail"})
	require.NoError(t, err)
	first := b.clock.Now()
	b.clock.Advance(time.Minute)
	_, err = b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Queue: "mail"})
	require.NoError(t, err)
	_, err = b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Queue: "other"})
	require.NoError(t, err)
	at, err = b.client.OldestQueuedAt(t.Context(), "mail")
	require.NoError(t, err)
	require.True(t, at.Equal(first), "the first job's run_at: %s, not %s", at, first)
}
