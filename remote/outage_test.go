package remote_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// logBuffer collects a worker's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A stream that worked resets the reconnect backoff: a worker that lives through five dropped
// connections (a server restarting, a proxy resetting) reconnects each time after the
// shortest delay, not after one that doubles with every drop. Each drop is logged as the
// connection lost (UNAVAILABLE), and each new stream as the recovery.
func TestStreamReconnectBackoffResetsAfterAWorkingStream(t *testing.T) {
	t.Parallel()
	ts, client := remote.ServeForTest(t, remote.ServeOptions{})

	ran := make(chan string, 10)
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[block]) error {
		ran <- job.ID
		return nil
	})
	logs := &logBuffer{}
	w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Concurrency: 1, Name: "survivor",
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer func() { require.NoError(t, w.Stop(context.Background())) }()

	const drops = 5
	for range drops {
		res, err := client.Enqueue(t.Context(), block{}, nil)
		require.NoError(t, err)
		require.Equal(t, res.Job.ID, <-ran, "the stream works")
		waitFor(t, client, res.Job.ID, hopper.StateCompleted)
		ts.CloseClientConnections() // the stream drops
	}
	res, err := client.Enqueue(t.Context(), block{}, nil)
	require.NoError(t, err)
	require.Equal(t, res.Job.ID, <-ran, "back after the last drop")

	lost := regexp.MustCompile(`msg="job stream failed; retrying with backoff".* retry_in=(\S+)`).FindAllStringSubmatch(logs.String(), -1)
	require.Len(t, lost, drops, "one line per drop:\n%s", logs.String())
	for _, m := range lost {
		d, err := time.ParseDuration(m[1])
		require.NoError(t, err)
		require.LessOrEqual(t, d, 120*time.Millisecond, "each reconnect waits the shortest backoff (100 ms ± 20 %%)")
		require.Contains(t, m[0], "unavailable", "a dropped connection is UNAVAILABLE: %s", m[0])
	}
	require.Equal(t, drops, strings.Count(logs.String(), `msg="job stream recovered"`), logs.String())
}

// A server that crashes mid-stream (the response ends inside a message) is, to the worker,
// an unavailable server, not an internal error.
func TestAServerCrashMidStreamIsUnavailable(t *testing.T) {
	t.Parallel()
	crash := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/connect+proto")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte{0, 0, 0}) //nolint:errcheck // half of an envelope's 5-byte prefix
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close() // the process dies
		}
	})
	ts := httptest.NewServer(withInfo(crash))
	defer ts.Close()
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[block]) error { return nil })
	logs := &logBuffer{}
	w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer func() { require.NoError(t, w.Stop(context.Background())) }()
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "job stream failed") },
		10*time.Second, 5*time.Millisecond)
	line := logs.String()
	require.Contains(t, line, `err="unavailable: connection to the server lost: internal: protocol error: incomplete envelope`)
}

// A stream that drops under a running job does not stop it: the job stays the worker's (it
// renews the lease itself), the handler runs on, and its success is reported over a new
// connection and kept. The job runs once, never twice at once, with no rescue. The server and
// the worker run on one fake clock, moved past the lease a renewal's cadence at a time.
func TestADroppedStreamDoesNotStopItsJobs(t *testing.T) {
	t.Parallel()
	const lease = 3 * time.Second
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	ts, client := remote.ServeForTest(t, remote.ServeOptions{Clock: clk})

	var runs, running, peak atomic.Int32
	started, finish := make(chan struct{}, 10), make(chan struct{})
	causes := make(chan error, 10)
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[block]) error {
		runs.Add(1)
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		started <- struct{}{}
		<-finish
		causes <- context.Cause(ctx)
		return hopper.SetResult(ctx, "done")
	})
	w, err := remote.NewOnClock(remote.Config{URL: ts.URL, Workers: ws, Concurrency: 1, LeaseDuration: lease}, clk)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)

	res, err := client.Enqueue(t.Context(), block{}, nil)
	require.NoError(t, err)
	<-started
	ts.CloseClientConnections() // the stream drops
	// Longer than the lease: the worker renews it over new connections, a renewal (a third
	// of the lease) at each step.
	for range 5 {
		job, err := client.Get(t.Context(), res.Job.ID)
		require.NoError(t, err)
		was := job.LeaseExpiresAt
		clk.Advance(lease / 3)
		require.Eventually(t, func() bool {
			job, err := client.Get(t.Context(), res.Job.ID)
			require.NoError(t, err)
			return job.State == hopper.StateRunning && job.LeaseExpiresAt.After(was)
		}, 10*time.Second, time.Millisecond, "the worker renews the lease")
	}
	close(finish)
	require.NoError(t, <-causes, "the handler was not stopped")
	job := waitFor(t, client, res.Job.ID, hopper.StateCompleted)
	require.JSONEq(t, `"done"`, string(job.Result))
	require.Equal(t, 0, job.Rescues)
	attempts, err := client.Attempts(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 1, "one attempt, not a release and a second run")
	require.Equal(t, hopper.OutcomeOK, attempts[0].Outcome)
	require.Equal(t, int32(1), runs.Load(), "run once")
	require.Equal(t, int32(1), peak.Load(), "never two at once")
}

