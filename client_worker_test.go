package hopper

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNoRetryAndDecodeFailureDeadLetterAtOnce(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		return NoRetry(errors.New("address rejected"))
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{To: "x"}, &InsertOpts{MaxAttempts: 5})
	require.NoError(t, err)
	job := b.waitFor(t, res.Job.ID, StateFailed)
	require.Equal(t, 1, job.Attempt)
	require.Contains(t, job.LastError, "address rejected")

	// Args that do not decode into sendEmail: a non-retryable failure that says why.
	res, err = b.client.Enqueue(t.Context(), RawArgs{KindName: "send-email", JSON: []byte(`{"to": 42}`)}, &InsertOpts{MaxAttempts: 5})
	require.NoError(t, err)
	job = b.waitFor(t, res.Job.ID, StateFailed)
	require.Equal(t, 1, job.Attempt)
	require.Contains(t, job.LastError, `decode args of kind "send-email"`)
}

func TestRetryAfterOverridesBackoff(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		return RetryAfter(7*time.Minute, errors.New("rate limited"))
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	job := b.waitFor(t, res.Job.ID, StateScheduled)
	require.Equal(t, testStart.Add(7*time.Minute), job.RunAt)
}

func TestPanicIsRecordedWithStackAndRetried(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	var calls atomic.Int32
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		if calls.Add(1) == 1 {
			panic("nil map write")
		}
		return nil
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{RetryPolicy: &RetryPolicy{Base: time.Second, Jitter: -1}})
	require.NoError(t, err)
	b.waitFor(t, res.Job.ID, StateScheduled)
	b.clock.Advance(time.Second)
	b.waitFor(t, res.Job.ID, StateCompleted)
	attempts, err := b.client.Attempts(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 2)
	require.Equal(t, OutcomePanic, attempts[0].Outcome)
	require.Equal(t, "panic: nil map write", attempts[0].Error)
	require.Contains(t, attempts[0].Stack, "client_worker_test.go")
	require.Equal(t, OutcomeOK, attempts[1].Outcome)
}

func TestTimeoutCancelsHandlerContext(t *testing.T) {
	t.Parallel()
	ws, started, causes := waitingWorker()
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Timeout: 5 * time.Second, MaxAttempts: 1})
	require.NoError(t, err)
	recv(t, started)
	b.clock.Advance(5 * time.Second)
	require.ErrorIs(t, recv(t, causes), ErrJobTimeout)
	job := b.waitFor(t, res.Job.ID, StateFailed)
	require.Contains(t, job.LastError, "job execution timeout after 5s")
	attempts, err := b.client.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, OutcomeTimeout, attempts[0].Outcome)
}

func TestCancelReachesRunningHandler(t *testing.T) {
	t.Parallel()
	ws, started, causes := waitingWorker()
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	recv(t, started)
	job, err := b.client.Cancel(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateCanceled, job.State)
	require.ErrorIs(t, recv(t, causes), ErrJobCanceled)
	require.Eventually(t, func() bool { return b.client.Running() == 0 }, 5*time.Second, time.Millisecond)
	job, err = b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateCanceled, job.State, "the handler's late return must not change a canceled job")
	attempts, err := b.client.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	require.Equal(t, OutcomeCanceled, attempts[0].Outcome)

	_, err = b.client.Cancel(t.Context(), res.Job.ID)
	require.ErrorIs(t, err, ErrInvalidTransition)
	_, err = b.client.Cancel(t.Context(), "no-such-job")
	require.ErrorIs(t, err, ErrNotFound)
}

func TestLeaseKeeperExtendsAndStopsStaleWorker(t *testing.T) {
	t.Parallel()
	ws, started, causes := waitingWorker()
	b := setup(t, ws, func(c *Config) { c.LeaseDuration = 30 * time.Second })
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	recv(t, started)
	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, testStart.Add(30*time.Second), job.LeaseExpiresAt)

	b.clock.Advance(10 * time.Second) // a third of the lease: the keeper renews it
	require.Eventually(t, func() bool {
		job, err = b.client.Get(context.Background(), res.Job.ID)
		require.NoError(t, err)
		return job.LeaseExpiresAt.Equal(testStart.Add(40 * time.Second))
	}, 5*time.Second, time.Millisecond)

	// Another process cancels the job: this process learns it on its next renewal.
	_, err = b.store.JobCancel(t.Context(), &store.CancelParams{ID: res.Job.ID, Actor: "operator"})
	require.NoError(t, err)
	b.clock.Advance(10 * time.Second)
	require.ErrorIs(t, recv(t, causes), ErrLeaseLost)
}

