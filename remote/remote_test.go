package remote_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type resize struct {
	Width int `json:"width"`
	Fail  string
}

func (resize) Kind() string { return "resize" }

// serve starts a real server over a fresh SQLite store; the client enqueues and reads.
func serve(t *testing.T) (url string, client *hopper.Client) { return serveOn(t, nil) }

// serveOn is serve with the store, the client and the server on clk (nil: the wall clock).
func serveOn(t *testing.T, clk *clock.Fake) (url string, client *hopper.Client) {
	ts, client := remote.ServeForTest(t, remote.ServeOptions{Clock: clk})
	return ts.URL, client
}

func waitFor(t *testing.T, c *hopper.Client, id string, state hopper.JobState) *hopper.JobRow {
	t.Helper()
	var job *hopper.JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = c.Get(context.Background(), id)
		require.NoError(t, err)
		return job.State == state
	}, 10*time.Second, 5*time.Millisecond, "job %s never reached %s", id, state)
	return job
}

func TestRemoteWorkerRunsTheSameHandlers(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			url, client := serve(t)
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				switch job.Args.Fail {
				case "no-retry":
					return hopper.NoRetry(errors.New("bad image"))
				case "later":
					return hopper.RetryAfter(time.Hour, errors.New("busy"))
				case "panic":
					panic("boom")
				}
				if err := hopper.ReportProgress(ctx, 50, "halfway"); err != nil {
					return err
				}
				if err := hopper.Heartbeat(ctx); err != nil {
					return err
				}
				if err := hopper.ExtendLease(ctx, time.Minute); err != nil {
					return err
				}
				return hopper.SetResult(ctx, map[string]int{"width": job.Args.Width * 2})
			})
			w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, Concurrency: 3, Name: "remote-" + name,
				PollWait: time.Second})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer stoptest.Within(t, w, 10*time.Second)

			ok, err := client.Enqueue(t.Context(), resize{Width: 21}, nil)
			require.NoError(t, err)
			job := waitFor(t, client, ok.Job.ID, hopper.StateCompleted)
			require.JSONEq(t, `{"width":42}`, string(job.Result))
			require.Equal(t, 50, job.ProgressPercent)
			attempts, err := client.Attempts(t.Context(), ok.Job.ID)
			require.NoError(t, err)
			require.Equal(t, "remote-"+name, attempts[0].WorkerID)

			bad, err := client.Enqueue(t.Context(), resize{Fail: "no-retry"}, nil)
			require.NoError(t, err)
			job = waitFor(t, client, bad.Job.ID, hopper.StateFailed)
			require.Contains(t, job.LastError, "bad image")

			later, err := client.Enqueue(t.Context(), resize{Fail: "later"}, nil)
			require.NoError(t, err)
			job = waitFor(t, client, later.Job.ID, hopper.StateScheduled)
			require.WithinDuration(t, time.Now().Add(time.Hour), job.RunAt, time.Minute, "RetryAfter's delay")

			pan, err := client.Enqueue(t.Context(), resize{Fail: "panic"}, &hopper.InsertOpts{MaxAttempts: 1})
			require.NoError(t, err)
			job = waitFor(t, client, pan.Job.ID, hopper.StateFailed)
			require.Equal(t, "panic: boom", job.LastError, "the error text, without the stack")
			attempts, err = client.Attempts(t.Context(), pan.Job.ID)
			require.NoError(t, err)
			require.Equal(t, hopper.OutcomePanic, attempts[0].Outcome, "a panic, as in process")
			require.Contains(t, attempts[0].Stack, "remote_test.go", "the stack is kept apart")
		})
	}
}

func TestRemoteWorkerStopsGracefullyAndReleasesOnHardStop(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			url, client := serve(t)
			started := make(chan string, 10)
			var canceled atomic.Int32
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				started <- job.ID
				if job.Args.Width == 1 {
					return nil // quick
				}
				<-ctx.Done() // slow: runs until the hard stop
				if errors.Is(context.Cause(ctx), hopper.ErrShutdown) {
					canceled.Add(1)
				}
				return ctx.Err()
			})
			w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, Concurrency: 2, PollWait: time.Second,
				LeaseDuration: time.Hour})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))

			slow, err := client.Enqueue(t.Context(), resize{Width: 2}, nil)
			require.NoError(t, err)
			require.Equal(t, slow.Job.ID, <-started)

			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			require.NoError(t, w.Stop(ctx))
			require.Equal(t, int32(1), canceled.Load(), "the handler saw ErrShutdown")

			// The lease runs for an hour, yet the job is queued again at once, its attempt given back.
			job := waitFor(t, client, slow.Job.ID, hopper.StateQueued)
			require.Equal(t, 0, job.Attempt)
			require.Equal(t, 0, job.Rescues, "a worker that stops is not a lost worker")
			attempts, err := client.Attempts(t.Context(), slow.Job.ID)
			require.NoError(t, err)
			require.Len(t, attempts, 1)
			require.Equal(t, hopper.OutcomeCanceled, attempts[0].Outcome)
		})
	}
}

