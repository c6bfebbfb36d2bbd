// Package upgrade tests a rolling upgrade of `hopper serve` on PostgreSQL: the previous
// release's binary, built from git, and this tree's, on one schema (docs/deploy.md, "Upgrades").
//
// The previous release is the newest tag v* before HEAD, or while none exists the last commit
// at the previous PostgreSQL schema version (previousRelease); HOPPER_UPGRADE_FROM=<ref>
// picks another. The test needs git with the repository's history (not a shallow clone), the
// Go toolchain and PostgreSQL (HOPPER_TEST_DATABASE_URL); without PostgreSQL it skips, except
// under CI=true. From the repository's root:
//
//	make e2e                                                  # with the rest of the e2e module
//	make upgrade-test                                         # this test alone
//	make upgrade-test HOPPER_UPGRADE_FROM=ea64010^            # from an older commit
package upgrade

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// The jobs of the test. Both servers work hopper.echo themselves; oldKind is worked only by a
// remote worker connected to the old server, newKind only by one connected to the new server,
// so each kind proves which binary's server claimed and completed it.
const (
	echoKind = "hopper.echo"
	oldKind  = "upgrade.old"
	newKind  = "upgrade.new"
)

type job struct {
	K   string `json:"-"`
	Seq int    `json:"seq"`
}

func (j job) Kind() string { return j.K }

