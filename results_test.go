package hopper

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/workerapi"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

type report struct {
	N int `json:"n"`
}

func (report) Kind() string { return "report" }

// reportWorker keeps its completed jobs for an hour, fails on a negative N.
type reportWorker struct{ WorkerDefaults[report] }

func (reportWorker) Work(_ context.Context, job *Job[report]) error {
	if job.Args.N < 0 {
		return NoRetry(errors.New("negative"))
	}
	return nil
}

func (reportWorker) ResultTTL(*Job[report]) time.Duration { return time.Hour }

// Contract 12: an ended job's expiry comes from its own TTL, then its worker's, then the
// client's; failed jobs follow the dead-letter retention; canceled jobs the result TTL.
func TestEndedJobsExpireByTheirRetention(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorker[report](ws, reportWorker{})
	AddWorkerFunc(ws, func(context.Context, *Job[sendEmail]) error { return nil })
	b := setup(t, ws, func(c *Config) { c.ResultTTL, c.DeadLetterRetention = 2*time.Hour, 48*time.Hour })
	enqueue := func(args JobArgs, opts *InsertOpts) string {
		res, err := b.client.Enqueue(t.Context(), args, opts)
		require.NoError(t, err)
		return res.Job.ID
	}
	cases := []struct {
		name  string
		id    string
		state JobState
		ttl   time.Duration
	}{
		{"the client's", enqueue(sendEmail{}, nil), StateCompleted, 2 * time.Hour},
		{"the worker's", enqueue(report{}, nil), StateCompleted, time.Hour},
		{"the job's over the worker's", enqueue(report{}, &InsertOpts{ResultTTL: 5 * time.Minute}), StateCompleted, 5 * time.Minute},
		{"dead letters'", enqueue(report{N: -1}, &InsertOpts{ResultTTL: 5 * time.Minute}), StateFailed, 48 * time.Hour},
	}
	for _, c := range cases {
		job := b.waitFor(t, c.id, c.state)
		require.Equal(t, job.FinishedAt.Add(c.ttl), job.ExpiresAt, c.name)
	}

	res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Delay: time.Hour, ResultTTL: 3 * time.Hour})
	require.NoError(t, err)
	canceled, err := b.client.Cancel(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, canceled.FinishedAt.Add(3*time.Hour), canceled.ExpiresAt, "a cancel keeps the job's own TTL")

	_, err = b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{ResultTTL: -time.Second})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = NewClient(Config{Store: b.store, DeadLetterRetention: -time.Hour})
	require.ErrorIs(t, err, ErrInvalid)
}

// An expired job is gone for Get and List at once (hidden), and the leader deletes it
// (swept): a second handle whose clock is still before the expiry sees the row until then.
func TestExpiredJobsAreHiddenThenSwept(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(context.Context, *Job[sendEmail]) error { return nil })
	path := sqlitetest.Path(t)
	clk := clock.NewFake(testStart)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clk})
	require.NoError(t, err)
	// A long rescue interval: the sweep alone wakes the maintainer each minute.
	c, err := NewClient(Config{Store: st, Workers: ws, Clock: clk, PollInterval: time.Hour, WorkerID: "sweeper",
		ResultTTL: time.Hour, RescueInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		stoptest.Within(t, c, 10*time.Second)
		require.NoError(t, st.Close())
	})
	b := &testBundle{client: c, store: st, clock: clk}
	require.Eventually(t, c.IsLeader, 10*time.Second, time.Millisecond)

	res, err := c.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	b.waitFor(t, res.Job.ID, StateCompleted)
	past, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clock.NewFake(testStart)})
	require.NoError(t, err)
	defer past.Close()

	clk.Advance(59 * time.Minute)
	_, err = c.Get(t.Context(), res.Job.ID)
	require.NoError(t, err, "not expired yet")
	clk.Advance(time.Minute)
	_, err = c.Get(t.Context(), res.Job.ID)
	require.ErrorIs(t, err, ErrNotFound, "expired: hidden at once")
	list, err := c.List(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, list.Jobs)

	require.Eventually(t, func() bool {
		clk.Advance(time.Minute) // the maintainer sweeps each minute
		_, err := past.JobGet(t.Context(), res.Job.ID)
		return errors.Is(err, ErrNotFound)
	}, 10*time.Second, 5*time.Millisecond, "the sweep deletes the row")
}

// A remote worker's Complete and Fail set the expiry as in-process outcomes do.
func TestRemoteOutcomesExpire(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{ResultTTL: 10 * time.Minute})
	require.NoError(t, err)
	res2, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	jobs, err := b.client.workerAPI.Activate(t.Context(), workerapi.ActivateParams{Worker: "w", MaxJobs: 2})
	require.NoError(t, err)
	require.Len(t, jobs, 2)

	require.NoError(t, b.client.workerAPI.CompleteJob(t.Context(), res.Job.ID, jobs[0].Token, nil))
	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, job.FinishedAt.Add(10*time.Minute), job.ExpiresAt)

	zero := 0
	fr, err := b.client.workerAPI.FailJob(t.Context(), res2.Job.ID, jobs[1].Token, workerapi.FailParams{Error: "no", RetriesLeft: &zero})
	require.NoError(t, err)
	require.Equal(t, StateFailed, fr.State)
	job, err = b.client.Get(t.Context(), res2.Job.ID)
	require.NoError(t, err)
	require.Equal(t, job.FinishedAt.Add(7*24*time.Hour), job.ExpiresAt, "the default dead-letter retention")
}

// Config.SweepInterval sets how often the leader sweeps: with 5 s, a job expired 30 s after
// the start is deleted by 40 s, long before the default minute's second sweep.
func TestSweepInterval(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(context.Context, *Job[sendEmail]) error { return nil })
	path := sqlitetest.Path(t)
	clk := clock.NewFake(testStart)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clk})
	require.NoError(t, err)
	c, err := NewClient(Config{Store: st, Workers: ws, Clock: clk, PollInterval: time.Hour, WorkerID: "sweeper",
		ResultTTL: 30 * time.Second, SweepInterval: 5 * time.Second, RescueInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		stoptest.Within(t, c, 10*time.Second)
		require.NoError(t, st.Close())
	})
	b := &testBundle{client: c, store: st, clock: clk}
	require.Eventually(t, c.IsLeader, 10*time.Second, time.Millisecond)
	res, err := c.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	b.waitFor(t, res.Job.ID, StateCompleted)
	past, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clock.NewFake(testStart)})
	require.NoError(t, err)
	defer past.Close()

	for range 40 {
		clk.Advance(time.Second)
	}
	// The sweeper arms its next sweep when the last one ends, in real time: one that lagged
	// behind the advances above waits for more fake time, which each poll gives it.
	require.Eventually(t, func() bool {
		_, err := past.JobGet(t.Context(), res.Job.ID)
		if errors.Is(err, ErrNotFound) {
			return true
		}
		clk.Advance(time.Second)
		return false
	}, 10*time.Second, 5*time.Millisecond, "swept once its 30 s of retention passed")

	_, err = NewClient(Config{Store: st, SweepInterval: time.Millisecond})
	require.ErrorIs(t, err, ErrInvalid)
}