// A stream that the server accepts and drops soon after, without a job, has not worked: the
// worker keeps backing off and logs the outage once, not a recovery and a failure each time.
func TestAStreamDroppedSoonAfterItOpensIsNoRecovery(t *testing.T) {
	t.Parallel()
	var opened atomic.Int32
	drop := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		opened.Add(1)
		w.Header().Set("Content-Type", "application/connect+proto")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush() // accepted
		select {
		// Real time: the stream is held open by a real HTTP handler, then dropped, as a proxy would.
		case <-time.After(1500 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close() // dropped
		}
	})
	ts := httptest.NewServer(withInfo(drop))
	defer ts.Close()
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[block]) error { return nil })
	logs := &logBuffer{}
	w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	require.Eventually(t, func() bool { return opened.Load() >= 3 }, 10*time.Second, 5*time.Millisecond,
		"the worker reopens its stream")
	stoptest.Within(t, w, 10*time.Second)
	require.Equal(t, 1, strings.Count(logs.String(), `msg="job stream failed; retrying with backoff"`), logs.String())
	require.NotContains(t, logs.String(), "recovered", "a stream that delivered nothing and lasted 1.5 s is no recovery")
}

// blipStore fails the next failClaims claims with ErrUnavailable, and says so on failed.
type blipStore struct {
	hopper.Store
	failClaims atomic.Int32
	failed     chan struct{}
}

func (b *blipStore) JobClaim(ctx context.Context, p *store.ClaimParams) (jobs []*hopper.JobRow, hold store.Hold, err error) {
	if b.failClaims.Add(-1) >= 0 {
		select {
		case b.failed <- struct{}{}:
		default:
		}
		return nil, store.Hold{}, store.ErrUnavailable
	}
	return b.Store.JobClaim(ctx, p)
}

// One failed claim (the database away a moment) while a streamed job runs: the job runs on
// and completes once, as it would in process, and the stream takes the next job after a short
// backoff. (The stream used to end on it, and the worker to stop every handler it ran, so that
// each of their jobs ran again.)
func TestAFailedClaimAbortsNoStreamedJob(t *testing.T) {
	t.Parallel()
	var bs *blipStore
	ts, client := remote.ServeForTest(t, remote.ServeOptions{Wrap: func(st hopper.Store) hopper.Store {
		bs = &blipStore{Store: st, failed: make(chan struct{}, 1)}
		return bs
	}})

	var aborted atomic.Int32
	started, release := make(chan string, 4), make(chan struct{})
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
		started <- job.ID
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			aborted.Add(1)
			return ctx.Err()
		}
	})
	w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Concurrency: 2})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)

	first, err := client.Enqueue(t.Context(), resize{Width: 1}, nil)
	require.NoError(t, err)
	require.Equal(t, first.Job.ID, <-started)
	bs.failClaims.Store(1) // the stream's next claim (it has credit left) fails
	<-bs.failed
	second, err := client.Enqueue(t.Context(), resize{Width: 2}, nil)
	require.NoError(t, err)
	require.Equal(t, second.Job.ID, <-started, "the stream claims again")
	close(release)
	for _, id := range []string{first.Job.ID, second.Job.ID} {
		waitFor(t, client, id, hopper.StateCompleted)
		attempts, err := client.Attempts(t.Context(), id)
		require.NoError(t, err)
		require.Len(t, attempts, 1, "run once")
	}
	require.Zero(t, aborted.Load(), "no handler was stopped")
}

// withInfo puts a ServerService that serves test limits in front of h: a worker takes no job
// before its server has said its limits.
func withInfo(h http.Handler) http.Handler {
	rpc := connect.NewServer()
	hopperv1connect.RegisterServerServiceHandler(rpc, &smallLimits{})
	mux := http.NewServeMux()
	connecthttp.Mount(mux, rpc)
	mux.Handle("/", h)
	return mux
}
