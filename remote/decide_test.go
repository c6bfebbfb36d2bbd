package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// verdict's worker ends an attempt as its Case says; its kind has a partly set backoff.
type verdict struct{ Case string }

func (verdict) Kind() string { return "verdict" }

type verdictWorker struct{ hopper.WorkerDefaults[verdict] }

func (verdictWorker) Work(ctx context.Context, job *hopper.Job[verdict]) error {
	switch job.Args.Case {
	case "error":
		return errors.New("boom")
	case "panic":
		panic("boom")
	case "timeout":
		<-ctx.Done()
		return ctx.Err()
	case "no-retry":
		return hopper.NoRetry(errors.New("bad input"))
	case "retry-after":
		return hopper.RetryAfter(2*time.Hour, errors.New("busy"))
	case "last-attempt":
		return errors.New("boom again")
	case "business":
		return hopper.BusinessError{Code: "card_declined", Message: "insufficient funds"}
	case "business-bad-code":
		return &hopper.BusinessError{Code: "card declined"}
	case "fail-checkpoint":
		return hopper.FailWithCheckpoint(errors.New("part 4 failed"), map[string]int{"done": 3})
	case "business-checkpoint":
		return hopper.FailWithCheckpoint(fmt.Errorf("charge: %w", hopper.BusinessError{Code: "out_of_stock"}), []int{1, 2})
	}
	return hopper.SetResult(ctx, "done")
}

// RetryPolicy sets only the base: the rest comes from the client's Config.RetryPolicy.
func (verdictWorker) RetryPolicy(*hopper.Job[verdict]) *hopper.RetryPolicy {
	return &hopper.RetryPolicy{Base: time.Hour}
}

// ended is what an attempt's end did to its job, in the terms both paths must agree on.
type ended struct {
	State    hopper.JobState
	Outcome  hopper.Outcome
	Error    string
	HasStack bool
	Reason   string
	Delay    time.Duration // from the attempt's end to the job's next run, to the second
	// Code is the attempt's business error code, and the job's; Checkpoint the job's.
	Code, JobCode, Checkpoint string
}

// The engine, and a remote worker reporting to the server, end an attempt the same way: one
// decision for both (a panic with its stack apart, a timeout from the server's JobTimeout, a
// not-retryable error's reason, a partly set per-kind backoff merged over the client's).
func TestRemoteAndInProcessAttemptsEndAlike(t *testing.T) {
	t.Parallel()
	cfg := hopper.Config{
		JobTimeout:  300 * time.Millisecond,
		RetryPolicy: hopper.RetryPolicy{Base: time.Second, Multiplier: 3, Cap: 1000 * time.Hour, Jitter: -1},
	}
	cases := []struct {
		name string
		opts *hopper.InsertOpts
	}{
		{"ok", nil}, {"error", nil}, {"panic", nil}, {"timeout", nil}, {"no-retry", nil},
		{"retry-after", nil}, {"last-attempt", &hopper.InsertOpts{MaxAttempts: 1}},
		{"business", nil}, {"business-bad-code", nil}, {"fail-checkpoint", nil}, {"business-checkpoint", nil},
	}
	run := func(t *testing.T, remoteWorker bool) map[string]ended {
		ws := hopper.NewWorkers()
		hopper.AddWorker[verdict](ws, verdictWorker{})
		ts, client := remote.ServeForTest(t, remote.ServeOptions{Mod: func(c *hopper.Config) {
			c.JobTimeout, c.RetryPolicy = cfg.JobTimeout, cfg.RetryPolicy
			if !remoteWorker {
				c.Workers = ws
			}
		}})
		if remoteWorker {
			w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Concurrency: 4})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer stoptest.Within(t, w, 10*time.Second)
		}
		out := map[string]ended{}
		for _, tc := range cases {
			res, err := client.Enqueue(t.Context(), verdict{Case: tc.name}, tc.opts)
			require.NoError(t, err)
			var job *hopper.JobRow
			require.Eventually(t, func() bool {
				job, err = client.Get(t.Context(), res.Job.ID)
				require.NoError(t, err)
				return job.State != hopper.StateQueued && job.State != hopper.StateRunning
			}, 10*time.Second, 5*time.Millisecond, tc.name)
			attempts, err := client.Attempts(t.Context(), job.ID)
			require.NoError(t, err)
			require.Len(t, attempts, 1, tc.name)
			events, err := client.Events(t.Context(), job.ID)
			require.NoError(t, err)
			a := attempts[0]
			e := ended{State: job.State, Outcome: a.Outcome, Error: a.Error, HasStack: a.Stack != "",
				Reason: events[len(events)-1].Reason, Code: a.ErrorCode, JobCode: job.LastErrorCode,
				Checkpoint: string(job.Checkpoint)}
			if job.State == hopper.StateScheduled {
				e.Delay = job.RunAt.Sub(a.EndedAt).Round(time.Second)
			}
			out[tc.name] = e
		}
		return out
	}
	local := run(t, false)
	remote := run(t, true)
	require.Equal(t, local, remote)
	// And the decision is the documented one.
	require.Equal(t, ended{State: hopper.StateScheduled, Outcome: hopper.OutcomeError, Error: "boom",
		Reason: "retry", Delay: time.Hour}, local["error"], "the kind's base, the client's multiplier")
	require.Equal(t, hopper.OutcomePanic, local["panic"].Outcome)
	require.True(t, local["panic"].HasStack)
	require.Equal(t, "panic: boom", local["panic"].Error)
	require.Equal(t, hopper.OutcomeTimeout, local["timeout"].Outcome)
	require.Equal(t, "job execution timeout after 300ms", local["timeout"].Error,
		"ctx.Err() says nothing more than the timeout (as a TypeScript handler rethrowing its signal's reason)")
	require.Equal(t, ended{State: hopper.StateFailed, Outcome: hopper.OutcomeError,
		Error: "not retryable: bad input", Reason: "not retryable"}, local["no-retry"])
	require.Equal(t, 2*time.Hour, local["retry-after"].Delay)
	require.Equal(t, "no attempts left (1 of 1)", local["last-attempt"].Reason)
	require.Equal(t, ended{State: hopper.StateFailed, Outcome: hopper.OutcomeError,
		Error: "card_declined: insufficient funds", Reason: "business error card_declined",
		Code: "card_declined", JobCode: "card_declined"}, local["business"], "a business error is not retried")
	require.Equal(t, hopper.StateScheduled, local["business-bad-code"].State, "a bad code is a plain error")
	require.Contains(t, local["business-bad-code"].Error, "(not a business error: invalid error_code:")
	require.Empty(t, local["business-bad-code"].Code)
	require.Equal(t, ended{State: hopper.StateScheduled, Outcome: hopper.OutcomeError, Error: "part 4 failed",
		Reason: "retry", Delay: time.Hour, Checkpoint: `{"done":3}`}, local["fail-checkpoint"])
	require.Equal(t, ended{State: hopper.StateFailed, Outcome: hopper.OutcomeError, Error: "charge: out_of_stock",
		Reason: "business error out_of_stock", Code: "out_of_stock", JobCode: "out_of_stock", Checkpoint: `[1,2]`},
		local["business-checkpoint"], "the failed job keeps the checkpoint")
}

