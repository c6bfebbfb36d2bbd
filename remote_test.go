package hopper

import (
	"encoding/json"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func activate(t *testing.T, b *testBundle, p workerapi.ActivateParams) []*JobRow {
	t.Helper()
	if p.Worker == "" {
		p.Worker = "remote-1"
	}
	jobs, err := b.client.workerAPI.Activate(t.Context(), p)
	require.NoError(t, err)
	return jobs
}

func TestActivateClaimsWithTheWorkersLease(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	for range 3 {
		_, err := b.client.Enqueue(t.Context(), sendEmail{To: "a"}, nil)
		require.NoError(t, err)
	}
	jobs := activate(t, b, workerapi.ActivateParams{MaxJobs: 2, LeaseDuration: time.Minute})
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		require.Equal(t, StateRunning, j.State)
		require.Equal(t, "remote-1", j.WorkerID)
		require.Equal(t, b.clock.Now().Add(time.Minute), j.LeaseExpiresAt)
	}
	require.Len(t, activate(t, b, workerapi.ActivateParams{MaxJobs: 5}), 1)
	require.Empty(t, activate(t, b, workerapi.ActivateParams{MaxJobs: 5}), "nothing left, no wait: empty at once")
}

// A long poll waits on the client's clock: an enqueue wakes it with the clock standing still
// (neither its poll nor its timeout can have ended the wait), and with nothing enqueued it
// returns no jobs once the clock has passed its wait, not before. The client takes no part in
// the leadership, so that the clock's only timers are the long poll's.
func TestActivateLongPollWakesOnEnqueueAndTimesOut(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, func(c *Config) { c.DisableMaintenance = true })
	waiting := func() {
		t.Helper()
		require.Eventually(t, func() bool { return b.clock.Pending() == 1 }, 10*time.Second, time.Millisecond,
			"Activate waits on the clock")
	}
	type activated struct {
		jobs []*JobRow
		err  error
	}
	activate := func(wait time.Duration) <-chan activated {
		got := make(chan activated, 1)
		go func() {
			jobs, err := b.client.workerAPI.Activate(t.Context(), workerapi.ActivateParams{Worker: "w", Wait: wait})
			got <- activated{jobs, err}
		}()
		return got
	}

	got := activate(10 * time.Second)
	waiting()
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	a := recv(t, got)
	require.NoError(t, a.err)
	require.Len(t, a.jobs, 1, "woken by the enqueue, not by the timeout")
	require.Equal(t, res.Job.ID, a.jobs[0].ID)

	got = activate(100 * time.Millisecond)
	waiting()
	b.clock.Advance(99 * time.Millisecond)
	waiting() // still: the wait is not over
	b.clock.Advance(time.Millisecond)
	a = recv(t, got)
	require.NoError(t, a.err)
	require.Empty(t, a.jobs)
}

func TestActivateRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	for _, p := range []workerapi.ActivateParams{
		{},
		{Worker: "w", MaxJobs: workerapi.MaxActivateJobs + 1},
		{Worker: "w", LeaseDuration: time.Millisecond},
		{Worker: "w", Wait: workerapi.MaxActivateWait + time.Second},
		{Worker: "w", Queue: "bad queue"},
		{Worker: "w", Kinds: []string{""}},
	} {
		_, err := b.client.workerAPI.Activate(t.Context(), p)
		require.ErrorIs(t, err, ErrInvalid, "%+v", p)
	}
}

func TestCompleteJobIsFencedByTheLeaseToken(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	job := activate(t, b, workerapi.ActivateParams{})[0]

	require.ErrorIs(t, b.client.workerAPI.CompleteJob(t.Context(), job.ID, job.Token+1, nil), ErrLeaseLost)
	require.ErrorIs(t, b.client.workerAPI.CompleteJob(t.Context(), job.ID, job.Token, json.RawMessage(`{`)), ErrInvalid)
	require.NoError(t, b.client.workerAPI.CompleteJob(t.Context(), job.ID, job.Token, json.RawMessage(`{"sent":true}`)))
	got, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, got.State)
	require.JSONEq(t, `{"sent":true}`, string(got.Result))
	require.ErrorIs(t, b.client.workerAPI.CompleteJob(t.Context(), job.ID, job.Token, nil), ErrLeaseLost, "completing twice")
}

