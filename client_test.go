package hopper

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type sendEmail struct {
	To string `json:"to"`
}

func (sendEmail) Kind() string { return "send-email" }

type testBundle struct {
	client *Client
	store  *sqlite.Store
	clock  *clock.Fake
}

var testStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// setup opens a fresh SQLite store on a fake clock and a started client working ws (nil for
// an enqueue-only client). The client is stopped and the store closed at cleanup.
func setup(t *testing.T, ws *Workers, mutate func(*Config)) *testBundle {
	t.Helper()
	clk := clock.NewFake(testStart)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	cfg := Config{Store: st, Workers: ws, Clock: clk, PollInterval: time.Hour, WorkerID: "test-worker"}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := NewClient(cfg)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		stoptest.Within(t, c, 10*time.Second)
		require.NoError(t, st.Close())
	})
	return &testBundle{client: c, store: st, clock: clk}
}

// waitFor polls until the job reaches one of the states (the engine works in the background).
func (b *testBundle) waitFor(t *testing.T, id string, states ...JobState) *JobRow {
	t.Helper()
	var job *JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = b.client.Get(context.Background(), id)
		require.NoError(t, err)
		for _, s := range states {
			if job.State == s {
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "job %s never reached %v", id, states)
	return job
}

func TestEnqueueWorksJobAndRecordsHistory(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	got := make(chan string, 1)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		got <- job.Args.To
		return SetResult(ctx, map[string]string{"sent": job.Args.To})
	})
	// PollInterval is an hour and the clock is fake: only the enqueue's wake-up can start it.
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{To: "a@example.com"}, nil)
	require.NoError(t, err)
	require.Equal(t, "a@example.com", recv(t, got))
	job := b.waitFor(t, res.Job.ID, StateCompleted)
	require.JSONEq(t, `{"sent":"a@example.com"}`, string(job.Result))
	require.Equal(t, 1, job.Attempt)

	events, err := b.client.Events(t.Context(), job.ID)
	require.NoError(t, err)
	var moves []string
	for _, e := range events {
		moves = append(moves, string(e.From)+">"+string(e.To)+":"+string(e.Actor))
	}
	require.Equal(t, []string{">queued:api", "queued>running:worker", "running>completed:worker"}, moves)
	attempts, err := b.client.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	require.Equal(t, OutcomeOK, attempts[0].Outcome)
	require.Equal(t, "test-worker", attempts[0].WorkerID)
}

func TestFailureRetriesWithBackoffThenDeadLetters(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	var mu sync.Mutex
	runs := 0
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		mu.Lock()
		runs++
		mu.Unlock()
		return errors.New("smtp down")
	})
	b := setup(t, ws, nil)
	policy := &RetryPolicy{Base: 10 * time.Second, Multiplier: 3, Cap: time.Hour, Jitter: -1}
	res, err := b.client.Enqueue(t.Context(), sendEmail{To: "x"}, &InsertOpts{MaxAttempts: 3, RetryPolicy: policy})
	require.NoError(t, err)

	job := b.waitFor(t, res.Job.ID, StateScheduled)
	require.Equal(t, testStart.Add(10*time.Second), job.RunAt, "first retry after base")
	require.Equal(t, "smtp down", job.LastError)
	b.clock.Advance(10 * time.Second)
	job = b.waitForAttempt(t, res.Job.ID, 2, StateScheduled)
	require.Equal(t, b.clock.Now().Add(30*time.Second), job.RunAt, "second retry after base·3")
	b.clock.Advance(30 * time.Second)
	job = b.waitFor(t, res.Job.ID, StateFailed)
	require.Equal(t, 3, job.Attempt)
	require.False(t, job.FinishedAt.IsZero())
	mu.Lock()
	require.Equal(t, 3, runs)
	mu.Unlock()
	attempts, err := b.client.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 3)
	for _, a := range attempts {
		require.Equal(t, OutcomeError, a.Outcome)
		require.Equal(t, "smtp down", a.Error)
	}
}

// waitStepping is waitFor for a job that only a timer of the fake clock moves on (the leader's
// rescue, promotion): it moves the clock by step between looks, so the test does not depend on
// the timer being set before one big jump of the clock.
func (b *testBundle) waitStepping(t *testing.T, id string, step time.Duration, states ...JobState) *JobRow {
	t.Helper()
	var job *JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = b.client.Get(context.Background(), id)
		require.NoError(t, err)
		for _, s := range states {
			if job.State == s {
				return true
			}
		}
		b.clock.Advance(step)
		return false
	}, 10*time.Second, 5*time.Millisecond, "job %s never reached %v", id, states)
	return job
}

func (b *testBundle) waitForAttempt(t *testing.T, id string, attempt int, state JobState) *JobRow {
	t.Helper()
	var job *JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = b.client.Get(context.Background(), id)
		require.NoError(t, err)
		return job.Attempt == attempt && job.State == state
	}, 10*time.Second, time.Millisecond)
	return job
}

// recv receives from ch, failing the test instead of hanging when nothing comes.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting on a channel")
		panic("unreachable")
	}
}