// A failed attempt's checkpoint is what the next attempt receives as Job.Checkpoint, in
// process and from a remote worker alike; the attempt after a success-less retry replaces it.
func TestFailWithCheckpointReachesTheNextAttempt(t *testing.T) {
	t.Parallel()
	for _, remoteWorker := range []bool{false, true} {
		t.Run(fmt.Sprintf("remote=%v", remoteWorker), func(t *testing.T) {
			t.Parallel()
			type parts struct{ Done int }
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				var got parts
				if len(job.Checkpoint) > 0 {
					if err := json.Unmarshal(job.Checkpoint, &got); err != nil {
						return hopper.NoRetry(err)
					}
				}
				if job.Attempt < 3 {
					return hopper.FailWithCheckpoint(hopper.RetryAfter(0, errors.New("part failed")), parts{got.Done + 3})
				}
				return hopper.SetResult(ctx, got)
			})
			ts, client := remote.ServeForTest(t, remote.ServeOptions{Mod: func(c *hopper.Config) {
				if !remoteWorker {
					c.Workers = ws
				}
			}})
			if remoteWorker {
				w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws})
				require.NoError(t, err)
				require.NoError(t, w.Start(context.Background()))
				defer stoptest.Within(t, w, 10*time.Second)
			}
			res, err := client.Enqueue(t.Context(), resize{}, &hopper.InsertOpts{MaxAttempts: 3})
			require.NoError(t, err)
			var job *hopper.JobRow
			require.Eventually(t, func() bool {
				job, err = client.Get(t.Context(), res.Job.ID)
				require.NoError(t, err)
				return job.State == hopper.StateCompleted || job.State == hopper.StateFailed
			}, 10*time.Second, 5*time.Millisecond)
			require.Equal(t, hopper.StateCompleted, job.State, job.LastError)
			require.JSONEq(t, `{"Done":6}`, string(job.Result), "each attempt got the previous one's checkpoint")
		})
	}
}