func TestRemoteWorkerRefusesBadConfig(t *testing.T) {
	ws := hopper.NewWorkers()
	_, err := remote.New(remote.Config{URL: "http://x", Workers: ws})
	require.Error(t, err, "no workers")
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error { return nil })
	_, err = remote.New(remote.Config{Workers: ws})
	require.Error(t, err, "no URL")
	_, err = remote.New(remote.Config{URL: "http://x", Workers: ws, Concurrency: 5000})
	require.Error(t, err)
	_, err = remote.New(remote.Config{URL: "http://x", Workers: ws, LeaseDuration: 500 * time.Millisecond})
	require.ErrorContains(t, err, "LeaseDuration", "a lease the server refuses")
	_, err = remote.New(remote.Config{URL: "http://x", Workers: ws, Queues: []string{"a", "bad queue"}})
	var ve *hopper.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "queues[1]", ve.Field)
	_, err = remote.New(remote.Config{URL: "http://x", Workers: ws, Queues: make([]string, workerapi.MaxActivateQueues+1)})
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "queues", ve.Field)
}

type chapter struct {
	N int `json:"n"`
}

func (chapter) Kind() string { return "chapter" }

func TestRemoteWorkerSnoozesAndSuspendsWithACheckpoint(t *testing.T) {
	url, client := serve(t)
	checkpoints := make(chan string, 4)
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[chapter]) error {
		checkpoints <- string(job.Checkpoint)
		switch job.Args.N {
		case 1:
			return hopper.Snooze(time.Hour)
		case 2:
			if job.Checkpoint == nil {
				return hopper.Suspend(map[string]int{"page": 3}, hopper.SuspendOpts{Until: time.Now().Add(50 * time.Millisecond)})
			}
		case 3:
			return hopper.Suspend(map[string]int{"page": 9}, hopper.SuspendOpts{})
		}
		return nil
	})
	w, err := remote.New(remote.Config{URL: url, Workers: ws})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)

	snoozed, err := client.Enqueue(t.Context(), chapter{N: 1}, nil)
	require.NoError(t, err)
	job := waitFor(t, client, snoozed.Job.ID, hopper.StateScheduled)
	require.Equal(t, 0, job.Attempt)
	require.WithinDuration(t, time.Now().Add(time.Hour), job.RunAt, time.Minute)
	require.Empty(t, <-checkpoints)

	parked, err := client.Enqueue(t.Context(), chapter{N: 2}, nil)
	require.NoError(t, err)
	require.Empty(t, <-checkpoints)
	require.JSONEq(t, `{"page":3}`, <-checkpoints, "the next attempt got the checkpoint")
	waitFor(t, client, parked.Job.ID, hopper.StateCompleted)

	waiting, err := client.Enqueue(t.Context(), chapter{N: 3}, nil)
	require.NoError(t, err)
	job = waitFor(t, client, waiting.Job.ID, hopper.StateSuspended)
	require.JSONEq(t, `{"page":9}`, string(job.Checkpoint))
}

type block struct{}

func (block) Kind() string { return "block" }

// An operator cancels a job a streaming worker runs: the server tells the stream, the
// handler's context ends with ErrLeaseLost, and the credit comes back for the next job.
func TestCancelReachesAStreamingWorker(t *testing.T) {
	url, client := serve(t)
	causes := make(chan error, 10)
	ids := make(chan string, 10)
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[block]) error {
		ids <- job.ID
		select {
		case <-ctx.Done():
			causes <- context.Cause(ctx)
			return ctx.Err()
		case <-time.After(5 * time.Second):
			return nil
		}
	})
	w, err := remote.New(remote.Config{URL: url, Workers: ws, Concurrency: 1, LeaseDuration: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)

	first, err := client.Enqueue(t.Context(), block{}, nil)
	require.NoError(t, err)
	second, err := client.Enqueue(t.Context(), block{}, nil)
	require.NoError(t, err)
	require.Equal(t, first.Job.ID, <-ids)
	_, err = client.Cancel(t.Context(), first.Job.ID)
	require.NoError(t, err)
	require.ErrorIs(t, <-causes, hopper.ErrLeaseLost)
	require.Equal(t, second.Job.ID, <-ids, "the credit came back")
	_, err = client.Cancel(t.Context(), second.Job.ID)
	require.NoError(t, err)
	require.ErrorIs(t, <-causes, hopper.ErrLeaseLost)
}

