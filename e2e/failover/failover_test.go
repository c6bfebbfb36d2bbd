//go:build failover

package failover

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/remote"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

var (
	promoteAfter = flag.Duration("promote-after", 2*time.Second, "how long the primary is down before the replica is promoted")
	before       = flag.Duration("before", 5*time.Second, "how long jobs flow before the primary fails")
	after        = flag.Duration("after", 10*time.Second, "how long jobs are enqueued after the promotion")
	rate         = flag.Int("rate", 200, "enqueues a second")
	lag          = flag.Duration("lag", 0, "cut the replica off this long before the primary fails: the replica lags by as "+
		"much (asynchronous replication loses what the primary committed meanwhile)")
	drain    = flag.Duration("drain", 3*time.Minute, "how long every acknowledged job gets to complete after the load")
	keepSync = flag.Bool("keep-sync", false, "with synchronous replication, leave synchronous_standby_names set on the promoted "+
		"replica (copied from the primary by pg_basebackup): it has no standby, so every commit on it waits for ever")
)

// The kind of the experiment's jobs, worked by a remote worker that counts each run.
type job struct{ N int }

func (job) Kind() string { return "failover.job" }

func TestFailover(t *testing.T) {
	for _, sync := range []bool{false, true} {
		name := map[bool]string{false: "async", true: "sync"}[sync]
		t.Run(name, func(t *testing.T) { runFailover(t, sync) })
	}
}

func runFailover(t *testing.T, syncRep bool) {
	pg := newPostgres(t)
	primary := pg.initPrimary(t, syncRep)
	link := startLink(t, primary.port) // the replica streams through it
	replica := pg.initReplica(t, link.port)
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write",
		primary.port, replica.port)
	t.Logf("replication: %s; hopper's URL: %s", map[bool]string{false: "asynchronous (the default)",
		true: "synchronous (synchronous_standby_names = '*', synchronous_commit = on)"}[syncRep], url)

	srv := startServer(t, url)
	api, err := hopperclient.New(hopperclient.Config{URL: srv})
	require.NoError(t, err)
	runs := newRuns()
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(_ context.Context, j *hopper.Job[job]) error { runs.add(j.ID); return nil })
	w, err := remote.New(remote.Config{URL: srv, Workers: ws, Concurrency: 20, Name: "failover-worker"})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer w.Stop(context.Background()) //nolint:errcheck // at the end of the experiment

	load := startLoad(api, *rate)
	ready := watchReady(srv)
	time.Sleep(*before) // the experiment's timeline runs on the wall clock: jobs flow meanwhile

	if *lag > 0 {
		// The replica stops receiving WAL: what the primary commits from now on is on the
		// primary alone (asynchronous), or waits for the replica (synchronous).
		link.hold()
		time.Sleep(*lag) // the lag itself, on the wall clock
	}
	failedAt := time.Now()
	primary.stop(syscall.SIGQUIT) // an immediate shutdown: no checkpoint, like a crash
	link.drop()                   // what the replica had not received is gone with the primary
	time.Sleep(*promoteAfter)     // the primary stays down, as until a failover manager acts
	promotedAt := time.Now()
	replica.promote(t)
	if syncRep && !*keepSync {
		// The new primary has no standby of its own: it must stop waiting for one, as a failover
		// manager (Patroni) does, until a new replica follows it.
		replica.exec(t, `ALTER SYSTEM SET synchronous_standby_names = ''`)
		replica.exec(t, `SELECT pg_reload_conf()`)
	}
	t.Logf("primary killed at 0; replica promoted at +%s (took %s)", promotedAt.Sub(failedAt).Round(time.Millisecond),
		time.Since(promotedAt).Round(time.Millisecond))
	time.Sleep(*after)
	acked, calls := load.stop()
	runs.add("") // the end of the load: a pause that lasts until then shows
	notReady := ready.stop()

	report(t, failedAt, promotedAt, acked, calls, runs, notReady)

	// Every acknowledged job must complete on the new primary; a completion the old primary
	// committed and never replicated leaves the job running there until its lease expires.
	deadline := time.Now().Add(*drain)
	var lost, pending []string
	var drainedAt time.Time
	for {
		lost, pending = lost[:0], pending[:0]
		for _, a := range acked {
			j, err := api.Get(context.Background(), a.id)
			switch {
			case errors.Is(err, hopper.ErrNotFound):
				lost = append(lost, a.id)
			case err != nil:
				pending = append(pending, a.id)
			case j.State != hopper.StateCompleted:
				pending = append(pending, a.id)
			}
		}
		if len(pending) == 0 {
			drainedAt = time.Now()
			break
		}
		if time.Now().After(deadline) {
			for _, id := range pending {
				j, err := api.Get(context.Background(), id)
				if err != nil {
					t.Logf("job %s: %v", id, err)
					continue
				}
				t.Logf("job %s: %s, attempt %d, token %d, rescues %d, worker %q, lease until %s, created %s, ran %d times",
					id, j.State, j.Attempt, j.Token, j.Rescues, j.WorkerID, j.LeaseExpiresAt.Format(time.RFC3339Nano),
					j.CreatedAt.Format(time.RFC3339Nano), runs.count(id))
			}
			t.Fatalf("%d acknowledged jobs not completed %s after the load", len(pending), *drain)
		}
		time.Sleep(500 * time.Millisecond) // polling the API: the experiment's own pace
	}
	t.Logf("every acknowledged job completed at %s", rel(failedAt, drainedAt))
	t.Logf("lost (acknowledged, missing on the new primary): %d; ran more than once: %d", len(lost), len(runs.twice()))
	// The jobs that did not simply run once: their attempts, as the new primary has them.
	var lostFrom, lostTo time.Time
	for _, a := range acked {
		j, err := api.Get(context.Background(), a.id)
		if errors.Is(err, hopper.ErrNotFound) {
			if lostFrom.IsZero() {
				lostFrom = a.at
			}
			lostTo = a.at
			continue
		}
		require.NoError(t, err)
		if j.Rescues == 0 && runs.count(a.id) == 1 {
			continue
		}
		as, err := api.Attempts(context.Background(), a.id)
		require.NoError(t, err)
		var lines []string
		for _, at := range as {
			lines = append(lines, fmt.Sprintf("%s from %s to %s", at.Outcome, rel(failedAt, at.StartedAt), rel(failedAt, at.EndedAt)))
		}
		t.Logf("job %s (enqueued at %s): handler ran %d times, %d rescues; attempts: %s", a.id, rel(failedAt, a.at),
			runs.count(a.id), j.Rescues, strings.Join(lines, "; "))
	}
	if !lostTo.IsZero() {
		t.Logf("the lost jobs were acknowledged from %s to %s", rel(failedAt, lostFrom), rel(failedAt, lostTo))
	}
}

