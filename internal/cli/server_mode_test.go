package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// serverBundle is a real server over the bundle's database, for --server runs.
type serverBundle struct {
	*testBundle
	url   string
	store *sqlitestore.Store
}

// startServer starts a server over a new database, requiring API keys when auth; mods change
// its configuration.
func startServer(t *testing.T, auth bool, mods ...func(*server.Config)) *serverBundle {
	t.Helper()
	b := setup(t)
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: b.db})
	require.NoError(t, err)
	client, err := hopper.NewClient(hopper.Config{Store: st, WorkerID: "cli-test-server"})
	require.NoError(t, err)
	require.NoError(t, client.Start(context.Background()))
	cfg := server.Config{Client: client, Keys: st}
	if auth {
		cfg.Auth = &server.KeyAuth{Keys: st}
	}
	for _, m := range mods {
		m(&cfg)
	}
	srv, err := server.New(cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		stoptest.Within(t, client, 10*time.Second)
		require.NoError(t, st.Close())
	})
	return &serverBundle{testBundle: b, url: ts.URL, store: st}
}

// remote runs hopper against the server only (no --database).
func (b *serverBundle) remote(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append([]string{"--server", b.url}, args...)
	code := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

func TestJobCommandsThroughAServer(t *testing.T) {
	b := startServer(t, false)
	res := b.remote(t, "enqueue", "send-email", `{"to":"a@example.com"}`, "--queue", "mail", "--header", "trace=abc")
	require.Equal(t, ExitOK, res.code, res.stderr)
	id := strings.TrimSpace(res.stdout)

	res = b.remote(t, "jobs", "ls", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var ls struct {
		Jobs []map[string]any `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &ls))
	require.Len(t, ls.Jobs, 1)
	require.Equal(t, id, ls.Jobs[0]["id"])
	require.Equal(t, "mail", ls.Jobs[0]["queue"])

	res = b.remote(t, "jobs", "show", id)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "send-email")

	res = b.remote(t, "jobs", "cancel", id)
	require.Equal(t, ExitOK, res.code, res.stderr)
	res = b.remote(t, "jobs", "cancel", id)
	require.Equal(t, ExitConflict, res.code, "canceling twice: %s", res.stderr)
	require.Contains(t, res.stderr, "already canceled")

	res = b.remote(t, "jobs", "events", id, "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var ev struct {
		Events []map[string]any `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &ev))
	require.Len(t, ev.Events, 2)

	res = b.remote(t, "jobs", "show", "01a2ffff-0000-7000-8000-000000000000")
	require.Equal(t, ExitNotFound, res.code, res.stderr)
	res = b.remote(t, "enqueue", "k", "{not json")
	require.Equal(t, ExitUsage, res.code, res.stderr)

	// The same database, read directly, agrees.
	direct := b.run(t, "jobs", "events", id)
	require.Equal(t, ExitOK, direct.code, direct.stderr)
	require.Contains(t, direct.stdout, "canceled with the CLI")
}

func TestQueueCommandsBothWays(t *testing.T) {
	b := startServer(t, false)
	b.enqueue(t, "k", "--queue", "reports")
	for _, runner := range []func(t *testing.T, args ...string) result{b.remote, b.run} {
		res := runner(t, "queues", "pause", "reports")
		require.Equal(t, ExitOK, res.code, res.stderr)
		res = runner(t, "queues", "ls", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		var out struct {
			Queues []struct {
				Name   string           `json:"name"`
				Paused bool             `json:"paused"`
				Counts map[string]int64 `json:"counts"`
			} `json:"queues"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
		require.Len(t, out.Queues, 1)
		require.Equal(t, "reports", out.Queues[0].Name)
		require.True(t, out.Queues[0].Paused)
		require.Equal(t, int64(1), out.Queues[0].Counts["queued"])

		res = runner(t, "queues", "resume", "reports")
		require.Equal(t, ExitOK, res.code, res.stderr)
		res = runner(t, "queues", "ls")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, "QUEUE")
		require.Regexp(t, `reports\s+no\s+-\s+-\s+-\s+-\s+-\s+0\s+0\s+1`, res.stdout)

		res = runner(t, "queues", "pause", "bad name")
		require.Equal(t, ExitUsage, res.code, res.stderr)

		res = runner(t, "queues", "set", "reports", "--weight", "3", "--cap", "7", "--rate", "5000/1h",
			"--key-weight", "customer-42=3", "--key-weight", "a=b=2")
		require.Equal(t, ExitOK, res.code, res.stderr)
		res = runner(t, "queues", "ls")
		require.Regexp(t, `reports\s+no\s+3\s+7\s+5000/1h\s+-\s+-\s+0\s+0\s+1`, res.stdout)
		res = runner(t, "queues", "ls", "--json")
		require.Contains(t, res.stdout, `"weight": 3`)
		require.Contains(t, res.stdout, `"max_running": 7`)
		require.Contains(t, res.stdout, `"rate": "5000/1h"`)
		require.Contains(t, res.stdout, `"customer-42": 3`)
		require.Contains(t, res.stdout, `"a=b": 2`, "the last = splits key and weight")
		for _, bad := range [][]string{{"--weight", "0", "--cap", "-1"}, {"--weight", "1001"}, {},
			{"--key-weight", "customer-42"}, {"--key-weight", "customer-42=x"}, {"--key-weight", "=3"},
			{"--weight", "2", "--key-weight", "customer-42=1001"}, {"--key-weight", "customer-42=-1"},
			{"--weight", "2", "--rate", "0/1s"}, {"--cap", "2", "--rate", "abc"}, {"--rate", "10/1y"}} {
			res = runner(t, append([]string{"queues", "set", "reports"}, bad...)...)
			require.Equal(t, ExitUsage, res.code, "%v: %s", bad, res.stderr)
		}
		require.Contains(t, res.stderr, "invalid --rate:", "the error names the flag")
		res = runner(t, "queues", "ls")
		require.Regexp(t, `reports\s+no\s+3\s+7\s+5000/1h\s+-\s+-\s+0\s+0\s+1`, res.stdout, "a refused set changes nothing")
		res = runner(t, "queues", "ls", "--json")
		require.Contains(t, res.stdout, `"customer-42": 3`, "a refused set changes no key weight")
		res = runner(t, "queues", "set", "reports", "--weight", "0", "--cap", "0", "--rate", "0",
			"--key-weight", "customer-42=0", "--key-weight", "a=b=1")
		require.Equal(t, ExitOK, res.code, res.stderr)
		res = runner(t, "queues", "ls", "--json")
		require.NotContains(t, res.stdout, "key_weights", "0 and 1 remove key weights")
		res = runner(t, "queues", "ls")
		require.Regexp(t, `reports\s+no\s+-\s+-\s+-\s+-\s+-\s+0\s+0\s+1`, res.stdout, "0 removes all three")
	}
}

func TestWorkersLsShowsNodesAndStreams(t *testing.T) {
	b := startServer(t, false)
	require.Eventually(t, func() bool {
		res := b.run(t, "workers", "ls")
		return res.code == ExitOK && strings.Contains(res.stdout, "cli-test-server")
	}, 10*time.Second, 20*time.Millisecond, "the server's node is registered")

	// A remote worker long-polls: the server knows it.
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		body := `{"worker":"poller-1","requestTimeout":"1s"}`
		resp, err := http.Post(b.url+"/hopper.v1.WorkerService/Activate", "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
	}()
	require.Eventually(t, func() bool {
		res := b.remote(t, "workers", "ls", "--json")
		return res.code == ExitOK && strings.Contains(res.stdout, `"name": "poller-1"`)
	}, 10*time.Second, 20*time.Millisecond)
	res := b.remote(t, "workers", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "WORKER")

	// No job runs in the server's process: its node is idle, from the database and through
	// the server alike.
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"server": b.remote, "database": b.run} {
		res = runner(t, "workers", "ls")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Regexp(t, `cli-test-server\s+\S+\s+\d+\s+.+ ago\s+idle since .+ ago\s+-\n`, res.stdout, name)
		res = runner(t, "workers", "ls", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, `"idle": true`, name)
	}
	select { // the poll ends (its 1 s timeout, on the server's clock) before the server stops
	case <-polled:
	case <-time.After(20 * time.Second):
		t.Fatal("the long poll did not end")
	}
}

func TestServerAuthExitCodes(t *testing.T) {
	b := startServer(t, true)
	plain, k, err := apikey.New("reader", []apikey.Scope{apikey.ScopeRead})
	require.NoError(t, err)
	require.NoError(t, b.store.KeyCreate(t.Context(), k))

	t.Setenv(envAPIKey, "")
	res := b.remote(t, "jobs", "ls")
	require.Equal(t, ExitAuth, res.code, res.stderr)
	require.Contains(t, res.stderr, envAPIKey)

	t.Setenv(envAPIKey, plain)
	res = b.remote(t, "jobs", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	res = b.remote(t, "enqueue", "k")
	require.Equal(t, ExitAuth, res.code, "a read key cannot enqueue: %s", res.stderr)
}

func TestUnreachableServerExitCode(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	ln.Close()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--server", url, "jobs", "ls"}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, ExitUnavailable, code, stderr.String())
}

// jobs cancel --reason records the reason in the job's history, on a database and through a
// server; a reason the rules refuse (too long, a NUL byte) is a usage error naming it, and
// cancels nothing.
func TestJobsCancelReasonBothWays(t *testing.T) {
	b := startServer(t, false)
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"server": b.remote, "database": b.run} {
		id := b.enqueue(t, "send-email", "--delay", "1h")
		for _, bad := range []string{strings.Repeat("x", hopper.MaxReasonBytes+1), "a\x00b"} {
			res := runner(t, "jobs", "cancel", id, "--reason", bad)
			require.Equal(t, ExitUsage, res.code, "%s: %s", name, res.stderr)
			require.Contains(t, res.stderr, "reason", name)
		}
		res := runner(t, "jobs", "cancel", id, "--reason", "customer asked to stop")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		res = runner(t, "jobs", "events", id, "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		var ev struct {
			Events []struct{ To, Actor, Reason string } `json:"events"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &ev))
		require.Len(t, ev.Events, 2, "%s: the bad reasons canceled nothing", name)
		require.Equal(t, "canceled", ev.Events[1].To)
		require.Equal(t, "operator", ev.Events[1].Actor)
		require.Equal(t, "customer asked to stop", ev.Events[1].Reason, name)
	}
}

// A --server URL the client cannot use (127.0.0.1:7070 has no scheme) is a usage error saying
// what to write, for every command, before it opens anything: no ./hopper.db is created.
func TestServerURLWithoutASchemeIsAUsageError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{{"jobs", "ls"}, {"dlq", "stats"}, {"keys", "ls"}, {"bench", "--jobs", "10"},
		{"migrate"}, {"enqueue", "x"}} {
		var stdout, stderr bytes.Buffer
		all := append([]string{"--database", dir + "/hopper.db", "--server", "127.0.0.1:7070"}, args...)
		code := run(t.Context(), all, strings.NewReader(""), &stdout, &stderr)
		require.Equal(t, ExitUsage, code, "%v: %s", args, stderr.String())
		require.Contains(t, stderr.String(),
			`hopper: invalid --server: "127.0.0.1:7070" has no scheme: write http://127.0.0.1:7070 (or https:// for a server with TLS)`, args)
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--server", "ftp://example.com", "jobs", "ls"}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, ExitUsage, code)
	require.Contains(t, stderr.String(), `invalid --server: "ftp://example.com" is not an http or https URL`)
	require.NoFileExists(t, dir+"/hopper.db")
}

func TestServeRefusesAnOpenAddressWithoutKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "serve", "--addr", "0.0.0.0:0")
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, "without API keys")
}

