package hopper

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// claimWatch is a store that counts the claims that start and end, so that a test can wait
// for a claim that started after some point to be over.
type claimWatch struct {
	*sqlite.Store
	mu            sync.Mutex
	started, done int
	ended         chan struct{} // closed when a claim ends, then replaced
}

func (s *claimWatch) JobClaim(ctx context.Context, p *store.ClaimParams) ([]*JobRow, store.Hold, error) {
	s.mu.Lock()
	s.started++
	s.mu.Unlock()
	jobs, hold, err := s.Store.JobClaim(ctx, p)
	s.mu.Lock()
	s.done++
	close(s.ended)
	s.ended = make(chan struct{})
	s.mu.Unlock()
	return jobs, hold, err
}

// nextClaim waits until a claim that started after the call has ended, or ctx ends.
func (s *claimWatch) nextClaim(ctx context.Context) {
	s.mu.Lock()
	want := s.started + 1 // more claims ended than had started: one of them started since
	s.mu.Unlock()
	for {
		s.mu.Lock()
		done, ended := s.done, s.ended
		s.mu.Unlock()
		if done >= want {
			return
		}
		select {
		case <-ended:
		case <-ctx.Done():
			return
		}
	}
}

func TestKindLimitHoldsAcrossTheProcess(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	var running, peak atomic.Int32
	var st *claimWatch
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		st.nextClaim(ctx) // the others try to start meanwhile
		running.Add(-1)
		return nil
	})
	b := setup(t, ws, func(c *Config) {
		c.MaxWorkers, c.PollInterval, c.Clock = 10, 5*time.Millisecond, nil
		st = &claimWatch{Store: c.Store.(*sqlite.Store), ended: make(chan struct{})}
		c.Store = st
	})
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

// StateCounts counts the jobs of a queue, a kind, both or neither, per state.
func TestStateCounts(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	for _, e := range []struct {
		args  JobArgs
		queue string
		delay time.Duration
	}{{sendEmail{}, "mail", 0}, {sendEmail{}, "mail", time.Hour}, {sendEmail{}, "other", 0}, {RawArgs{KindName: "pdf", JSON: []byte(`{}`)}, "mail", 0}} {
		_, err := b.client.Enqueue(t.Context(), e.args, &InsertOpts{Queue: e.queue, Delay: e.delay})
		require.NoError(t, err)
	}
	for _, tc := range []struct {
		queue, kind string
		want        map[JobState]int64
	}{
		{"", "", map[JobState]int64{StateQueued: 3, StateScheduled: 1}},
		{"mail", "", map[JobState]int64{StateQueued: 2, StateScheduled: 1}},
		{"", "pdf", map[JobState]int64{StateQueued: 1}},
		{"mail", sendEmail{}.Kind(), map[JobState]int64{StateQueued: 1, StateScheduled: 1}},
		{"nowhere", "", map[JobState]int64{}},
	} {
		got, err := b.client.StateCounts(t.Context(), tc.queue, tc.kind)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "queue %q kind %q", tc.queue, tc.kind)
	}
	_, err := b.client.StateCounts(t.Context(), "bad\x00", "")
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "queue", verr.Field)
}

// SetKeyWeight stores a fairness key's weight in a queue, shown by Queues; 0 and 1 remove it;
// a bad queue, key or weight is a *ValidationError naming its field and stores nothing.
func TestSetKeyWeight(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	require.NoError(t, b.client.SetKeyWeight(ctx, "exports", "customer-42", 3))
	require.NoError(t, b.client.SetKeyWeight(ctx, "exports", "customer-7", 2))
	weights := func() map[string]int {
		qs, err := b.client.Queues(ctx)
		require.NoError(t, err)
		for _, q := range qs {
			if q.Name == "exports" {
				return q.KeyWeights
			}
		}
		return nil
	}
	require.Equal(t, map[string]int{"customer-42": 3, "customer-7": 2}, weights())
	for _, bad := range []struct {
		queue, key string
		weight     int
		field      string
	}{
		{"bad name", "customer-42", 2, "queue"},
		{"exports", "", 2, "fairness_key"},
		{"exports", "a\x00b", 2, "fairness_key"},
		{"exports", string(make([]byte, 129)), 2, "fairness_key"},
		{"exports", "customer-42", -1, "weight"},
		{"exports", "customer-42", MaxKeyWeight + 1, "weight"},
	} {
		err := b.client.SetKeyWeight(ctx, bad.queue, bad.key, bad.weight)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "%+v", bad)
		require.Equal(t, bad.field, ve.Field, "%+v", bad)
	}
	require.NoError(t, b.client.SetKeyWeight(ctx, "exports", "customer-42", 1))
	require.NoError(t, b.client.SetKeyWeight(ctx, "exports", "customer-7", 0))
	require.Nil(t, weights())
}
