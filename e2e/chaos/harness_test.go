//go:build chaos

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/stretchr/testify/require"
)

// harness is one scenario's set of processes, in its own directory: servers (hopper serve)
// and chaos workers, each with a log file there.
type harness struct {
	t   *testing.T
	dir string

	mu      sync.Mutex
	servers []*server
	workers []*worker
	seq     int
}

func newHarness(t *testing.T) *harness {
	dir := t.TempDir()
	if *keep {
		var err error
		dir, err = os.MkdirTemp("", "hopper-chaos-"+strings.ReplaceAll(t.Name(), "/", "-")+"-")
		require.NoError(t, err)
		t.Logf("logs kept in %s", dir)
	}
	t.Cleanup(func() { logTailsOnFailure(t, dir, "*.log", "*.err") })
	return &harness{t: t, dir: dir}
}

// tailLines is how much of each log a failed scenario prints.
const tailLines = 40

// logTailsOnFailure prints the last lines of the logs in dir matching patterns when t has
// failed, so that a failure in CI, whose directories are gone afterwards, says what the
// processes were doing. It runs as a cleanup, after the processes were stopped.
func logTailsOnFailure(t *testing.T, dir string, patterns ...string) {
	if !t.Failed() {
		return
	}
	for _, pattern := range patterns {
		paths, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, path := range paths {
			b, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			lines = lines[max(0, len(lines)-tailLines):]
			t.Logf("last %d lines of %s:\n%s", len(lines), filepath.Base(path), strings.Join(lines, "\n"))
		}
	}
}

// server is `hopper serve` on a fixed loopback address (chosen at its first start, kept
// across restarts so that workers find it again).
type server struct {
	*proc
	addr string
	api  *api
}

// pgNodeConns is the pool size (--conns) of each node of the PostgreSQL scenarios: three
// scenarios of three nodes run at once, and at serve's default of 16 (plus each node's
// listener) they outgrew the default max_connections of 100 ("too many clients already").
const pgNodeConns = "6"

// startServer starts `hopper serve --no-echo` with the database flags db (--database X
// [--schema S]) on a free port and waits until it answers.
func (h *harness) startServer(name string, db ...string) *server {
	h.t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--no-echo"}, db...)
	s := &server{proc: newProc(h.t, name, bins.hopper, filepath.Join(h.dir, name+".log"), args...)}
	mark := s.logSize()
	s.start()
	s.addr = s.waitServing(mark)
	s.args[2] = s.addr // restarts listen where workers look
	s.api = newAPI("http://" + s.addr)
	h.mu.Lock()
	h.servers = append(h.servers, s)
	h.mu.Unlock()
	return s
}

var servingRE = regexp.MustCompile(`hopper serving on http://(\S+) `)

// waitServing waits for the banner a new incarnation prints once it listens, in the log
// written after mark, and returns its address.
func (s *server) waitServing(mark int64) string {
	s.t.Helper()
	var addr string
	require.Eventually(s.t, func() bool {
		if m := servingRE.FindSubmatch(s.logSince(mark)); m != nil {
			addr = string(m[1])
			return true
		}
		return !s.alive()
	}, 60*time.Second, 20*time.Millisecond, "%s starts serving", s.name)
	require.NotEmpty(s.t, addr, "%s exited before serving:\n%s", s.name, s.logSince(mark))
	return addr
}

// restart starts a stopped or killed server again, on its address, and waits until it
// serves; it returns when that was.
func (s *server) restart() time.Time {
	s.t.Helper()
	require.False(s.t, s.alive(), "%s is still running", s.name)
	mark := s.logSize()
	s.start()
	s.waitServing(mark)
	return time.Now()
}

func (s *server) url() string { return "http://" + s.addr }

// worker is a chaosworker process.
type worker struct {
	*proc
	wname   string
	url     string
	opts    workerOpts
	jsonLog string
}

// workerOpts are a chaos worker's settings.
type workerOpts struct {
	mode        string // stream (default) or poll
	concurrency int    // default 10
	lease       time.Duration
	batch       int // with a batch worker of up to this many jobs of a group (0: one by one)
	// fetchParents: the worker takes its jobs' parents' results with the jobs
	// (remote.Config.FetchParentResults) instead of asking when a handler reads them.
	fetchParents bool
}

// startWorker starts a chaos worker named name against url.
//
// Workers in other languages: the TypeScript SDK does not exist yet (a later issue). When it
// does, its chaos worker is a program taking the same flags (--url --name --mode --log
// --concurrency --lease --poll-wait) and writing the same JSON lines (Line, job.go) for the
// same job args (Args); it gets a language field in workerOpts that picks the program here,
// and runKills starts a mix of Go and TypeScript workers. Nothing else needs to change: the
// verification reads only the log lines and the API.
func (h *harness) startWorker(name, url string, o workerOpts) *worker {
	h.t.Helper()
	if o.mode == "" {
		o.mode = "stream"
	}
	if o.concurrency == 0 {
		o.concurrency = 10
	}
	if o.lease == 0 {
		o.lease = 3 * time.Second
	}
	jsonLog := filepath.Join(h.dir, name+".jsonl")
	w := &worker{wname: name, url: url, opts: o, jsonLog: jsonLog,
		proc: newProc(h.t, name, bins.worker, filepath.Join(h.dir, name+".err"),
			"--url", url, "--name", name, "--mode", o.mode, "--log", jsonLog,
			"--concurrency", strconv.Itoa(o.concurrency), "--lease", o.lease.String(), "--poll-wait", "2s",
			"--batch", strconv.Itoa(o.batch), "--fetch-parent-results="+strconv.FormatBool(o.fetchParents))}
	w.start()
	h.mu.Lock()
	h.workers = append(h.workers, w)
	h.mu.Unlock()
	return w
}