func TestServeAnswersHealthAndStopsOnSignal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		done <- run(ctx, []string{"--database", b.db, "serve", "--addr", addr}, strings.NewReader(""), &stdout, &stderr)
	}()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 10*time.Millisecond)

	// The built-in hopper.echo kind completes with its args as result.
	body := `{"job":{"kind":"hopper.echo","args":{"ping":1}}}`
	resp, err := http.Post("http://"+addr+"/hopper.v1.JobService/Enqueue", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	var enq struct {
		Job struct {
			ID string `json:"id"`
		} `json:"job"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&enq))
	resp.Body.Close()
	require.Eventually(t, func() bool {
		res := b.run(t, "jobs", "show", enq.Job.ID, "--json")
		return res.code == ExitOK && strings.Contains(res.stdout, `"state": "completed"`) &&
			strings.Contains(res.stdout, `"ping": 1`)
	}, 10*time.Second, 20*time.Millisecond)

	cancel()
	select {
	case code := <-done:
		require.Equal(t, ExitOK, code)
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestKeysThroughAServer(t *testing.T) {
	b := startServer(t, true)
	admin, k, err := apikey.New("ops", []apikey.Scope{apikey.ScopeAdmin})
	require.NoError(t, err)
	require.NoError(t, b.store.KeyCreate(t.Context(), k))
	t.Setenv(envAPIKey, admin)

	res := b.remote(t, "keys", "create", "--name", "workers", "--scope", "work", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var created struct {
		Key    string   `json:"key"`
		Scopes []string `json:"scopes"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &created))
	require.True(t, strings.HasPrefix(created.Key, apikey.Prefix))
	require.Equal(t, []string{"work"}, created.Scopes)

	res = b.remote(t, "keys", "create", "--name", "workers", "--scope", "work")
	require.Equal(t, ExitConflict, res.code, res.stderr)
	res = b.remote(t, "keys", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "workers")
	require.Contains(t, res.stdout, "ops")
	res = b.remote(t, "keys", "revoke", "workers")
	require.Equal(t, ExitOK, res.code, res.stderr)
	res = b.remote(t, "keys", "revoke", "nope")
	require.Equal(t, ExitNotFound, res.code, res.stderr)

	t.Setenv(envAPIKey, created.Key)
	res = b.remote(t, "keys", "ls")
	require.Equal(t, ExitAuth, res.code, "a revoked key: %s", res.stderr)
}