// report logs the figures of one run, times relative to the primary's failure.
func report(t *testing.T, failedAt, promotedAt time.Time, acked []ack, calls []call, runs *runs, notReady [][2]time.Time) {
	rel := func(at time.Time) string { return rel(failedAt, at) }
	var firstErr, lastErr, firstOKAfter time.Time
	errs := map[string]int{}
	for _, c := range calls {
		if c.err != "" {
			errs[c.err]++
			if firstErr.IsZero() {
				firstErr = c.at
			}
			lastErr = c.at
		} else if c.at.After(failedAt) && firstOKAfter.IsZero() && !firstErr.IsZero() {
			firstOKAfter = c.at
		}
	}
	gapFrom, gapTo := runs.longestGap()
	t.Logf("enqueue calls: %d, acknowledged jobs: %d", len(calls), len(acked))
	t.Logf("enqueue errors: %d, first at %s, last at %s; first success after them at %s", sum(errs), rel(firstErr), rel(lastErr), rel(firstOKAfter))
	for msg, n := range errs {
		t.Logf("  %5d × %s", n, msg)
	}
	for _, w := range notReady {
		t.Logf("/readyz not ready from %s to %s", rel(w[0]), rel(w[1]))
	}
	t.Logf("no handler ran from %s to %s (the longest pause until the load ended; promotion at %s)", rel(gapFrom), rel(gapTo), rel(promotedAt))
}