// TestRollingUpgrade upgrades a running `hopper serve` on PostgreSQL from the previous release
// to this tree, as a rolling upgrade does, and checks the upgrade rule of docs/deploy.md:
//
//   - the old server works alone on the schema it created;
//   - the new server starts on the same schema while the old one runs and takes a steady
//     stream of enqueues, and migrates it: no enqueue fails meanwhile;
//   - after the migration the old server still enqueues, claims and completes: jobs enqueued
//     through the new server are completed through the old one, and the other way round;
//   - the old server stops (SIGTERM) cleanly; the jobs it was given are completed by the new
//     one; in the end every job enqueued through either is completed, counted through the API;
//   - the old binary then refuses to start on the migrated schema (the migrations are
//     forward-only: rolling back the binary needs the database as it was before).
func TestRollingUpgrade(t *testing.T) {
	pgtest.Require(t)
	if testing.Short() {
		t.Skip("builds two hopper binaries")
	}
	root := moduleRoot(t)
	from, err := previousRelease(root)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("find the previous release: %v", err)
		}
		t.Skipf("find the previous release: %v", err)
	}
	oldVersion, err := migrationsAt(root, from.commit)
	require.NoError(t, err)
	newVersion, err := migrationsInTree(root)
	require.NoError(t, err)
	t.Logf("upgrading from %s (%s, %s): PostgreSQL schema version %d to %d", from.ref, from.commit[:12], from.why,
		oldVersion, newVersion)
	require.GreaterOrEqual(t, newVersion, oldVersion, "the previous release's schema is not newer than this tree's")

	oldBin, newBin := buildBoth(t, root, from)
	schema := pgtest.FreshSchema(t, "hopper_upgrade_")
	db, err := pgx.Connect(t.Context(), pgtest.URL())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close(context.Background()) })
	version := func() int {
		var v int
		require.NoError(t, db.QueryRow(t.Context(), fmt.Sprintf(`SELECT max(version) FROM %s`,
			pgx.Identifier{schema, "schema_migrations"}.Sanitize())).Scan(&v))
		return v
	}
	ledger := newLedger()

	// 1. The previous release alone: it creates the schema and works its jobs.
	oldSrv := startServer(t, "old", oldBin, schema)
	require.Equal(t, oldVersion, version(), "the old server created the schema at its version")
	oldAPI := client(t, oldSrv)
	// worker-old reaches the servers through a load balancer that sends each connection to the
	// old server while it listens, then to the new one, as a Kubernetes Service or any proxy
	// with health checks does during a rolling upgrade.
	lb := startBalancer(t, oldSrv)
	oldWorker := startWorker(t, lb.url, "worker-old", oldKind)
	first := ledger.enqueue(t, oldAPI, "old", 50, echoKind, oldKind)
	waitCompleted(t, oldAPI, first, "the old server alone completes its jobs")

	// 2. The new binary starts on the same schema while the old server takes a steady stream
	// of enqueues, and migrates the schema under it.
	steady := ledger.steady(oldAPI, "old", echoKind, oldKind, newKind)
	newSrv := startServer(t, "new", newBin, schema)
	require.Equal(t, newVersion, version(), "the new server migrated the schema")
	migratedAt := ledger.len()
	newAPI := client(t, newSrv)
	lb.add(newSrv)
	newWorker := startWorker(t, newSrv.url, "worker-new", newKind)
	require.Eventually(t, func() bool { return ledger.len() >= migratedAt+60 }, 30*time.Second, 10*time.Millisecond,
		"the steady enqueues through the old server go on after the migration")
	// Each side enqueues the kind only the other works.
	toOld := ledger.enqueue(t, newAPI, "new", 50, oldKind)
	toNew := ledger.enqueue(t, oldAPI, "old", 50, newKind)
	both := ledger.enqueue(t, newAPI, "new", 50, echoKind)
	waitCompleted(t, newAPI, toOld, "the old server completes jobs enqueued through the new one")
	waitCompleted(t, oldAPI, toNew, "the new server completes jobs enqueued through the old one")
	waitCompleted(t, oldAPI, both, "echo jobs enqueued through the new server complete")
	st := steady.stop()
	require.Empty(t, st.errs, "no enqueue through the old server failed while the new one migrated")
	t.Logf("steady enqueues through the old server: %d calls, slowest %s (the migration ran among them)",
		st.calls, st.slowest.Round(time.Millisecond))
	ledger.checkWorker(t, newAPI, toOld, "worker-old")
	ledger.checkWorker(t, newAPI, toNew, "worker-new")

	// 3. The old server stops while it has jobs in hand; worker-old reconnects through the
	// load balancer to the new server, reports there what it ran, and takes new work.
	last := ledger.enqueue(t, oldAPI, "old", 50, echoKind, oldKind, newKind)
	oldSrv.stop(t)
	after := ledger.enqueue(t, newAPI, "new", 50, echoKind, oldKind, newKind)
	waitCompleted(t, newAPI, append(last, after...), "the new server completes what the old one left")
	waitCompleted(t, newAPI, ledger.ids(), "every job enqueued through either server completes")

	// Counted through the API: as many jobs as were enqueued, each of them completed.
	jobs := listAll(t, newAPI)
	require.Equal(t, ledger.len(), len(jobs), "the store holds exactly the jobs enqueued")
	for _, id := range ledger.ids() {
		require.Contains(t, jobs, id)
		require.Equal(t, hopper.StateCompleted, jobs[id].State, "job %s (%s)", id, jobs[id].Kind)
		// No job was rescued: none lost its worker and ran again, the stop included.
		require.Zero(t, jobs[id].Rescues, "job %s (%s) was rescued", id, jobs[id].Kind)
	}
	ledger.logEchoSplit(t, newAPI, oldSrv, newSrv, migratedAt)
	for _, s := range []*server{oldSrv, newSrv} {
		for _, level := range []string{"level=WARN", "level=ERROR"} {
			for _, line := range logLines(t, s, level) {
				t.Logf("%s server: %s", s.name, line)
			}
		}
	}
	require.NoError(t, oldWorker.Stop(t.Context()))
	require.NoError(t, newWorker.Stop(t.Context()))

	// 4. The rule for rolling back: the old binary refuses the migrated schema.
	out, err := exec.Command(oldBin, "--database", pgtest.URL(), "--schema", schema, "migrate").CombinedOutput()
	if newVersion > oldVersion {
		require.Error(t, err, "the old binary starts on a schema newer than it: %s", out)
		// Older binaries name the first newer version they find, not always the newest.
		require.Regexp(t, fmt.Sprintf(`schema version \d+, newer than this binary's %d`, oldVersion), string(out))
		t.Logf("the old binary on the migrated schema: %s", strings.TrimSpace(string(out)))
	} else {
		require.NoError(t, err, "%s", out)
	}
}

