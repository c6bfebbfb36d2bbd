//go:build sdk

package sdk

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bins are the programs TestMain builds: the hopper command and the Go driver.
var bins struct{ hopper, godriver string }

// driver is one SDK's conformance driver: how to start it.
type driver struct {
	name string
	cmd  []string
	env  []string
}

// drivers are the SDKs' drivers, in the order the suite runs them. Each entry's program must
// exist once make sdk-conformance has built it; without CI=true a missing one is skipped.
func drivers(t *testing.T) []driver {
	root := repoRoot(t)
	all := []driver{
		{"go", []string{bins.godriver}, nil},
		{"typescript", []string{"node", filepath.Join(root, "clients/typescript/build/test/conformance-driver.js")}, nil},
		{"python", []string{python(), filepath.Join(root, "clients/python/tests/conformance_driver.py")},
			[]string{"PYTHONPATH=" + filepath.Join(root, "clients/python/src")}},
	}
	want := os.Getenv("HOPPER_SDK_DRIVERS")
	var out []driver
	for _, d := range all {
		if want != "" && !slices.Contains(strings.Split(want, ","), d.name) {
			continue
		}
		if d.name != "go" {
			if _, err := os.Stat(d.cmd[len(d.cmd)-1]); err != nil {
				if os.Getenv("CI") == "true" {
					t.Fatalf("driver %s: %v (make sdk-conformance builds it)", d.name, err)
				}
				t.Logf("driver %s skipped: %v (make sdk-conformance builds it)", d.name, err)
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// python is $PY, or /usr/bin/python3 (which sees Debian's grpcio and protobuf), or python3.
func python() string {
	if p := os.Getenv("PY"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

func repoRoot(t *testing.T) string {
	t.Helper()
	b, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hopperjobs/hopper").Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hopper-sdk-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdk:", err)
		os.Exit(1)
	}
	code := 1
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, "sdk:", err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// build compiles the hopper command (in its own module, as users build it) and the Go driver.
func build(dir string) error {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hopperjobs/hopper").Output()
	if err != nil {
		return fmt.Errorf("find the hopper module: %w", err)
	}
	bins.hopper, bins.godriver = filepath.Join(dir, "hopper"), filepath.Join(dir, "godriver")
	for out, src := range map[string]struct{ dir, pkg string }{
		bins.hopper:   {strings.TrimSpace(string(root)), "./cmd/hopper"},
		bins.godriver: {"", "github.com/hopperjobs/hopper/e2e/sdk/godriver"},
	} {
		cmd := exec.Command("go", "build", "-o", out, src.pkg)
		cmd.Dir = src.dir
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", src.pkg, err, b)
		}
	}
	return nil
}

// server is a hopper serve process on a SQLite file, restartable on the same address.
type server struct {
	t    *testing.T
	dir  string
	addr string
	args []string
	cmd  *exec.Cmd
	done chan struct{}
}

func startServer(t *testing.T, extra ...string) *server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	s := &server{t: t, dir: t.TempDir(), addr: addr}
	s.args = append([]string{"serve", "--database", filepath.Join(s.dir, "hopper.db"), "--addr", addr,
		"--no-echo", "--log-level", "warn"}, extra...)
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *server) url() string { return "http://" + s.addr }

func (s *server) start() {
	s.t.Helper()
	f, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(s.t, err)
	defer f.Close()
	s.cmd = exec.Command(bins.hopper, s.args...)
	s.cmd.Stdout, s.cmd.Stderr = f, f
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(s.t, s.cmd.Start())
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.done)
	require.Eventually(s.t, func() bool {
		res, err := http.Get(s.url() + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}, 20*time.Second, 20*time.Millisecond, "hopper serve did not get ready: %s", s.log())
}

// kill SIGKILLs the server, if it runs, and waits for it to be gone.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
	s.cmd = nil
}

func (s *server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
	return string(b)
}

// event is one line a driver printed.
type event struct {
	Event   string   `json:"event"`
	ID      string   `json:"id"`
	Attempt int      `json:"attempt"`
	Extra   []string `json:"extra"`
	IDs     []string `json:"ids"` // a batch call's jobs
	Error   string   `json:"error"`
	at      time.Time
}

// worker is a running driver process.
type worker struct {
	t      *testing.T
	d      driver
	cmd    *exec.Cmd
	done   chan struct{}
	exit   error
	logf   string
	mu     sync.Mutex
	events []event
}

// workerOpts configure a driver through its environment.
type workerOpts struct {
	url, apiKey, queue, mode string
	concurrency, prefetch    int
	leaseMs                  int
	kindConcurrency          int // the bound of kind conformance (0: none)
	fetchParentResults       bool
}

func startWorker(t *testing.T, d driver, o workerOpts) *worker {
	t.Helper()
	w := &worker{t: t, d: d, done: make(chan struct{}), logf: filepath.Join(t.TempDir(), d.name+".log")}
	f, err := os.Create(w.logf)
	require.NoError(t, err)
	defer f.Close()
	w.cmd = exec.Command(d.cmd[0], d.cmd[1:]...)
	w.cmd.Env = append(append(os.Environ(), d.env...),
		"HOPPER_URL="+o.url, "HOPPER_API_KEY="+o.apiKey, "HOPPER_QUEUE="+o.queue, "HOPPER_MODE="+o.mode,
		fmt.Sprintf("HOPPER_CONCURRENCY=%d", max(o.concurrency, 1)), fmt.Sprintf("HOPPER_PREFETCH=%d", o.prefetch),
		fmt.Sprintf("HOPPER_LEASE_MS=%d", o.leaseMs), fmt.Sprintf("HOPPER_KIND_CONCURRENCY=%d", o.kindConcurrency), "HOPPER_WORKER_NAME="+d.name+"-"+t.Name(),
		"HOPPER_FETCH_PARENT_RESULTS="+map[bool]string{false: "0", true: "1"}[o.fetchParentResults])
	w.cmd.Stderr = f
	stdout, err := w.cmd.StdoutPipe()
	require.NoError(t, err)
	w.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, w.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			e.at = time.Now()
			w.mu.Lock()
			w.events = append(w.events, e)
			w.mu.Unlock()
		}
		w.exit = w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		_ = w.cmd.Process.Signal(syscall.SIGKILL)
		<-w.done
		if t.Failed() {
			b, _ := os.ReadFile(w.logf)
			t.Logf("driver %s's standard error:\n%s", d.name, b)
		}
	})
	w.await(func(e event) bool { return e.Event == "ready" }, 20*time.Second, "ready")
	return w
}