// rel is at relative to the failure.
func rel(failedAt, at time.Time) string {
	if at.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%+.2fs", at.Sub(failedAt).Seconds())
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// postgres makes the throwaway clusters: the newest installed PostgreSQL, run as its user.
type postgres struct {
	bin  string
	cred *syscall.Credential
	uid  int
	gid  int
	dir  string
}

func newPostgres(t *testing.T) *postgres {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		t.Skip("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin")
	}
	sort.Slice(found, func(i, j int) bool { return version(found[i]) < version(found[j]) })
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("no postgres user to run PostgreSQL as: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	dir, err := os.MkdirTemp("", "hopper-failover-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chown(dir, uid, gid))
	return &postgres{bin: filepath.Dir(found[len(found)-1]), uid: uid, gid: gid, dir: dir,
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
}

func version(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

func (p *postgres) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// node is one running cluster.
type node struct {
	p    *postgres
	name string
	data string
	port int
	proc *exec.Cmd
	done chan struct{}
}

// initPrimary creates and starts the primary. With syncRep, a commit waits until the standby
// has flushed it.
func (p *postgres) initPrimary(t *testing.T, syncRep bool) *node {
	n := &node{p: p, name: "primary", data: filepath.Join(p.dir, "primary"), port: freePort(t)}
	out, err := p.cmd("initdb", "-D", n.data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8").CombinedOutput()
	require.NoError(t, err, "initdb: %s", out)
	// initdb's pg_hba.conf lets local replication connections in (trust); the defaults keep
	// wal_level = replica and 10 WAL senders.
	conf := "listen_addresses = '127.0.0.1'\nmax_connections = 50\nwal_keep_size = '256MB'\n"
	if syncRep {
		conf += "synchronous_standby_names = '*'\nsynchronous_commit = on\n"
	}
	appendFile(t, filepath.Join(n.data, "postgresql.conf"), conf)
	n.start(t)
	return n
}

// initReplica makes a streaming replica of the primary at port (pg_basebackup -R:
// standby.signal and primary_conninfo) and starts it.
func (p *postgres) initReplica(t *testing.T, port int) *node {
	n := &node{p: p, name: "replica", data: filepath.Join(p.dir, "replica"), port: freePort(t)}
	out, err := p.cmd("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres",
		"-D", n.data, "-R", "-X", "stream", "--no-sync").CombinedOutput()
	require.NoError(t, err, "pg_basebackup: %s", out)
	n.start(t)
	// Streaming before the experiment starts.
	require.Eventually(t, func() bool {
		var streaming bool
		return query(fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port),
			`SELECT count(*) > 0 FROM pg_stat_replication WHERE state = 'streaming'`, &streaming) == nil && streaming
	}, 30*time.Second, 100*time.Millisecond, "the replica streams")
	return n
}

func (n *node) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", n.port)
}

func (n *node) start(t *testing.T) {
	log, err := os.OpenFile(filepath.Join(n.p.dir, n.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	defer log.Close()
	n.proc = n.p.cmd("postgres", "-D", n.data, "-p", strconv.Itoa(n.port), "-k", n.p.dir)
	n.proc.Stdout, n.proc.Stderr = log, log
	require.NoError(t, n.proc.Start())
	n.done = make(chan struct{})
	go func() { _ = n.proc.Wait(); close(n.done) }()
	t.Cleanup(func() { n.stop(syscall.SIGQUIT) })
	require.Eventually(t, func() bool { var one int; return query(n.url(), `SELECT 1`, &one) == nil },
		60*time.Second, 50*time.Millisecond, "%s takes connections", n.name)
}

// stop shuts the postmaster down (SIGINT fast, SIGQUIT immediate) and waits until it is gone.
func (n *node) stop(sig syscall.Signal) {
	if n.proc == nil {
		return
	}
	_ = n.proc.Process.Signal(sig)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		_ = n.proc.Process.Kill()
		<-n.done
	}
	n.proc = nil
}

// promote ends recovery: the replica becomes a primary and takes writes.
func (n *node) promote(t *testing.T) {
	var ok bool
	require.NoError(t, query(n.url(), `SELECT pg_promote(true, 60)`, &ok))
	require.True(t, ok, "pg_promote")
}

func (n *node) exec(t *testing.T, sql string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, n.url())
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err, "%s: %s", n.name, sql)
}

func query(url, sql string, dest any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dest)
}

func appendFile(t *testing.T, name, text string) {
	f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(text)
	require.NoError(t, errors.Join(err, f.Close()))
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// link is a TCP proxy between the replica and the primary: it can stop passing the primary's
// bytes on (hold) and drop them (drop), a network that fails before the primary does.
type link struct {
	port  int
	to    string
	mu    sync.Mutex
	held  chan struct{} // closed while passing bytes on; a new one while holding
	conns []net.Conn
}

func startLink(t *testing.T, upstream int) *link {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &link{port: ln.Addr().(*net.TCPAddr).Port, to: fmt.Sprintf("127.0.0.1:%d", upstream), held: make(chan struct{})}
	close(l.held)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", l.to)
			if err != nil {
				c.Close()
				continue
			}
			l.mu.Lock()
			l.conns = append(l.conns, c, up)
			l.mu.Unlock()
			go io.Copy(up, c) //nolint:errcheck // ends when either side closes
			go l.pass(c, up)
		}
	}()
	t.Cleanup(func() { ln.Close(); l.drop() })
	return l
}

// pass copies from up to c, waiting while the link holds.
func (l *link) pass(c, up net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		l.mu.Lock()
		held := l.held
		l.mu.Unlock()
		<-held
		up.SetReadDeadline(time.Now().Add(50 * time.Millisecond)) //nolint:errcheck // re-checks the hold
		n, err := up.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			c.Close()
			return
		}
	}
}