// Stop lets a handler that runs when it is called finish, and returns once its outcome is
// reported: the handler runs on until Stop has begun, and returns with its context alive.
func TestRemoteWorkerStopLetsRunningJobsFinish(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			url, client := serve(t)
			started, finish := make(chan struct{}, 1), make(chan struct{})
			release := sync.OnceFunc(func() { close(finish) })
			t.Cleanup(release) // a failing test lets the handler, and so Stop, end
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[block]) error {
				started <- struct{}{}
				<-finish
				return ctx.Err()
			})
			w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, PollWait: time.Second})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			res, err := client.Enqueue(t.Context(), block{}, nil)
			require.NoError(t, err)
			<-started
			stopped := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				stopped <- w.Stop(ctx)
			}()
			require.Eventually(t, w.Stopping, 10*time.Second, time.Millisecond, "Stop begins")
			select {
			case err := <-stopped:
				t.Fatalf("Stop returned (%v) while a handler ran", err)
			default:
			}
			release()
			require.NoError(t, <-stopped)
			job, err := client.Get(t.Context(), res.Job.ID)
			require.NoError(t, err)
			require.Equal(t, hopper.StateCompleted, job.State, "Stop waited for the handler and its report")
		})
	}
}

// A handler's error text with bytes the API refuses (not UTF-8, NUL) is cleaned before the
// worker reports it: the job fails with U+FFFD in their place, instead of the report failing
// and the job waiting, running, for its lease to expire.
func TestRemoteWorkerReportsAnErrorThatIsNotUTF8(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			url, client := serve(t)
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				if err := hopper.ReportProgress(ctx, 10, "at \xff"); err != nil {
					return err
				}
				return hopper.NoRetry(errors.New("decoder said \xff\x00"))
			})
			w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, Name: "odd-" + name, PollWait: time.Second})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer func() { require.NoError(t, w.Stop(context.Background())) }()

			res, err := client.Enqueue(t.Context(), resize{}, &hopper.InsertOpts{MaxAttempts: 1})
			require.NoError(t, err)
			job := waitFor(t, client, res.Job.ID, hopper.StateFailed)
			require.Contains(t, job.LastError, "decoder said \uFFFD\uFFFD")
			require.Equal(t, "at \uFFFD", job.ProgressMessage)
		})
	}
}

// Text the worker reports is cut to the server's limits instead of being refused: a huge
// error fails the job with its beginning, a long progress message is kept as far as it fits,
// and a job released on shutdown with a huge error as its reason goes back to its queue at
// once (refused, the release would become a failure of the attempt, or in Stream mode wait for
// a rescue).
func TestRemoteWorkerFitsItsTextToTheServersLimits(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("ü", hopper.MaxErrorBytes) // twice the limit, in two-byte characters
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, client := serve(t)
			started := make(chan struct{}, 1)
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				if job.Args.Fail == "at shutdown" {
					started <- struct{}{}
					<-ctx.Done()
					return errors.New(huge)
				}
				if err := hopper.ReportProgress(ctx, 10, strings.Repeat("é", hopper.MaxProgressMessageBytes)); err != nil {
					return err
				}
				return errors.New(huge)
			})
			// Outcomes go in Report batches: the release is the last report the worker sends.
			released := &answered{RoundTripper: http.DefaultTransport, procedure: "/Report", done: make(chan struct{}, 1)}
			w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, PollWait: time.Second, LeaseDuration: time.Hour,
				HTTPClient: &http.Client{Transport: released}})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			stopped := false
			defer func() {
				if !stopped {
					stoptest.Within(t, w, 10*time.Second)
				}
			}()

			res, err := client.Enqueue(t.Context(), resize{}, &hopper.InsertOpts{MaxAttempts: 1})
			require.NoError(t, err)
			job := waitFor(t, client, res.Job.ID, hopper.StateFailed)
			requireCut(t, huge, job.LastError, hopper.MaxErrorBytes)
			requireCut(t, strings.Repeat("é", hopper.MaxProgressMessageBytes), job.ProgressMessage, hopper.MaxProgressMessageBytes)

			res, err = client.Enqueue(t.Context(), resize{Fail: "at shutdown"}, nil)
			require.NoError(t, err)
			<-started
			select { // the first job's failure was answered: wait for the release's answer
			case <-released.done:
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			stopped = true
			require.NoError(t, w.Stop(ctx))
			job = waitFor(t, client, res.Job.ID, hopper.StateQueued)
			require.Equal(t, 0, job.Attempt, "released, its attempt given back")
			require.Equal(t, 0, job.Rescues, "not left for a rescue")
			released.wait(t) // Stop may have left the release on its way (its 500 ms were up)
		})
	}
}