func TestJobsResume(t *testing.T) {
	b := startServer(t, false)
	post := func(method, body string) string {
		resp, err := http.Post(b.url+"/hopper.v1."+method, "application/json", strings.NewReader(body))
		require.NoError(t, err)
		defer resp.Body.Close()
		var out bytes.Buffer
		_, err = out.ReadFrom(resp.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, out.String())
		return out.String()
	}
	suspend := func() string {
		id := b.enqueue(t, "approve")
		var act struct {
			Jobs []struct {
				ID         string `json:"id"`
				LeaseToken string `json:"leaseToken"`
			} `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal([]byte(post("WorkerService/Activate", `{"worker":"w"}`)), &act))
		require.Equal(t, id, act.Jobs[0].ID)
		post("WorkerService/Suspend", `{"id":"`+id+`","leaseToken":"`+act.Jobs[0].LeaseToken+`"}`)
		return id
	}
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"server": b.remote, "database": b.run} {
		id := suspend()
		res := runner(t, "jobs", "resume", id, "--data", `{"approved":true}`, "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Contains(t, res.stdout, `"state": "queued"`)
		res = runner(t, "jobs", "show", id)
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Regexp(t, `resume data\s+\{"approved":true\}`, res.stdout)
		res = runner(t, "jobs", "resume", id)
		require.Equal(t, ExitConflict, res.code, name)
		require.Contains(t, res.stderr, "not suspended")
		res = runner(t, "jobs", "resume", id, "--data", "{nope")
		require.Equal(t, ExitUsage, res.code, name)
		// Clear the queue for the next round.
		post("WorkerService/Activate", `{"worker":"w"}`)
	}
}

// hopper serve on PostgreSQL listens for notifications (a job committed by any node wakes its
// workers and streams at once) and keeps a pool of --conns connections, unlike the short
// commands, which take two connections and no LISTEN.
func TestServeOnPostgresListens(t *testing.T) {
	pgtest.Require(t)
	t.Parallel()
	schema := pgtest.FreshSchema(t, "hopper_serve_")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		var stdout bytes.Buffer
		done <- run(ctx, []string{"--database", pgtest.URL(), "--schema", schema, "serve", "--addr", addr, "--conns", "6"},
			strings.NewReader(""), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("hopper serve did not stop within 20 s")
		}
	})
	conn, err := pgx.Connect(t.Context(), pgtest.URL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.Eventually(t, func() bool {
		var n int
		err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE query = $1`,
			"LISTEN "+pgx.Identifier{schema + "_jobs"}.Sanitize()).Scan(&n)
		return err == nil && n == 1
	}, 15*time.Second, 50*time.Millisecond, "hopper serve LISTENs on its schema's channel")
	resp, err := http.Get("http://" + addr + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	res := setup(t).run(t, "serve", "--conns", "0")
	require.Equal(t, ExitUsage, res.code)
}

// A negative --stream-keepalive is a usage error naming the flag (0 turns keepalives off).
func TestServeRefusesANegativeStreamKeepalive(t *testing.T) {
	res := setup(t).run(t, "serve", "--stream-keepalive", "-1s")
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, "--stream-keepalive -1s")
}