// moduleRoot is the hopper module's directory: the repository's root.
func moduleRoot(t *testing.T) string {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hopperjobs/hopper").Output()
	require.NoError(t, err, "find the hopper module")
	return strings.TrimSpace(string(out))
}

// buildBoth builds the hopper command of release from and of the working tree at root, at
// once. The release's files come from git (git archive) into a directory named for its
// commit under the user's cache directory, kept for the next run: with the same paths, the
// Go build cache serves its packages again and only the link is redone.
func buildBoth(t *testing.T, root string, from release) (oldBin, newBin string) {
	start := time.Now()
	src, err := releaseSource(root, from.commit)
	require.NoError(t, err)
	dir := t.TempDir()
	oldBin, newBin = filepath.Join(dir, "hopper-old"), filepath.Join(dir, "hopper-new")
	errs := make(chan error, 2)
	for _, b := range []struct{ dir, out string }{{src, oldBin}, {root, newBin}} {
		go func() {
			cmd := exec.Command("go", "build", "-o", b.out, "./cmd/hopper")
			cmd.Dir = b.dir
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("go build in %s: %v\n%s", b.dir, err, out)
				return
			}
			errs <- nil
		}()
	}
	for range 2 {
		require.NoError(t, <-errs)
	}
	t.Logf("built both binaries in %s", time.Since(start).Round(time.Millisecond))
	return oldBin, newBin
}

// releaseSource returns a directory holding the files of commit, extracted from the
// repository at root when a previous run has not left them.
func releaseSource(root, commit string) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir() // no $HOME: kept until the machine's temporary files go
	}
	base := filepath.Join(cache, "hopper-upgrade-test")
	src := filepath.Join(base, commit)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err == nil {
		return src, nil
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(base, commit+".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // left only when the rename below did not happen
	tarball := filepath.Join(tmp, "src.tar")
	if _, err := git(root, "archive", "--format=tar", "-o", tarball, commit); err != nil {
		return "", err
	}
	if out, err := exec.Command("tar", "-x", "-f", tarball, "-C", tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("extract %s: %v: %s", tarball, err, out)
	}
	if err := os.Remove(tarball); err != nil {
		return "", err
	}
	// A run at the same time may have extracted it first: either copy will do.
	if err := os.Rename(tmp, src); err != nil {
		if _, statErr := os.Stat(filepath.Join(src, "go.mod")); statErr == nil {
			return src, nil
		}
		return "", err
	}
	return src, nil
}

// server is one `hopper serve` process.
type server struct {
	name, url string
	cmd       *exec.Cmd
	log       string
	exited    chan struct{}
	err       error // the process's exit, once exited is closed
}

// startServer runs bin serve on schema at a free port and waits until /readyz answers 200.
// Its output goes to a file printed when the test fails.
func startServer(t *testing.T, name, bin, schema string) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	s := &server{name: name, url: "http://" + addr, log: filepath.Join(t.TempDir(), name+".log"), exited: make(chan struct{})}
	f, err := os.Create(s.log)
	require.NoError(t, err)
	defer f.Close() // the process has its own copy
	s.cmd = exec.Command(bin, "--database", pgtest.URL(), "--schema", schema, "serve", "--addr", addr,
		"--shutdown-grace", "10s")
	s.cmd.Stdout, s.cmd.Stderr = f, f
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test
	require.NoError(t, s.cmd.Start())
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			b, _ := os.ReadFile(s.log)
			t.Logf("%s server's log:\n%s", name, b)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-s.exited:
			b, _ := os.ReadFile(s.log)
			t.Fatalf("the %s server exited before it was ready (%v):\n%s", name, s.err, b)
		default:
		}
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		require.True(t, time.Now().Before(deadline), "the %s server is not ready after 60 s", name)
		time.Sleep(50 * time.Millisecond) // a process outside the test: nothing to wait on but its port
	}
}