// requireCut requires got to be the beginning of want, cut at a character boundary to at most
// limit bytes and marked with "…".
func requireCut(t *testing.T, want, got string, limit int) {
	t.Helper()
	require.LessOrEqual(t, len(got), limit)
	require.True(t, utf8.ValidString(got), "cut at a character boundary")
	require.True(t, strings.HasSuffix(got, "…"), "marked as cut: …%s", got[max(len(got)-20, 0):])
	require.True(t, strings.HasPrefix(want, strings.TrimSuffix(got, "…")), "the beginning of the text")
	require.Greater(t, len(got), limit-8, "as much as fits")
}

// stopRecorder is a testing.TB that keeps stoptest.Within's complaints instead of failing the
// test with them.
type stopRecorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *stopRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *stopRecorder) Helper() {}

// A handler that ignores its context does not hold Stop: once Stop's context has ended and
// the handlers had their moment (500 ms), Stop returns and leaves it behind, in Stream mode
// as in Poll mode. stoptest.Within says Stop needed its deadline (a handler had to be
// canceled), not that it hung.
func TestStopLeavesHandlersThatIgnoreTheirContextBehind(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url, client := serve(t)
			started, release := make(chan struct{}, 1), make(chan struct{})
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				started <- struct{}{}
				<-release // ignores ctx
				return nil
			})
			completed := &answered{RoundTripper: http.DefaultTransport, procedure: "/Report", done: make(chan struct{}, 1)}
			w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, Concurrency: 1, PollWait: time.Second,
				LeaseDuration: time.Hour, HTTPClient: &http.Client{Transport: completed}})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			res, err := client.Enqueue(t.Context(), resize{}, nil)
			require.NoError(t, err)
			<-started

			rec := &stopRecorder{TB: t}
			stoptest.Within(rec, w, 4*time.Second)
			close(release)
			require.Len(t, rec.errs, 1, "%q", rec.errs)
			require.Contains(t, rec.errs[0], "did not finish within", "Stop returned after its deadline")
			// The handler left behind still reports its success (the job is still its own).
			// The test waits for the answer, so that its server is still there to give it.
			completed.wait(t)
			waitFor(t, client, res.Job.ID, hopper.StateCompleted)
		})
	}
}

// answered is an http.RoundTripper that says on done when the worker has read the server's
// answer to a call of procedure (a path suffix).
type answered struct {
	http.RoundTripper
	procedure string
	done      chan struct{}
}

func (a *answered) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.RoundTripper.RoundTrip(r)
	if err == nil && strings.HasSuffix(r.URL.Path, a.procedure) {
		resp.Body = &closeSignal{ReadCloser: resp.Body, done: a.done}
	}
	return resp, err
}

// wait waits until an answer was read.
func (a *answered) wait(t *testing.T) {
	t.Helper()
	select {
	case <-a.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("no answer to %s was read within 10s", a.procedure)
	}
}

type closeSignal struct {
	io.ReadCloser
	done chan struct{}
}

func (c *closeSignal) Close() error {
	err := c.ReadCloser.Close()
	select {
	case c.done <- struct{}{}:
	default:
	}
	return err
}

// A worker whose key the server refuses stops taking jobs at once, in both modes, and says
// why in one log line instead of retrying for ever (Err reports it).
func TestRemoteWorkerStopsWhenItsKeyIsRefused(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts, _ := remote.ServeForTest(t, remote.ServeOptions{Keys: true})
			var logs lockedLog
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error { return nil })
			w, err := remote.New(remote.Config{URL: ts.URL, APIKey: "hop_notakey", Workers: ws, Mode: mode,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer stoptest.Within(t, w, 10*time.Second)
			require.Eventually(t, func() bool { return w.Err() != nil }, 10*time.Second, 5*time.Millisecond)
			require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(w.Err()))
			require.Equal(t, 1, strings.Count(logs.String(), "refused the worker's API key"), logs.String())
		})
	}
}

// lockedLog is a log destination several goroutines write to.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
