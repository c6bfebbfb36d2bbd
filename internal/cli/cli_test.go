package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/bench"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain makes bench's fresh SQLite stores copies of a migrated template
// (bench.FreshSQLite) and checks for leaked goroutines.
func TestMain(m *testing.M) {
	bench.FreshSQLite = sqlitetest.Write
	goleak.VerifyTestMain(m)
}

type testBundle struct {
	db string
}

// result is one run of the hopper command.
type result struct {
	stdout, stderr string
	code           int
}

// setup returns a bundle whose database is a fresh, migrated SQLite file (a copy of the
// test binary's migrated template: running every migration costs seconds under the race
// detector, and most tests begin with a database).
func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{db: sqlitetest.Path(t)}
}

// setupEmpty returns a bundle whose database file does not exist yet, for the tests of what
// creates or refuses a missing one.
func setupEmpty(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{db: t.TempDir() + "/hopper.db"}
}

// run runs hopper in-process against the bundle's database.
func (b *testBundle) run(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append([]string{"--database", b.db}, args...)
	code := run(t.Context(), args, strings.NewReader(""), &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// enqueue enqueues a job and returns its id.
func (b *testBundle) enqueue(t *testing.T, args ...string) string {
	t.Helper()
	res := b.run(t, append([]string{"enqueue"}, args...)...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	return strings.TrimSpace(res.stdout)
}

func TestMigratePrintsSchemaVersion(t *testing.T) {
	t.Parallel()
	b := setupEmpty(t)
	res := b.run(t, "migrate")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, fmt.Sprintf("schema version %d", sqlite.LatestVersion()))

	res = b.run(t, "migrate", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var out struct {
		SchemaVersion int `json:"schema_version"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	require.Equal(t, sqlite.LatestVersion(), out.SchemaVersion)
}

func TestEnqueueThenList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.enqueue(t, "send-email", `{"to":"a@example.com"}`, "--queue", "mail", "--priority", "7",
		"--header", "trace=abc", "--max-attempts", "3")

	res := b.run(t, "jobs", "ls", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var out struct {
		Jobs       []map[string]any `json:"jobs"`
		NextCursor *string          `json:"nextCursor"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	require.Len(t, out.Jobs, 1)
	job := out.Jobs[0]
	require.Equal(t, id, job["id"])
	require.Equal(t, "send-email", job["kind"])
	require.Equal(t, "mail", job["queue"])
	require.Equal(t, "queued", job["state"])
	require.EqualValues(t, 7, job["priority"])
	require.EqualValues(t, 3, job["maxAttempts"])
	require.Equal(t, map[string]any{"to": "a@example.com"}, job["args"])
	require.Equal(t, map[string]any{"trace": "abc"}, job["headers"])
	require.NotNil(t, out.NextCursor)
	require.Empty(t, *out.NextCursor)

	res = b.run(t, "jobs", "ls", "--state", "queued,scheduled", "--kind", "send-email", "--since", "1h")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "ATTEMPT")
	require.Contains(t, res.stdout, id)
	require.Contains(t, res.stdout, "0/3")
}

func TestListPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.enqueue(t, "a")
	second := b.enqueue(t, "b")

	res := b.run(t, "jobs", "ls", "--json", "--limit", "1")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var page struct {
		Jobs []struct {
			ID string `json:"id"`
		} `json:"jobs"`
		NextCursor string `json:"nextCursor"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &page))
	require.Len(t, page.Jobs, 1)
	require.Equal(t, second, page.Jobs[0].ID, "newest first")
	require.NotEmpty(t, page.NextCursor)

	res = b.run(t, "jobs", "ls", "--limit", "1", "--cursor", page.NextCursor)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, first)
}

// jobs ls shows when each job may run and its last error, on one line and cut.
func TestJobsLsShowsRunAtAndLastError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	names := docFixture(t, dir)
	b := &testBundle{db: dir + "/doc.db"}
	res := b.run(t, "jobs", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	require.Equal(t, []string{"ID", "KIND", "QUEUE", "STATE", "ATTEMPT", "CREATED", "RUN_AT", "LAST_ERROR"}, strings.Fields(lines[0]))
	row := func(id string) []string {
		for _, l := range lines {
			if strings.HasPrefix(l, id) {
				return strings.Fields(l)
			}
		}
		t.Fatalf("no row for %s in\n%s", id, res.stdout)
		return nil
	}
	report, err := time.ParseInLocation(tableTime, row(names["report"])[6], time.Local)
	require.NoError(t, err)
	created, err := time.ParseInLocation(tableTime, row(names["report"])[5], time.Local)
	require.NoError(t, err)
	require.InDelta(t, 10*time.Minute, report.Sub(created), float64(2*time.Second), "the delayed job's run-at")
	require.Equal(t, "-", row(names["invoice"])[7], "no error")
	require.Equal(t, "card declined: insufficient funds", strings.Join(row(names["charge1"])[7:], " "))

	long := strings.Repeat("word ", 30)
	require.Equal(t, "first line second …", oneLine("first line\nsecond "+long, 19))
	require.Len(t, []rune(oneLine(long+"\n"+long, 60)), 60)
}

func TestShowJSONHasEvents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.enqueue(t, "send-email")
	require.Equal(t, ExitOK, b.run(t, "jobs", "cancel", id).code)

	res := b.run(t, "jobs", "show", id, "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var out struct {
		Job      map[string]any   `json:"job"`
		Attempts []map[string]any `json:"attempts"`
		Events   []map[string]any `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	require.Equal(t, id, out.Job["id"])
	require.Equal(t, "canceled", out.Job["state"])
	require.NotNil(t, out.Attempts)
	require.Empty(t, out.Attempts)
	require.Len(t, out.Events, 2)
	require.Equal(t, "queued", out.Events[0]["to"])
	require.Equal(t, "queued", out.Events[1]["from"])
	require.Equal(t, "canceled", out.Events[1]["to"])

	res = b.run(t, "jobs", "show", id)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "queued → canceled")
}

func TestEnqueueInvalidArgs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "enqueue", "send-email", `{"to":`)
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, "args")
	require.Empty(t, res.stdout)
}

func TestEnqueueNegativeMaxAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "enqueue", "send-email", "--max-attempts", "-1")
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, "max_attempts")
}

func TestShowUnknownID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, ExitOK, b.run(t, "migrate").code)
	res := b.run(t, "jobs", "show", "no-such-job")
	require.Equal(t, ExitNotFound, res.code)
	require.Contains(t, res.stderr, "job no-such-job not found")

	require.Equal(t, ExitNotFound, b.run(t, "jobs", "cancel", "no-such-job").code)
}

func TestCancelTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.enqueue(t, "send-email", "--delay", "1h")
	res := b.run(t, "jobs", "cancel", id)
	require.Equal(t, ExitOK, res.code, res.stderr)

	res = b.run(t, "jobs", "cancel", id)
	require.Equal(t, ExitConflict, res.code)
	require.Contains(t, res.stderr, "already canceled")

	res = b.run(t, "jobs", "show", id, "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var shown struct {
		Events []struct {
			To    string `json:"to"`
			Actor string `json:"actor"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &shown))
	last := shown.Events[len(shown.Events)-1]
	require.Equal(t, "canceled", last.To)
	require.Equal(t, "operator", last.Actor, "a cancel from the CLI is an operator's")
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, args := range [][]string{
		{"enqueue"},                        // missing KIND
		{"jobs", "ls", "--no-such-flag"},   // unknown flag
		{"jobs", "ls", "--since", "later"}, // neither a time nor a duration
		{"jobs", "ls", "--state", "done"},  // unknown state
		{"enqueue", "k", "--header", "novalue"},
		{"enqueue", "k", "--run-at", "tomorrow"},
	} {
		res := b.run(t, args...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", args, res.stderr)
		require.NotEmpty(t, res.stderr, args)
	}
}

// The same commands work on PostgreSQL: --database takes a postgres:// URL, --schema the
// schema (created and migrated by migrate).
func TestPostgres(t *testing.T) {
	pgtest.Require(t)
	t.Parallel()
	b := setup(t)
	pg := []string{"--database", pgtest.URL(), "--schema", pgtest.FreshSchema(t, "hopper_cli_")}
	res := b.run(t, append(pg, "jobs", "ls")...)
	require.Equal(t, ExitUsage, res.code, "a reading command does not create the schema")
	require.Contains(t, res.stderr, "does not exist")
	res = b.run(t, append(pg, "migrate")...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, fmt.Sprintf("schema version %d", postgres.LatestVersion()))
	require.NotContains(t, res.stdout, "postgres://", "the URL (and any password in it) is not printed")

	res = b.run(t, append(pg, "enqueue", "send-email", `{"to":"a@example.com"}`)...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	id := strings.TrimSpace(res.stdout)
	res = b.run(t, append(pg, "jobs", "ls", "--json")...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, id)
	res = b.run(t, append(pg, "jobs", "cancel", id)...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	res = b.run(t, append(pg, "jobs", "show", id)...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "canceled")
}

func TestReadingCommandsNeedTheDatabase(t *testing.T) {
	t.Parallel()
	b := setupEmpty(t)
	res := b.run(t, "jobs", "ls")
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, "does not exist")
}

type boom struct{}

func (boom) Kind() string { return "boom" }

// TestShowPanic works a panicking job in-process, then checks that show prints where the
// handler panicked.
func TestShowPanic(t *testing.T) {
	t.Parallel()
	b := setup(t)
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: b.db})
	require.NoError(t, err)
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(context.Context, *hopper.Job[boom]) error { panic("kaboom") })
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, WorkerID: "test-worker"})
	require.NoError(t, err)
	require.NoError(t, client.Start(t.Context()))
	res, err := client.Enqueue(t.Context(), boom{}, &hopper.InsertOpts{MaxAttempts: 1})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		job, err := client.Get(t.Context(), res.Job.ID)
		require.NoError(t, err)
		return job.State == hopper.StateFailed
	}, 5*time.Second, 10*time.Millisecond)
	stoptest.Within(t, client, 10*time.Second)
	require.NoError(t, st.Close())

	out := b.run(t, "jobs", "show", res.Job.ID)
	require.Equal(t, ExitOK, out.code, out.stderr)
	require.Contains(t, out.stdout, "attempt 1, panic: kaboom")
	require.Contains(t, out.stdout, "cli_test.go")
	require.Contains(t, out.stdout, "test-worker")
}

func TestParseSince(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	got, err := parseSince("since", "90m", now)
	require.NoError(t, err)
	require.Equal(t, now.Add(-90*time.Minute), got)
	got, err = parseSince("since", "2026-02-01T00:00:00Z", now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), got)
	_, err = parseSince("since", "-1h", now)
	require.Equal(t, ExitUsage, exitCode(err))
}

func TestUnknownSubcommandAndBadCursorAreUsageErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.run(t, "migrate")
	res := b.run(t, "jobs", "frob")
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, `unknown command "frob"`)
	res = b.run(t, "jobs", "ls", "--cursor", "abc")
	require.Equal(t, ExitUsage, res.code, res.stderr)
	require.Contains(t, res.stderr, "cursor")
	res = b.run(t, "bench", "--synchronous", "bogus")
	require.Equal(t, ExitUsage, res.code, res.stderr)
}

// A database that can't be reached is exit code 6, like a server that can't be reached, so a
// script can tell "try again later" from a bug (1) and from bad input (2).
func TestUnreachableDatabaseIsUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	b := &testBundle{db: "postgres://postgres@" + addr + "/test?sslmode=disable&connect_timeout=2"}
	res := b.run(t, "jobs", "ls")
	require.Equal(t, ExitUnavailable, res.code, res.stderr)
}

// serve refuses a bad retention by its flag, not by the client's Config field, which the user
// never saw (found by FuzzFlags).
func TestServeNamesABadRetentionFlag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for flag, value := range map[string]string{"--result-ttl": "-1h", "--dead-letter-retention": "-1s",
		"--dead-letter-webhook": "ftp://example.com"} {
		res := b.run(t, "serve", "--addr", "127.0.0.1:0", flag, value)
		require.Equal(t, ExitUsage, res.code, "%s %s: %s", flag, value, res.stderr)
		require.Contains(t, res.stderr, "hopper: "+flag+": ", "%s %s", flag, value)
		require.NotContains(t, res.stderr, "Config.", "%s %s", flag, value)
	}
}

// A database that refuses the credentials is not "try again later": exit code 1, as the store
// itself classifies it, for every command (reading commands check the schema first).
func TestRefusedCredentialsAreNotUnavailable(t *testing.T) {
	pgtest.Require(t)
	t.Parallel()
	u, err := url.Parse(pgtest.URL())
	require.NoError(t, err)
	u.User = url.User("no_such_role_hopper")
	b := &testBundle{db: u.String()}
	for _, cmd := range [][]string{{"jobs", "ls"}, {"migrate"}} {
		res := b.run(t, cmd...)
		require.Equal(t, ExitInternal, res.code, "%v: %s", cmd, res.stderr)
		require.Contains(t, res.stderr, "no_such_role_hopper", "%v", cmd)
	}
}

// bench --compare-remote measures the same workload in process and through a server it starts
// itself, stream and poll, and prints each throughput with its ratio.
func TestBenchComparesInProcessWithTheServer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "bench", "--compare-remote", "--jobs", "100", "--workers", "10", "--batch", "50",
		"--latency-jobs", "-1", "--synchronous", "NORMAL")
	require.Equal(t, 0, res.code, res.stderr)
	for _, want := range []string{"in process", "server, stream", "server, poll", "× of in process"} {
		require.Contains(t, res.stdout, want)
	}
	res = b.run(t, "bench", "--compare-remote", "--server", "http://127.0.0.1:1")
	require.Equal(t, ExitUsage, res.code, res.stderr)

	// With --prefetch the stream's worker holds jobs beyond --workers; poll mode claims ahead.
	res = b.run(t, "bench", "--compare-remote", "--jobs", "100", "--workers", "10", "--batch", "50",
		"--latency-jobs", "-1", "--synchronous", "NORMAL", "--prefetch", "20", "--json")
	require.Equal(t, 0, res.code, res.stderr)
	var cmp struct {
		Stream, Poll struct {
			Jobs     int `json:"jobs"`
			Prefetch int `json:"prefetch"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &cmp))
	require.Equal(t, 100, cmp.Stream.Jobs)
	require.Equal(t, 20, cmp.Stream.Prefetch)
	require.Zero(t, cmp.Poll.Prefetch)
}