// stop sends SIGTERM and requires a clean exit within the shutdown grace and a margin.
func (s *server) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-s.exited:
		require.NoError(t, s.err, "the %s server exits cleanly on SIGTERM", s.name)
	case <-time.After(30 * time.Second):
		t.Fatalf("the %s server did not stop within 30 s of SIGTERM", s.name)
	}
}

func client(t *testing.T, s *server) *hopperclient.Client {
	c, err := hopperclient.New(hopperclient.Config{URL: s.url})
	require.NoError(t, err)
	return c
}

// The args of the kinds the remote workers work.
type (
	oldArgs struct{ Seq int }
	newArgs struct{ Seq int }
)

func (oldArgs) Kind() string { return oldKind }
func (newArgs) Kind() string { return newKind }

// startWorker connects a remote worker of kind (oldKind or newKind), named name, to the
// server at url. It is stopped at cleanup.
func startWorker(t *testing.T, url, name, kind string) *remote.Worker {
	ws := hopper.NewWorkers()
	switch kind {
	case oldKind:
		hopper.AddWorkerFunc(ws, func(context.Context, *hopper.Job[oldArgs]) error { return nil })
	case newKind:
		hopper.AddWorkerFunc(ws, func(context.Context, *hopper.Job[newArgs]) error { return nil })
	default:
		t.Fatalf("no remote worker for kind %q", kind)
	}
	w, err := remote.New(remote.Config{URL: url, Workers: ws, Name: name, Concurrency: 10,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	return w
}

// balancer is a TCP load balancer: it sends each connection to the first of its servers that
// accepts it.
type balancer struct {
	url     string
	mu      sync.Mutex
	servers []*server
}

func startBalancer(t *testing.T, servers ...*server) *balancer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &balancer{url: "http://" + ln.Addr().String()}
	for _, s := range servers {
		b.add(s)
	}
	var conns sync.WaitGroup
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return // the listener closed at cleanup
			}
			conns.Add(1)
			go func() { defer conns.Done(); b.forward(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done; conns.Wait() })
	return b
}

func (b *balancer) add(s *server) {
	if s == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.servers = append(b.servers, s)
}

// forward pipes c to the first server that accepts a connection, until either side closes.
func (b *balancer) forward(c net.Conn) {
	defer c.Close()
	b.mu.Lock()
	servers := append([]*server(nil), b.servers...)
	b.mu.Unlock()
	for _, s := range servers {
		up, err := net.DialTimeout("tcp", strings.TrimPrefix(s.url, "http://"), time.Second)
		if err != nil {
			continue
		}
		defer up.Close()
		copied := make(chan struct{}, 2)
		go func() { _, _ = io.Copy(up, c); copied <- struct{}{} }()
		go func() { _, _ = io.Copy(c, up); copied <- struct{}{} }()
		<-copied // one side closed: close both, which ends the other copy
		c.Close()
		up.Close()
		<-copied
		return
	}
}

// ledger records every job the test enqueued: its id, the server it went through, its kind.
type ledger struct {
	mu    sync.Mutex
	order []string
	entry map[string]entry
}

type entry struct{ through, kind string }

func newLedger() *ledger { return &ledger{entry: map[string]entry{}} }

func (l *ledger) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.order)
}

func (l *ledger) ids() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.order...)
}

// enqueue enqueues n jobs of each kind through c in one call and returns their ids.
func (l *ledger) enqueue(t *testing.T, c *hopperclient.Client, through string, n int, kinds ...string) []string {
	t.Helper()
	ids, err := l.try(t.Context(), c, through, n, kinds...)
	require.NoError(t, err, "enqueue through the %s server", through)
	return ids
}

func (l *ledger) try(ctx context.Context, c *hopperclient.Client, through string, n int, kinds ...string) ([]string, error) {
	var batch []hopper.EnqueueParams
	for _, k := range kinds {
		for i := range n {
			batch = append(batch, hopper.EnqueueParams{Args: job{K: k, Seq: i}})
		}
	}
	res, err := c.EnqueueMany(ctx, batch)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.Job.ID
		l.order = append(l.order, r.Job.ID)
		l.entry[r.Job.ID] = entry{through: through, kind: batch[i].Args.Kind()}
	}
	return ids, nil
}