func TestStopReleasesUnfinishedJobsAtOnce(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started := make(chan struct{})
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	recv(t, started)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // deadline already passed: stop hard
	require.NoError(t, b.client.Stop(ctx))

	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateQueued, job.State, "released, not left to lease expiry")
	require.Equal(t, 0, job.Attempt, "a release does not consume an attempt")
	require.Empty(t, job.WorkerID)
	attempts, err := b.client.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	require.Equal(t, OutcomeCanceled, attempts[0].Outcome)
	require.Contains(t, attempts[0].Error, "released on shutdown")
}

func TestStopReleasesHandlersThatIgnoreCancellation(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started, unblock := make(chan struct{}), make(chan struct{})
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		close(started)
		<-unblock // ignores ctx
		return nil
	})
	b := setup(t, ws, nil)
	defer close(unblock)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	recv(t, started)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.NoError(t, b.client.Stop(ctx))
	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateQueued, job.State)
}

func TestStopWaitsForRunningJobs(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started, unblock := make(chan struct{}), make(chan struct{})
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		close(started)
		<-unblock
		return nil
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	recv(t, started)
	stopped := make(chan error)
	go func() { stopped <- b.client.Stop(context.Background()) }()
	close(unblock)
	require.NoError(t, recv(t, stopped))
	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, job.State, "Stop let the running job finish and flushed its outcome")
}

// A retry due sooner than the promotion interval is promoted at its run_at, not a second later.
func TestShortRetryIsPromotedOnTime(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	var calls atomic.Int32
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		if calls.Add(1) == 1 {
			return errors.New("flaky")
		}
		return nil
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{RetryPolicy: &RetryPolicy{Base: 100 * time.Millisecond, Jitter: -1}})
	require.NoError(t, err)
	failed := b.waitFor(t, res.Job.ID, StateScheduled)
	require.Equal(t, 100*time.Millisecond, failed.RunAt.Sub(failed.UpdatedAt))
	// The clock goes to run_at and stays there: the job completes only if it is promoted at
	// run_at, not at the next promotion pass a second later.
	b.clock.Advance(failed.RunAt.Sub(b.clock.Now()))
	ok := assert.Eventually(t, func() bool {
		job, err := b.client.Get(context.Background(), res.Job.ID)
		require.NoError(t, err)
		return job.State == StateCompleted
	}, 5*time.Second, time.Millisecond)
	if !ok { // say where it stopped: a rare failure under load is not understood yet
		job, _ := b.client.Get(context.Background(), res.Job.ID)
		evs, _ := b.client.Events(context.Background(), res.Job.ID)
		t.Logf("clock %v, job %+v", b.clock.Now(), job)
		for _, e := range evs {
			t.Logf("event %+v", e)
		}
		t.FailNow()
	}
}

// While Stop waits for a long job, its lease is still renewed: no other process may take a
// job that is still running here. The clock moves only once Stop has begun (the elector, one
// of the loops Stop ends before it waits for the handlers, has resigned), and each step waits
// for its renewal, so a keeper that Stop ends early fails this test every time.
func TestLeaseRenewedWhileStopWaits(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started, unblock := make(chan struct{}), make(chan struct{})
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		close(started)
		<-unblock
		return nil
	})
	var st *stopWatch
	b := setup(t, ws, func(c *Config) {
		c.LeaseDuration = 30 * time.Second
		st = &stopWatch{Store: c.Store.(*sqlite.Store), resigned: make(chan struct{}), renewed: make(chan struct{}, 16)}
		c.Store = st
	})
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	recv(t, started)
	require.Eventually(t, b.client.IsLeader, 5*time.Second, time.Millisecond)
	stopped := make(chan error, 1)
	go func() { stopped <- b.client.Stop(context.Background()) }()
	recv(t, st.resigned)
	for range 9 { // 90 s: three leases long
		b.clock.Advance(10 * time.Second) // a third of the lease: a renewal is due
		select {
		case <-st.renewed:
		case <-time.After(10 * time.Second):
			t.Fatalf("no lease renewal at %s while Stop waits for the handler", b.clock.Now())
		}
		job, err := b.client.Get(t.Context(), res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, StateRunning, job.State)
		require.Equal(t, b.clock.Now().Add(30*time.Second), job.LeaseExpiresAt, "renewed for the whole lease")
	}
	close(unblock)
	require.NoError(t, recv(t, stopped))
	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, job.State)
}

// stopWatch is a store that tells when its node resigns the leadership (its Stop has begun)
// and when leases were renewed.
type stopWatch struct {
	*sqlite.Store
	once     sync.Once
	resigned chan struct{} // closed at the first resignation
	renewed  chan struct{} // one per renewal that reached the store
}

func (s *stopWatch) LeaderResign(ctx context.Context, nodeID string) error {
	err := s.Store.LeaderResign(ctx, nodeID)
	s.once.Do(func() { close(s.resigned) })
	return err
}