// nextName returns prefix-N, a name not used before in this harness.
func (h *harness) nextName(prefix string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	return fmt.Sprintf("%s-%d", prefix, h.seq)
}

// liveWorkers returns the workers that run.
func (h *harness) liveWorkers() []*worker {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*worker
	for _, w := range h.workers {
		if w.alive() {
			out = append(out, w)
		}
	}
	return out
}

// stopWorkers stops every live worker gracefully.
func (h *harness) stopWorkers() {
	for _, w := range h.liveWorkers() {
		_, _ = w.stop(10 * time.Second)
	}
}

// api is a client of one server's RPC API (the generated Connect clients).
type api struct {
	url   string
	jobs  hopperv1connect.JobServiceClient
	admin hopperv1connect.AdminServiceClient
	queue hopperv1connect.QueueServiceClient
	kinds hopperv1connect.KindServiceClient
	sched hopperv1connect.ScheduleServiceClient
	flows hopperv1connect.WorkflowServiceClient
}

func newAPI(url string) *api {
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	tr := connecthttp.NewTransport(hc, url)
	return &api{url: url,
		jobs:  hopperv1connect.NewJobServiceClient(connect.NewClient(tr)),
		admin: hopperv1connect.NewAdminServiceClient(connect.NewClient(tr)),
		queue: hopperv1connect.NewQueueServiceClient(connect.NewClient(tr)),
		kinds: hopperv1connect.NewKindServiceClient(connect.NewClient(tr)),
		sched: hopperv1connect.NewScheduleServiceClient(connect.NewClient(tr)),
		flows: hopperv1connect.NewWorkflowServiceClient(connect.NewClient(tr)),
	}
}

// callTimeout bounds one API call of the test.
const callTimeout = 10 * time.Second

// healthy reports whether /healthz answers 200.
func (a *api) healthy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// counts returns the number of jobs per state in queue "default".
func (a *api) counts(ctx context.Context) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	res, err := a.queue.List(ctx, &hopperv1.QueueServiceListRequest{})
	if err != nil {
		return nil, err
	}
	for _, q := range res.GetQueues() {
		if q.GetName() == "default" {
			return q.GetCounts(), nil
		}
	}
	return map[string]int64{}, nil
}

// leads asks the server whether it holds the leader lease.
func (a *api) leads(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	res, err := a.admin.ListNodes(ctx, &hopperv1.ListNodesRequest{})
	if err != nil {
		return false
	}
	for _, n := range res.GetNodes() {
		if n.GetLeader() {
			return true
		}
	}
	return false
}

// leader returns the live server that leads, or nil.
func (h *harness) leader() *server {
	h.mu.Lock()
	servers := append([]*server(nil), h.servers...)
	h.mu.Unlock()
	for _, s := range servers {
		if s.alive() && s.api.leads(h.t.Context()) {
			return s
		}
	}
	return nil
}

// waitDrained waits until no job of queue default is waiting, queued, scheduled or running,
// and at least want jobs have ended; it returns when that was.
func (h *harness) waitDrained(a func() *api, want int, within time.Duration) time.Time {
	h.t.Helper()
	ok, last := h.drain(a, want, within)
	require.True(h.t, ok, "the queue drains within %s (want %d jobs ended); last counts %v", within, want, last)
	return time.Now()
}

// drain is waitDrained for a scenario that says itself what a queue that does not drain
// means: it reports whether it drained, with the last counts it read.
func (h *harness) drain(a func() *api, want int, within time.Duration) (bool, map[string]int64) {
	var last map[string]int64
	ok := pollUntil(within, 200*time.Millisecond, func() bool {
		c, err := a().counts(h.t.Context())
		if err != nil {
			return false
		}
		last = c
		return c["waiting"]+c["queued"]+c["scheduled"]+c["running"] == 0 &&
			c["completed"]+c["failed"]+c["canceled"] >= int64(want)
	})
	return ok, last
}

// pollUntil calls cond every tick until it holds or within has passed. Its ticks are real
// time: what it waits for happens in processes and databases that run on the wall clock.
func pollUntil(within, tick time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(tick)
	}
}

// sleepJitter sleeps d ± 25 % of real time: it spaces faults dealt to processes that run on
// the wall clock.
func sleepJitter(d time.Duration) {
	time.Sleep(d*3/4 + rand.N(d/2+1))
}

// tempDir is a directory for files a process run as another user writes (t.TempDir's parents
// are private to root); removed at cleanup.
func tempDir(t *testing.T, pattern string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", pattern)
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// jsonOf is v as JSON.
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