// steadyLoad enqueues one job of each kind every 10 ms until stopped. A call is never cut
// short: each one's jobs are in the ledger or its error is counted.
type steadyLoad struct {
	quit chan struct{}
	done chan steadyResult
}

type steadyResult struct {
	calls   int
	slowest time.Duration
	errs    []error
}

func (l *ledger) steady(c *hopperclient.Client, through string, kinds ...string) *steadyLoad {
	s := &steadyLoad{quit: make(chan struct{}), done: make(chan steadyResult, 1)}
	go func() {
		var r steadyResult
		// A load generator: its pace is the point, so it runs on the wall clock.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-s.quit:
				s.done <- r
				return
			case <-tick.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			start := time.Now()
			_, err := l.try(ctx, c, through, 1, kinds...)
			cancel()
			r.calls++
			r.slowest = max(r.slowest, time.Since(start))
			if err != nil {
				r.errs = append(r.errs, err)
			}
		}
	}()
	return s
}

func (s *steadyLoad) stop() steadyResult {
	close(s.quit)
	return <-s.done
}

// waitCompleted waits until every job of ids is completed, read through c, for up to a minute.
func waitCompleted(t *testing.T, c *hopperclient.Client, ids []string, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		jobs := listAll(t, c)
		pending := 0
		for _, id := range ids {
			if j, ok := jobs[id]; !ok || j.State != hopper.StateCompleted {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d jobs not completed after a minute", what, pending, len(ids))
		}
		time.Sleep(100 * time.Millisecond) // processes outside the test: nothing to wait on but the API
	}
}

// listAll reads every job through the API.
func listAll(t *testing.T, c *hopperclient.Client) map[string]*hopper.JobRow {
	t.Helper()
	jobs := map[string]*hopper.JobRow{}
	p := &hopper.ListParams{Limit: 10000}
	for {
		page, err := c.List(t.Context(), p)
		require.NoError(t, err)
		for _, j := range page.Jobs {
			jobs[j.ID] = j
		}
		if page.NextCursor == "" {
			return jobs
		}
		p.Cursor = page.NextCursor
	}
}

// checkWorker requires that the jobs of ids were completed by the remote worker named worker,
// as their attempts say.
func (l *ledger) checkWorker(t *testing.T, c *hopperclient.Client, ids []string, worker string) {
	t.Helper()
	for _, id := range ids {
		as, err := c.Attempts(t.Context(), id)
		require.NoError(t, err)
		require.NotEmpty(t, as, "job %s has an attempt", id)
		require.Equal(t, worker, as[len(as)-1].WorkerID, "job %s", id)
	}
}

// logEchoSplit logs which server's own workers completed the echo jobs enqueued after the
// migration, as their attempts say: either server may claim them, so the split is reported,
// not required.
func (l *ledger) logEchoSplit(t *testing.T, c *hopperclient.Client, oldSrv, newSrv *server, migratedAt int) {
	byOld, byNew, echo := 0, 0, 0
	oldMark, newMark := fmt.Sprintf("-%d-", oldSrv.cmd.Process.Pid), fmt.Sprintf("-%d-", newSrv.cmd.Process.Pid)
	for _, id := range l.ids()[migratedAt:] {
		if l.kind(id) != echoKind {
			continue
		}
		echo++
		as, err := c.Attempts(t.Context(), id)
		require.NoError(t, err)
		require.NotEmpty(t, as, "job %s has an attempt", id)
		switch w := as[len(as)-1].WorkerID; {
		case strings.Contains(w, oldMark):
			byOld++
		case strings.Contains(w, newMark):
			byNew++
		}
	}
	t.Logf("%d echo jobs enqueued after the migration: %d completed by the old server's workers, %d by the new one's",
		echo, byOld, byNew)
}

func (l *ledger) kind(id string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.entry[id].kind
}

// logLines returns the lines of a server's log that contain substr.
func logLines(t *testing.T, s *server, substr string) []string {
	f, err := os.Open(s.log)
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), substr) {
			lines = append(lines, sc.Text())
		}
	}
	return lines
}