func (s *stopWatch) JobExtendLeases(ctx context.Context, ps []*store.ExtendParams) ([]error, error) {
	errs, err := s.Store.JobExtendLeases(ctx, ps)
	if err == nil {
		select {
		case s.renewed <- struct{}{}:
		default:
		}
	}
	return errs, err
}

// ExtendLease sets the duration later automatic renewals use (longer or shorter).
func TestExtendLeaseSticksAcrossRenewals(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	extended, unblock := make(chan error, 1), make(chan struct{})
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		extended <- ExtendLease(ctx, time.Hour)
		<-unblock
		return nil
	})
	b := setup(t, ws, func(c *Config) { c.LeaseDuration = 30 * time.Second })
	defer close(unblock)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	require.NoError(t, recv(t, extended))
	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, testStart.Add(time.Hour), job.LeaseExpiresAt)
	// The keeper's next renewal (due a third of the 30 s lease after the claim) renews for the
	// hour the handler asked for, not back to 30 s.
	b.clock.Advance(10 * time.Second)
	require.Eventually(t, func() bool {
		job, err = b.client.Get(context.Background(), res.Job.ID)
		require.NoError(t, err)
		return job.LeaseExpiresAt.Equal(testStart.Add(10*time.Second + time.Hour))
	}, 5*time.Second, time.Millisecond)
}

// The next job of a group starts as soon as the previous one's outcome is written, not at the
// next poll (an hour here).
func TestGroupNextJobStartsAtOnce(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error { return nil })
	b := setup(t, ws, nil)
	batch := make([]EnqueueParams, 5)
	for i := range batch {
		batch[i] = EnqueueParams{Args: sendEmail{}, Opts: &InsertOpts{GroupKey: "customer-7"}}
	}
	res, err := b.client.EnqueueMany(t.Context(), batch)
	require.NoError(t, err)
	var last *JobRow
	for _, r := range res {
		job := b.waitFor(t, r.Job.ID, StateCompleted)
		if last != nil {
			require.False(t, job.StartedAt.Before(last.FinishedAt), "one at a time, in order")
		}
		last = job
	}
}

// A live node that can't renew a job's lease (its renewals fail; it still heartbeats, so it is
// not dead) loses the job when the lease ends: the leader's expired-lease rescue requeues it
// with the attempt given back and recorded as lease_expired, it runs again, and the stale
// attempt's handler is told ErrLeaseLost.
func TestLiveNodesLostLeaseComesBack(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started, causes := make(chan struct{}), make(chan error, 1)
	var runs atomic.Int32
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		if runs.Add(1) > 1 {
			return nil
		}
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	var st *renewalsFail
	b := setup(t, ws, func(c *Config) {
		st = &renewalsFail{Store: c.Store.(*sqlite.Store)}
		c.Store, c.LeaseDuration, c.RescueInterval, c.NodeTTL = st, 30*time.Second, 5*time.Second, time.Hour
	})
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	recv(t, started)
	st.failing.Store(true)

	// Step the clock: one jump would also lapse the leader's lease, and a leader regained so
	// soon after its start waits a grace before it rescues (TestANewProcessGivesWorkersTimeToRenew).
	var cause error
	require.Eventually(t, func() bool {
		b.clock.Advance(time.Second)
		select {
		case cause = <-causes:
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond)
	require.ErrorIs(t, cause, ErrLeaseLost)
	require.GreaterOrEqual(t, b.clock.Now().Sub(testStart), 30*time.Second, "not before the lease ended")
	job := b.waitFor(t, res.Job.ID, StateCompleted)
	require.Equal(t, 1, job.Attempt, "the lost attempt was given back")
	require.Equal(t, int32(2), runs.Load())
	attempts, err := b.client.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 2)
	require.Equal(t, OutcomeLeaseExpired, attempts[0].Outcome)
	require.Equal(t, OutcomeOK, attempts[1].Outcome)
	require.Greater(t, st.failed.Load(), int32(0), "renewals were tried and failed")
}

// renewalsFail is a store whose lease renewals fail while failing is set, as for a process
// cut off from the database while the leader still reaches it.
type renewalsFail struct {
	*sqlite.Store
	failing atomic.Bool
	failed  atomic.Int32
}

func (s *renewalsFail) JobExtendLeases(ctx context.Context, ps []*store.ExtendParams) ([]error, error) {
	if s.failing.Load() {
		s.failed.Add(1)
		return nil, errors.New("extend leases: connection refused")
	}
	return s.Store.JobExtendLeases(ctx, ps)
}

// waitingWorker runs send-email jobs that wait for their context to end; started closes when
// the first starts and causes receives why its context ended.
func waitingWorker() (ws *Workers, started chan struct{}, causes chan error) {
	ws, started, causes = NewWorkers(), make(chan struct{}), make(chan error, 1)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	return ws, started, causes
}
