//go:build chaos

package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Bounds on a server while its database is away, which a sane system meets and a spinning
// one does not: over a 20 s cut, under 10 log lines a second (200 in all) and under 20 % of
// a core. Waiting with backoff costs next to nothing, and a loop that logs once per change of
// state with a count writes a few lines per outage; before backoff the leader logged ~21,600 lines/s
// and used 79 % of a core. Requests that fail may each log a line, so during the cut clients
// slow down to a batch a second (cutEnqueueEvery): what they log stays well under the bound.
const (
	maxOutageLineRate = 10.0
	maxOutageCPUShare = 0.20
	cutEnqueueEvery   = time.Second
)

// outageJob is the mix of jobs enqueued during the outage scenarios: most run at once, some
// are delayed (the leader must promote them) and some fail their first attempt (retried with
// backoff, so promoted too).
func outageJob() *hopperv1.JobSpec {
	switch n := rand.N(20); {
	case n < 3:
		spec := quickJob()
		spec.Delay = durationpb.New(time.Duration(500+rand.N(2500)) * time.Millisecond)
		return spec
	case n < 6:
		return jobSpec(Args{SleepMS: 20, FailAttempts: 1})
	default:
		return quickJob()
	}
}

// outageRig is a server on PostgreSQL with workers and a steady flow of jobs.
type outageRig struct {
	t           *testing.T
	h           *harness
	srv         *server
	e           *enqueuer
	stopEnqueue func()
	windows     []string // what each fault did to the server
	tail        *logTail
}

func newOutageRig(t *testing.T, db ...string) *outageRig {
	h := newHarness(t)
	r := &outageRig{t: t, h: h, srv: h.startServer("server", db...), e: newEnqueuer(), tail: newLogTail(h.dir)}
	h.startWorker("stream-1", r.srv.url(), workerOpts{mode: "stream"})
	h.startWorker("stream-2", r.srv.url(), workerOpts{mode: "stream"})
	h.startWorker("poll-1", r.srv.url(), workerOpts{mode: "poll"})
	r.stopEnqueue = r.e.start(t.Context(), func() []*api { return []*api{r.srv.api} }, 10, 100*time.Millisecond, outageJob)
	t.Cleanup(r.stopEnqueue)
	return r
}

// rate is accepted completions per second between from and to.
func (r *outageRig) rate(from, to time.Time) float64 {
	r.tail.refresh(r.t)
	return float64(r.tail.completions(from, to)) / to.Sub(from).Seconds()
}

// recovery says how long after t jobs completed and enqueues were accepted again.
func (r *outageRig) recovery(t time.Time) (completed, enqueued time.Duration) {
	var c, e time.Time
	pollUntil(60*time.Second, 100*time.Millisecond, func() bool {
		r.tail.refresh(r.t)
		c = r.tail.firstCompletionAfter(t)
		e = r.e.firstAckAfter(t)
		return !c.IsZero() && !e.IsZero()
	})
	require.False(r.t, c.IsZero(), "jobs complete again within 60 s")
	require.False(r.t, e.IsZero(), "enqueues are accepted again within 60 s")
	return c.Sub(t), e.Sub(t)
}

// finish stops the flow, waits for the queue to drain and verifies every job; it fills in
// the jobs, lost and duplicate figures.
func (r *outageRig) finish(fig *row) {
	t := r.t
	r.stopEnqueue()
	stopped := time.Now()
	acked := r.e.ids()
	drained := r.h.waitDrained(func() *api { return r.srv.api }, len(acked), 120*time.Second)
	r.h.stopWorkers()
	hist, err := r.srv.api.histories(t.Context())
	require.NoError(t, err)
	v := verifyRuns(acked, hist, readWorkerLogs(t, r.h.dir))
	fig.Jobs = fmt.Sprintf("%d (%d handler runs, %d retries)", v.Jobs, v.Runs, v.Retries)
	fig.Lost = fmt.Sprint(v.Lost)
	fig.Dups = v.dupText()
	fig.Outage = strings.Join(r.windows, "; ")
	fig.note("queue drained %s after the last enqueue; enqueue errors: %s", secs(drained.Sub(stopped)), r.e.errorSummary())
	v.require(t)
	require.Zero(t, v.Lost, "acknowledged jobs lost")
}

// Scenario 4: PostgreSQL behind a TCP proxy is slowed down (200 ms), its connections reset,
// and cut off for 20 s, while jobs flow; and a real PostgreSQL server of the test's own is
// restarted. Nothing acknowledged is lost, every duplicate is explained, jobs flow again
// soon after, and while the database is away the server neither floods its log nor burns a
// core.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	t.Run("network", testNetworkOutage)
	t.Run("restart", testPostgresRestart)
}