func TestFailJobRetriesThenFails(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	_, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{MaxAttempts: 2,
		RetryPolicy: &RetryPolicy{Base: time.Minute, Jitter: -1}})
	require.NoError(t, err)

	job := activate(t, b, workerapi.ActivateParams{})[0]
	res, err := b.client.workerAPI.FailJob(t.Context(), job.ID, job.Token, workerapi.FailParams{Error: "smtp down"})
	require.NoError(t, err)
	require.Equal(t, StateScheduled, res.State)
	require.Equal(t, b.clock.Now().Add(time.Minute), res.RunAt, "the job's own backoff")

	b.clock.Advance(time.Minute)
	job = activateEventually(t, b)
	res, err = b.client.workerAPI.FailJob(t.Context(), job.ID, job.Token, workerapi.FailParams{Error: "smtp down again"})
	require.NoError(t, err)
	require.Equal(t, StateFailed, res.State, "no attempts left")
	got, err := b.client.Get(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, StateFailed, got.State)
	require.Equal(t, "smtp down again", got.LastError)

	_, err = b.client.workerAPI.FailJob(t.Context(), job.ID, job.Token, workerapi.FailParams{Error: "x"})
	require.ErrorIs(t, err, ErrLeaseLost)
	_, err = b.client.workerAPI.FailJob(t.Context(), job.ID, job.Token, workerapi.FailParams{})
	require.ErrorIs(t, err, ErrInvalid, "an error message is required")
}

func TestFailJobRetriesOverrideAndBackoff(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	_, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{MaxAttempts: 1})
	require.NoError(t, err)
	job := activate(t, b, workerapi.ActivateParams{})[0]
	three, backoff := 3, 5*time.Second
	res, err := b.client.workerAPI.FailJob(t.Context(), job.ID, job.Token, workerapi.FailParams{Error: "e", RetriesLeft: &three, Backoff: &backoff})
	require.NoError(t, err)
	require.Equal(t, StateScheduled, res.State, "retries left override the budget of 1")
	require.Equal(t, b.clock.Now().Add(5*time.Second), res.RunAt)
	got, err := b.client.Get(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, 4, got.MaxAttempts)

	b.clock.Advance(5 * time.Second)
	job = activateEventually(t, b)
	zero := 0
	res, err = b.client.workerAPI.FailJob(t.Context(), job.ID, job.Token, workerapi.FailParams{Error: "give up", RetriesLeft: &zero})
	require.NoError(t, err)
	require.Equal(t, StateFailed, res.State)
}

func TestReleaseExtendHeartbeatProgress(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	_, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	job := activate(t, b, workerapi.ActivateParams{LeaseDuration: time.Minute})[0]

	until, err := b.client.workerAPI.ExtendJobLease(t.Context(), job.ID, job.Token, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, b.clock.Now().Add(10*time.Second), until, "a lease may be shortened")
	_, err = b.client.workerAPI.ExtendJobLease(t.Context(), job.ID, job.Token+1, time.Minute)
	require.ErrorIs(t, err, ErrLeaseLost)
	require.NoError(t, b.client.workerAPI.HeartbeatJob(t.Context(), job.ID, job.Token))
	require.NoError(t, b.client.workerAPI.ReportJobProgress(t.Context(), job.ID, job.Token, 140, "almost"))
	got, err := b.client.Get(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, 100, got.ProgressPercent)
	require.ErrorIs(t, b.client.workerAPI.HeartbeatJob(t.Context(), job.ID, job.Token+1), ErrLeaseLost)

	require.NoError(t, b.client.workerAPI.ReleaseJob(t.Context(), job.ID, job.Token, "stream closed"))
	again := activate(t, b, workerapi.ActivateParams{})
	require.Len(t, again, 1, "a released job is claimable at once")
	require.Equal(t, 1, again[0].Attempt, "the release gave its attempt back")
}

func TestQueuesCountsPerState(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	for range 2 {
		_, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Queue: "mail"})
		require.NoError(t, err)
	}
	activate(t, b, workerapi.ActivateParams{Queue: "mail"})
	require.NoError(t, b.client.PauseQueue(t.Context(), "idle"))
	require.NoError(t, b.client.SetLimit(t.Context(), Limit{Queue: "mail", MaxRunning: 5}))
	qs, err := b.client.Queues(t.Context())
	require.NoError(t, err)
	require.Len(t, qs, 2)
	require.Equal(t, &QueueInfo{Name: "idle", Paused: true, Counts: map[JobState]int64{}}, qs[0])
	require.Equal(t, &QueueInfo{Name: "mail", MaxRunning: 5,
		Counts: map[JobState]int64{StateQueued: 1, StateRunning: 1}, Computing: 1, AwaitingCompute: 1}, qs[1])
}

// activateEventually claims one job once the maintainer has promoted it.
func activateEventually(t *testing.T, b *testBundle) *JobRow {
	t.Helper()
	var jobs []*JobRow
	require.Eventually(t, func() bool {
		jobs = activate(t, b, workerapi.ActivateParams{})
		return len(jobs) == 1
	}, 10*time.Second, 5*time.Millisecond)
	return jobs[0]
}