// await waits for an event that ok accepts and returns it.
func (w *worker) await(ok func(event) bool, within time.Duration, what string) event {
	w.t.Helper()
	var got event
	require.Eventually(w.t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, e := range w.events {
			if ok(e) {
				got = e
				return true
			}
		}
		return false
	}, within, 10*time.Millisecond, "driver %s: no %s event", w.d.name, what)
	return got
}

// supports reports whether the driver runs an optional case (its ready line's extra).
func (w *worker) supports(c string) bool {
	e := w.await(func(e event) bool { return e.Event == "ready" }, time.Second, "ready")
	return slices.Contains(e.Extra, c)
}

// maxRunning is the most handlers the driver ran at once, from its begin and end lines.
func (w *worker) maxRunning() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, most := 0, 0
	for _, e := range w.events {
		switch e.Event {
		case "begin":
			n++
			most = max(most, n)
		case "end":
			n--
		}
	}
	return most
}

func (w *worker) signal(sig syscall.Signal) {
	w.t.Helper()
	require.NoError(w.t, w.cmd.Process.Signal(sig))
}

// wait waits for the driver to exit and returns its exit code.
func (w *worker) wait(within time.Duration) int {
	w.t.Helper()
	select {
	case <-w.done:
	case <-time.After(within):
		w.t.Fatalf("driver %s did not exit within %s", w.d.name, within)
	}
	if ee, ok := w.exit.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	require.NoError(w.t, w.exit)
	return 0
}

// ctx is a test's context with a deadline.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}