func testNetworkOutage(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	fig := figures(t)
	schema := pgtest.FreshSchema(t, "hopper_chaos_")
	proxy := newPGProxy(t, hostPort(t, pgtest.URL()))
	r := newOutageRig(t, "--database", proxy.viaProxy(pgtest.URL()), "--schema", schema)

	// The sleeps below are real time: each is a stretch of the processes' wall clock, a fault
	// or the flow between two, whose completion rate, log lines and CPU are measured.
	start := time.Now()
	time.Sleep(5 * time.Second)
	baseline := r.rate(start, time.Now())
	t.Logf("baseline: %.0f completions/s; adding 200 ms of latency", baseline)

	removeLatency := proxy.toxic("latency", "latency", "downstream", map[string]any{"latency": 200, "jitter": 20})
	slowFrom := time.Now()
	time.Sleep(pick(5*time.Second, 15*time.Second))
	removeLatency()
	slow := r.rate(slowFrom, time.Now())
	t.Logf("with latency: %.1f completions/s; resetting connections for 3 s", slow)

	w := r.srv.measure()
	removeResets := proxy.toxic("reset", "reset_peer", "downstream", map[string]any{"timeout": 0})
	time.Sleep(3 * time.Second)
	removeResets()
	resetEnd := time.Now()
	resetRecovery, _ := r.recovery(resetEnd)
	r.windows = append(r.windows, "3 s of connection resets: "+w.end().String())

	t.Logf("resets ended; jobs complete again after %s; cutting PostgreSQL off", secs(resetRecovery))
	time.Sleep(2 * time.Second) // jobs flow a while between the two faults
	cut := pick(20*time.Second, 20*time.Second)
	r.e.slow.Store(int64(cutEnqueueEvery))
	w = r.srv.measure()
	proxy.cut()
	time.Sleep(cut)
	cutWindow := w.end()
	proxy.restore()
	r.e.slow.Store(0)
	restored := time.Now()
	r.windows = append(r.windows, fmt.Sprintf("%s cut: %s", secs(cut), cutWindow))
	completed, enqueued := r.recovery(restored)
	t.Logf("cut over (%s); completions again after %s, enqueues after %s; draining", cutWindow, secs(completed), secs(enqueued))
	time.Sleep(3 * time.Second) // jobs flow a while before the enqueues stop
	r.finish(fig)

	fig.Recovery = fmt.Sprintf("cut restored → completions %s, enqueues %s; resets ended → completions %s",
		secs(completed), secs(enqueued), secs(resetRecovery))
	fig.note("completions/s: %.0f before, %.1f with 200 ms latency", baseline, slow)
	require.Less(t, cutWindow.LineRate(), maxOutageLineRate, "log lines/s during the cut: %s", cutWindow)
	require.Less(t, cutWindow.CPUShare(), maxOutageCPUShare, "CPU during the cut: %s", cutWindow)
}

// pgDown is how long a restarted PostgreSQL stays down: a restart of a real database takes
// seconds (shutdown checkpoint, recovery), and a restart of this small one a tenth of a
// second, too short for what a server does while it waits to show.
const pgDown = 2 * time.Second

func testPostgresRestart(t *testing.T) {
	t.Parallel()
	fig := figures(t)
	pg := startPGCluster(t)
	r := newOutageRig(t, "--database", pg.URL, "--schema", "hopper")
	time.Sleep(5 * time.Second) // real time: jobs flow on the processes' wall clock before the first restart
	var recoveries []string
	var windows []*window
	for _, mode := range pick([]string{"fast"}, []string{"fast", "immediate", "fast"}) {
		w := r.srv.measure()
		began := time.Now()
		pg.restart(mode, pgDown)
		up := time.Now()
		completed, enqueued := r.recovery(up)
		w.end()
		t.Logf("restart -m %s: down %s, completions again %s after it was up; %s", mode, secs(up.Sub(began)), secs(completed), w)
		windows = append(windows, w)
		r.windows = append(r.windows, fmt.Sprintf("restart -m %s (down %s) until jobs flowed: %s", mode, secs(up.Sub(began)), w))
		recoveries = append(recoveries, fmt.Sprintf("-m %s: completions %s, enqueues %s after it was up", mode,
			secs(completed), secs(enqueued)))
		time.Sleep(5 * time.Second) // real time: jobs flow again a while before the next restart
	}
	r.finish(fig)
	fig.Recovery = strings.Join(recoveries, "; ")
	for _, w := range windows {
		require.Less(t, w.Lines, 200, "log lines from a PostgreSQL restart until jobs flowed again: %s", w)
	}
}