// A remote worker that takes a job and vanishes (it never completes, fails or renews) loses it
// when its lease ends: the leader's expired-lease rescue puts the job back in its queue with
// the attempt given back and recorded as lease_expired, and another worker completes it. The
// client is a live node and the worker is no node at all, so only that rescue can do it.
func TestVanishedRemoteWorkersJobComesBackAfterItsLease(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, func(c *Config) { c.RescueInterval = 5 * time.Second; c.NodeTTL = time.Hour })
	res, err := b.client.Enqueue(t.Context(), sendEmail{To: "a"}, nil)
	require.NoError(t, err)
	lost := activate(t, b, workerapi.ActivateParams{Worker: "vanished", LeaseDuration: 30 * time.Second})[0]

	b.clock.Advance(31 * time.Second)
	job := b.waitStepping(t, res.Job.ID, time.Second, StateQueued)
	require.Equal(t, 0, job.Attempt, "the lost attempt is given back")
	require.Empty(t, job.WorkerID)
	attempts, err := b.client.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	require.Equal(t, OutcomeLeaseExpired, attempts[0].Outcome)
	require.Equal(t, "vanished", attempts[0].WorkerID)

	again := activate(t, b, workerapi.ActivateParams{Worker: "survivor"})
	require.Len(t, again, 1)
	require.Equal(t, 1, again[0].Attempt)
	require.ErrorIs(t, b.client.workerAPI.CompleteJob(t.Context(), lost.ID, lost.Token, nil), ErrLeaseLost,
		"the vanished worker's late report changes nothing")
	require.NoError(t, b.client.workerAPI.CompleteJob(t.Context(), again[0].ID, again[0].Token, nil))
	job, err = b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, job.State)
	attempts, err = b.client.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 2)
	require.Equal(t, OutcomeOK, attempts[1].Outcome)
	require.Equal(t, "survivor", attempts[1].WorkerID)
}

// A remote worker's failure without its own backoff is retried after the job's policy for the
// attempt that failed: base, base·m, base·m² from each failure.
func TestFailJobBackoffGrowsWithTheAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	policy := &RetryPolicy{Base: 10 * time.Second, Multiplier: 3, Cap: time.Hour, Jitter: -1}
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{MaxAttempts: 4, RetryPolicy: policy})
	require.NoError(t, err)
	job := activate(t, b, workerapi.ActivateParams{})[0]
	for i, want := range []time.Duration{10 * time.Second, 30 * time.Second, 90 * time.Second} {
		require.Equal(t, i+1, job.Attempt)
		failedAt := b.clock.Now()
		fr, err := b.client.workerAPI.FailJob(t.Context(), job.ID, job.Token, workerapi.FailParams{Error: "smtp down"})
		require.NoError(t, err)
		require.Equal(t, StateScheduled, fr.State)
		require.Equal(t, failedAt.Add(want), fr.RunAt, "retry after failure %d", i+1)
		got, err := b.client.Get(t.Context(), res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, fr.RunAt, got.RunAt, "the stored run_at is the one answered")
		b.clock.Advance(want)
		job = activateEventually(t, b)
	}
	require.Equal(t, 4, job.Attempt)
}

// A transport that knows its worker is gone rescues the worker's attempts at once: each
// counts a rescue, and a job out of rescues fails with worker_lost. Stale tokens are skipped.
func TestRescueJobsCountsARescue(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	first, err := b.client.Enqueue(t.Context(), sendEmail{To: "a"}, &InsertOpts{MaxRescues: 1})
	require.NoError(t, err)
	jobs := activate(t, b, workerapi.ActivateParams{})
	require.Len(t, jobs, 1)
	stale := workerapi.LeaseRef{ID: jobs[0].ID, Token: jobs[0].Token + 1}
	failed, err := b.client.workerAPI.RescueJobs(t.Context(), []workerapi.LeaseRef{{ID: jobs[0].ID, Token: jobs[0].Token}, stale}, "worker gone")
	require.NoError(t, err)
	require.Empty(t, failed)
	job, err := b.client.Get(t.Context(), first.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateQueued, job.State)
	require.Equal(t, 1, job.Rescues)

	jobs = activate(t, b, workerapi.ActivateParams{})
	failed, err = b.client.workerAPI.RescueJobs(t.Context(), []workerapi.LeaseRef{{ID: jobs[0].ID, Token: jobs[0].Token}}, "worker gone again")
	require.NoError(t, err)
	require.Equal(t, []string{first.Job.ID}, failed, "out of rescues")
	job, err = b.client.Get(t.Context(), first.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateFailed, job.State)
}