// A handler that shortens its lease with ExtendLease keeps the job: the renewals follow the
// shortest lease held, in process (the engine's keeper) and in a remote worker (its own, in
// stream and poll mode alike). The client, the server and the worker run on one fake clock,
// which the test moves a renewal's cadence at a time, waiting for each renewal to land,
// instead of sleeping through the leases.
func TestAShortenedLeaseIsKept(t *testing.T) {
	t.Parallel()
	const shortened = 1200 * time.Millisecond
	for _, name := range []string{"in process", "stream", "poll"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			started, finish := make(chan struct{}), make(chan struct{})
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				if err := hopper.ExtendLease(ctx, shortened); err != nil {
					return err
				}
				close(started)
				select {
				case <-finish:
					return nil
				case <-ctx.Done():
					return context.Cause(ctx)
				}
			})
			var client *hopper.Client
			if name == "in process" {
				_, client = remote.ServeForTest(t, remote.ServeOptions{Clock: clk, Mod: func(c *hopper.Config) {
					c.Workers, c.LeaseDuration = ws, 30*time.Second
				}})
			} else {
				var url string
				url, client = serveOn(t, clk)
				mode := remote.Stream
				if name == "poll" {
					mode = remote.Poll
				}
				w, err := remote.NewOnClock(remote.Config{URL: url, Workers: ws, Mode: mode, PollWait: time.Second,
					LeaseDuration: 30 * time.Second}, clk)
				require.NoError(t, err)
				require.NoError(t, w.Start(context.Background()))
				defer stoptest.Within(t, w, 10*time.Second)
			}
			res, err := client.Enqueue(t.Context(), resize{}, nil)
			require.NoError(t, err)
			<-started
			for range 8 { // 3.2 s, two and a half shortened leases, a renewal (a third of a lease) at a time
				clk.Advance(shortened / 3)
				require.Eventually(t, func() bool {
					job, err := client.Get(t.Context(), res.Job.ID)
					require.NoError(t, err)
					return job.LeaseExpiresAt.Sub(clk.Now()) > shortened*2/3
				}, 10*time.Second, time.Millisecond, "the lease was not renewed in time")
			}
			job, err := client.Get(t.Context(), res.Job.ID)
			require.NoError(t, err)
			require.True(t, job.LeaseExpiresAt.After(clk.Now()), "the lease, expiring %s, lapsed", job.LeaseExpiresAt)
			require.WithinDuration(t, clk.Now(), job.LeaseExpiresAt, shortened, "renewed for 1.2 s")
			close(finish)
			job = waitFor(t, client, res.Job.ID, hopper.StateCompleted)
			require.Equal(t, 1, job.Attempt)
		})
	}
}

// declined's worker declines the card on the job's first Declines attempts.
type declined struct{ Declines int }

func (declined) Kind() string { return "declined" }

type declinedWorker struct {
	hopper.WorkerDefaults[declined]
	policy *hopper.RetryPolicy
}

func (declinedWorker) Work(ctx context.Context, job *hopper.Job[declined]) error {
	if job.Attempt <= job.Args.Declines {
		return hopper.BusinessError{Code: "card_declined", Message: "insufficient funds"}
	}
	return nil
}

func (w declinedWorker) RetryPolicy(*hopper.Job[declined]) *hopper.RetryPolicy { return w.policy }

// A remote worker's business error is retried when the kind's policy, sent along on Fail, or
// the job's own, enqueued through the API, says so: with the usual backoff, each failed
// attempt keeping its code.
func TestRemoteBusinessErrorRetriedByPolicy(t *testing.T) {
	t.Parallel()
	retry := &hopper.RetryPolicy{Base: 10 * time.Second, Multiplier: 1, Jitter: -1, RetryBusinessErrors: true}
	for _, level := range []string{"kind", "job"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			url, client := serveOn(t, clk)
			w := declinedWorker{}
			opts := &hopper.InsertOpts{MaxAttempts: 3}
			if level == "kind" {
				w.policy = retry
			} else {
				opts.RetryPolicy = retry
			}
			ws := hopper.NewWorkers()
			hopper.AddWorker[declined](ws, w)
			rw, err := remote.NewOnClock(remote.Config{URL: url, Workers: ws}, clk)
			require.NoError(t, err)
			require.NoError(t, rw.Start(context.Background()))
			defer stoptest.Within(t, rw, 10*time.Second)
			api, err := hopperclient.New(hopperclient.Config{URL: url})
			require.NoError(t, err)

			res, err := api.Enqueue(t.Context(), declined{Declines: 2}, opts)
			require.NoError(t, err)
			for n := 1; n <= 2; n++ {
				var job *hopper.JobRow
				require.Eventually(t, func() bool {
					job, err = client.Get(t.Context(), res.Job.ID)
					require.NoError(t, err)
					return job.Attempt == n && job.State == hopper.StateScheduled
				}, 10*time.Second, 5*time.Millisecond, "attempt %d was not retried", n)
				require.Equal(t, "card_declined", job.LastErrorCode)
				require.Equal(t, clk.Now().Add(10*time.Second), job.RunAt, "the usual backoff")
				clk.Advance(10 * time.Second)
			}
			job := waitFor(t, client, res.Job.ID, hopper.StateCompleted)
			require.Equal(t, 3, job.Attempt)
			attempts, err := client.Attempts(t.Context(), job.ID)
			require.NoError(t, err)
			require.Len(t, attempts, 3)
			for i, code := range []string{"card_declined", "card_declined", ""} {
				require.Equal(t, code, attempts[i].ErrorCode, "attempt %d", i+1)
			}
		})
	}
}