func (l *link) hold() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held = make(chan struct{})
}

// drop closes every connection, with the bytes it held.
func (l *link) drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.conns {
		c.Close()
	}
	l.conns = nil
	select {
	case <-l.held:
	default:
		close(l.held)
	}
}

// startServer builds hopper from this tree and runs `hopper serve` on url; it returns the
// server's base URL.
func startServer(t *testing.T, url string) string {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/hopperjobs/hopper").Output()
	require.NoError(t, err)
	bin := filepath.Join(t.TempDir(), "hopper")
	build := exec.Command("go", "build", "-o", bin, "./cmd/hopper")
	build.Dir = strings.TrimSpace(string(root))
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logPath := filepath.Join(t.TempDir(), "hopper.log")
	log, err := os.Create(logPath)
	require.NoError(t, err)
	defer log.Close()
	cmd := exec.Command(bin, "--database", url, "serve", "--addr", addr, "--no-echo")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		b, _ := os.ReadFile(logPath)
		t.Logf("hopper serve's log:\n%s", b)
	})
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 60*time.Second, 50*time.Millisecond, "hopper serve is ready")
	return base
}

// load enqueues jobs at a steady rate, each with its own idempotency key, retrying a failed
// enqueue with the same key until it is acknowledged, as a careful client does.
type load struct {
	quit chan struct{}
	done chan struct{}
	mu   sync.Mutex
	acks []ack
	log  []call
}

type ack struct {
	id string
	at time.Time
}

// call is one enqueue call: its time and its error, "" for success.
type call struct {
	at  time.Time
	err string
}

func startLoad(api *hopperclient.Client, perSecond int) *load {
	l := &load{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		tick := time.NewTicker(time.Second / time.Duration(perSecond))
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-l.quit:
				return
			case <-tick.C:
			}
			key := fmt.Sprintf("failover-%d", n)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				res, err := api.Enqueue(ctx, job{N: n}, &hopper.InsertOpts{IdempotencyKey: key})
				cancel()
				l.mu.Lock()
				if err == nil {
					l.log = append(l.log, call{at: time.Now()})
					l.acks = append(l.acks, ack{id: res.Job.ID, at: time.Now()})
					l.mu.Unlock()
					break
				}
				l.log = append(l.log, call{at: time.Now(), err: errClass(err)})
				l.mu.Unlock()
				select {
				case <-l.quit:
					return
				case <-time.After(100 * time.Millisecond): // the client's retry pace
				}
			}
		}
	}()
	return l
}

func (l *load) stop() ([]ack, []call) {
	close(l.quit)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.acks, l.log
}

// errClass is an error's message without ids, so that errors of one kind count together.
func errClass(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, " (request id"); i >= 0 {
		msg = msg[:i]
	}
	if errors.Is(err, hopper.ErrUnavailable) {
		msg = "[unavailable] " + msg
	}
	return msg
}

// ready polls /readyz and records the windows in which it did not answer 200.
type ready struct {
	quit    chan struct{}
	done    chan struct{}
	windows [][2]time.Time
}

func watchReady(base string) *ready {
	r := &ready{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		var down time.Time
		for {
			select {
			case <-r.quit:
				if !down.IsZero() {
					r.windows = append(r.windows, [2]time.Time{down, time.Now()})
				}
				return
			case <-time.After(50 * time.Millisecond): // the probe's period
			}
			resp, err := http.Get(base + "/readyz")
			ok := err == nil && resp.StatusCode == http.StatusOK
			if err == nil {
				resp.Body.Close()
			}
			switch {
			case !ok && down.IsZero():
				down = time.Now()
			case ok && !down.IsZero():
				r.windows = append(r.windows, [2]time.Time{down, time.Now()})
				down = time.Time{}
			}
		}
	}()
	return r
}

func (r *ready) stop() [][2]time.Time {
	close(r.quit)
	<-r.done
	return r.windows
}

// runs counts the handler's runs of each job, with their times.
type runs struct {
	mu    sync.Mutex
	n     map[string]int
	times []time.Time
}

func newRuns() *runs { return &runs{n: map[string]int{}} }

func (r *runs) add(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if id != "" {
		r.n[id]++
	}
	r.times = append(r.times, time.Now())
}

func (r *runs) twice() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	for id, n := range r.n {
		if n > 1 {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (r *runs) count(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[id]
}

// longestGap returns the longest stretch without a run: the run before it and the one after.
func (r *runs) longestGap() (from, to time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := 1; i < len(r.times); i++ {
		if r.times[i].Sub(r.times[i-1]) > to.Sub(from) {
			from, to = r.times[i-1], r.times[i]
		}
	}
	return from, to
}
