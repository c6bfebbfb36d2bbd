//go:build chaos

package chaos

import (
	"context"
	"syscall"
	"time"

	"fmt"
	"github.com/jackc/pgx/v5"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// pgProxy is a TCP proxy between `hopper serve` and PostgreSQL (toxiproxy, in process): it can
// cut the connection, slow it down and reset it.
type pgProxy struct {
	t     *testing.T
	proxy *toxiproxy.Proxy
	addr  string
}

// newPGProxy starts a proxy to upstream (host:port) on a free loopback port.
func newPGProxy(t *testing.T, upstream string) *pgProxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "postgres", "127.0.0.1:0", upstream)
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
	return &pgProxy{t: t, proxy: p, addr: p.Listen}
}

// cut closes every connection and refuses new ones until restore.
func (p *pgProxy) cut() { p.proxy.Stop() }

// restore accepts connections again, on the same address.
func (p *pgProxy) restore() { require.NoError(p.t, p.proxy.Start()) }

// toxic adds a toxic, e.g. latency: {"type": "latency", "attributes": {"latency": 200}};
// the returned function removes it.
func (p *pgProxy) toxic(name, typ, stream string, attributes map[string]any) (remove func()) {
	p.t.Helper()
	body := fmt.Sprintf(`{"name": %q, "type": %q, "stream": %q, "attributes": %s}`, name, typ, stream, jsonOf(attributes))
	_, err := p.proxy.Toxics.AddToxicJson(strings.NewReader(body))
	require.NoError(p.t, err, "add toxic %s", body)
	return func() { require.NoError(p.t, p.proxy.Toxics.RemoveToxic(p.t.Context(), name)) }
}

// viaProxy returns the PostgreSQL URL u with its host and port replaced by the proxy's.
func (p *pgProxy) viaProxy(u string) string {
	parsed, err := url.Parse(u)
	require.NoError(p.t, err)
	parsed.Host = p.addr
	return parsed.String()
}

// hostPort returns the host:port of a PostgreSQL URL.
func hostPort(t *testing.T, u string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	require.NoError(t, err)
	if parsed.Port() == "" {
		return net.JoinHostPort(parsed.Hostname(), "5432")
	}
	return parsed.Host
}

// pgCluster is a throwaway PostgreSQL server of the test's own, on a free port: the one the
// test may stop and restart (never the machine's shared server on 5432). Its postmaster is a
// child of the test process running as the postgres user (PostgreSQL refuses to run as
// root), so it dies with the test.
type pgCluster struct {
	t    *testing.T
	bin  string // the directory of initdb and postgres
	cred *syscall.Credential
	dir  string
	args []string
	URL  string
	proc *exec.Cmd
	done chan struct{}
}

// startPGCluster creates and starts a cluster. It skips (fails under CI=true) when the
// binaries or the postgres user are missing.
func startPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	bin := postgresBin()
	if bin == "" {
		requireOrSkip(t, "no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (install postgresql)")
	}
	pgUser, err := user.Lookup("postgres")
	if err != nil {
		requireOrSkip(t, "no postgres user to run a throwaway PostgreSQL as: %v", err)
	}
	uid, _ := strconv.Atoi(pgUser.Uid)
	gid, _ := strconv.Atoi(pgUser.Gid)
	dir := tempDir(t, "hopper-chaos-pg-")
	require.NoError(t, os.Chown(dir, uid, gid))
	c := &pgCluster{t: t, bin: bin, dir: dir, cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	data := filepath.Join(dir, "data")
	out, err := c.cmd("initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8").CombinedOutput()
	require.NoError(t, err, "initdb: %s", out)
	port := freePort(t)
	c.args = []string{"-D", data, "-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1",
		"-c", "fsync=off", "-c", "max_connections=50"}
	c.URL = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	c.start()
	t.Cleanup(func() {
		c.stop(syscall.SIGQUIT)
		logTailsOnFailure(t, dir, "postgres.log")
	}) // before dir is removed (cleanups run last first)
	return c
}

// start starts the postmaster and waits until it takes connections.
func (c *pgCluster) start() {
	c.t.Helper()
	log, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(c.t, err)
	defer log.Close()
	cmd := c.cmd("postgres", c.args...)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(c.t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	c.proc, c.done = cmd, done
	require.True(c.t, pollUntil(60*time.Second, 50*time.Millisecond, func() bool {
		ctx, cancel := context.WithTimeout(c.t.Context(), time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.URL)
		if err != nil {
			return false
		}
		conn.Close(ctx)
		return true
	}), "the throwaway PostgreSQL takes connections")
}

// stop shuts the postmaster down as pg_ctl would: SIGINT is a fast shutdown (sessions are
// terminated, a clean checkpoint), SIGQUIT an immediate one (like a crash: recovery at the
// next start). It waits until it is gone.
func (c *pgCluster) stop(sig syscall.Signal) {
	if c.proc == nil {
		return
	}
	_ = c.proc.Process.Signal(sig)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.proc.Process.Kill()
		<-c.done
	}
	c.proc = nil
}

// restart stops the server (mode fast or immediate), leaves it down for down, and starts it
// again.
func (c *pgCluster) restart(mode string, down time.Duration) {
	c.t.Helper()
	c.stop(map[string]syscall.Signal{"fast": syscall.SIGINT, "immediate": syscall.SIGQUIT}[mode])
	time.Sleep(down) // real time: the outage the hopper process lives through, on its wall clock
	c.start()
}

func (c *pgCluster) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// postgresBin returns the bin directory of the newest PostgreSQL installed, or "".
func postgresBin() string {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return ""
	}
	sort.Slice(found, func(i, j int) bool { return versionOf(found[i]) < versionOf(found[j]) })
	return filepath.Dir(found[len(found)-1])
}

func versionOf(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// freePort returns a loopback TCP port nobody listens on (for a process that takes a port
// number, not a listener).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
