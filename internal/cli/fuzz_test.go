package cli

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/bench"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

// FuzzParseSince feeds --since/--until any value. It must never panic; what it refuses is a
// usage error (exit code 2) naming the flag; what it accepts is an RFC 3339 time or a time
// before now.
func FuzzParseSince(f *testing.F) {
	for _, seed := range []string{"1h", "90m", "2026-03-01T12:00:00Z", "2026-03-01T12:00:00+05:30", "-1h", "",
		"1e9h", "9999999999h", "2026-13-01T00:00:00Z", "P1D", "\x00", "1h\xff"} {
		f.Add(seed)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, value string) {
		got, err := parseSince("since", value, now)
		if err != nil {
			if exitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--since") {
				t.Fatalf("parseSince(%q) = %v (exit %d), want a usage error naming --since", value, err, exitCode(err))
			}
			return
		}
		if _, perr := time.Parse(time.RFC3339, value); perr != nil && got.After(now) {
			t.Fatalf("parseSince(%q) = %s, after now", value, got)
		}
	})
}

// flagCase is a flag whose value the CLI parses, with a command line that is otherwise good
// and quick to run.
type flagCase struct {
	args []string
	flag string
	// slow, when set, tells the integer values that would make the run slow (an amount of
	// work, or its default): those are not run. A duration flag's values are given to it in
	// nanoseconds.
	slow func(n int64) bool
}

// isSlow says whether value, read as an integer or as a duration (in nanoseconds), is one of
// c's slow values.
func (c flagCase) isSlow(value string) bool {
	if c.slow == nil {
		return false
	}
	if n, err := strconv.ParseInt(value, 0, 64); err == nil {
		return c.slow(n)
	}
	d, err := time.ParseDuration(value)
	return err == nil && c.slow(int64(d))
}

// Integer values of bench's flags that take their time: more work than 20 jobs (or the
// default, for 0), or a latency phase slower than 100 enqueues a second.
var (
	work     = func(n int64) bool { return n == 0 || n > 20 }
	slowPace = func(n int64) bool { return n >= 0 && n < 100 }
	longJobs = func(n int64) bool { return time.Duration(n) > time.Second } // --work
)

var (
	enqueueCmd    = []string{"enqueue", "fuzz", "{}"}
	jobsLsCmd     = []string{"jobs", "ls"}
	dlqLsCmd      = []string{"dlq", "ls"}
	dlqReplayCmd  = []string{"dlq", "replay", "--all", "--yes"}
	dlqReplaysCmd = []string{"dlq", "replays"}
	dlqRetryCmd   = []string{"dlq", "retry", "--all", "--yes"}
	// jobsRetryCmd names a job the fuzz database does not hold: flags that pass lead to exit 3.
	jobsRetryCmd   = []string{"jobs", "retry", "01a2ffff-0000-7000-8000-000000000000"}
	previewCmd     = []string{"schedules", "preview", "--cron", "@daily"}
	scheduleCmd    = []string{"schedules", "add", "fuzz", "--kind", "fuzz", "--cron", "@daily"}
	scheduleNoSpec = []string{"schedules", "add", "fuzz", "--kind", "fuzz"}
	serveCmd       = []string{"serve", "--addr", "127.0.0.1:0", "--no-echo"}
	queuesSetCmd   = []string{"queues", "set", "fuzz"}
	benchCmd       = []string{"bench", "--jobs", "1", "--workers", "1", "--batch", "1", "--latency-jobs", "1", "--synchronous", "NORMAL"}
	kindsSetCmd    = []string{"kinds", "set", "fuzz"}
	// benchOneJob works one job and skips the latency phase: any rate limit lets one start
	// at once (a bucket starts full), so no --kind-rate value makes it slow.
	benchOneJob = []string{"bench", "--jobs", "1", "--workers", "1", "--batch", "1", "--latency-jobs", "-1", "--synchronous", "NORMAL"}
	// compactionCmd is the compaction scenario on one job.
	compactionCmd = []string{"bench", "--scenario", "compaction", "--jobs", "1", "--synchronous", "NORMAL"}
	// workflowCmd is the workflow scenario on one workflow.
	workflowCmd = []string{"bench", "--scenario", "workflow", "--jobs", "11", "--workers", "1", "--latency-jobs", "-1", "--synchronous", "NORMAL"}
	// retainedCmd is the retained scenario on one job.
	retainedCmd = append([]string{"bench", "--scenario", "retained"}, benchOneJob[1:]...)
)

// flagCases are the flags FuzzFlags feeds. FuzzFlags fails when a command has a flag with a
// number or a duration (or a time, a cursor, a zone or a spec) that is missing here. The
// corpus (testdata/fuzz/FuzzFlags) names a case by its index: add new cases at the end.
var flagCases = []flagCase{
	{enqueueCmd, "delay", nil}, {enqueueCmd, "timeout", nil}, {enqueueCmd, "priority", nil},
	{enqueueCmd, "max-attempts", nil}, {enqueueCmd, "run-at", nil},
	{jobsLsCmd, "limit", nil}, {jobsLsCmd, "since", nil}, {jobsLsCmd, "until", nil}, {jobsLsCmd, "cursor", nil},
	{dlqLsCmd, "limit", nil}, {dlqLsCmd, "since", nil}, {dlqLsCmd, "until", nil}, {dlqLsCmd, "cursor", nil},
	{dlqReplayCmd, "limit", nil}, {dlqReplayCmd, "since", nil}, {dlqReplayCmd, "until", nil},
	{dlqReplaysCmd, "limit", nil}, {dlqReplaysCmd, "since", nil}, {dlqReplaysCmd, "cursor", nil},
	{previewCmd, "from", nil}, {previewCmd, "count", nil}, {previewCmd, "tz", nil},
	{[]string{"schedules", "preview"}, "cron", nil},
	{scheduleCmd, "timeout", nil}, {scheduleCmd, "jitter", nil}, {scheduleCmd, "priority", nil},
	{scheduleCmd, "max-attempts", nil}, {scheduleCmd, "tz", nil},
	{scheduleNoSpec, "every", nil}, {scheduleNoSpec, "fixed-delay", nil}, {scheduleNoSpec, "cron", nil},
	{serveCmd, "max-body-bytes", nil}, {serveCmd, "max-streams-per-key", nil}, {serveCmd, "max-polls-per-key", nil},
	{serveCmd, "shutdown-grace", nil}, {serveCmd, "read-header-timeout", nil}, {serveCmd, "stalled-after", nil},
	{serveCmd, "result-ttl", nil}, {serveCmd, "dead-letter-retention", nil},
	{benchCmd, "rate", slowPace}, {benchCmd, "kind-cap", nil}, {benchCmd, "conns", nil}, {benchCmd, "jobs", work},
	{benchCmd, "workers", work}, {benchCmd, "batch", work}, {benchCmd, "latency-jobs", work},
	{enqueueCmd, "max-rescues", nil}, {serveCmd, "max-rescues", nil}, {serveCmd, "conns", nil},
	{serveCmd, "max-cpu", nil}, {serveCmd, "max-memory", nil},
	{queuesSetCmd, "weight", nil}, {queuesSetCmd, "cap", nil}, {queuesSetCmd, "cap-per-key", nil},
	{kindsSetCmd, "cap", nil}, {kindsSetCmd, "cap-per-key", nil},
	{queuesSetCmd, "rate", nil}, {kindsSetCmd, "rate", nil},
	{benchOneJob, "kind-rate", nil},
	{serveCmd, "log-format", nil}, {serveCmd, "log-level", nil},
	{retainedCmd, "rows", work},
	{benchOneJob, "duration", nil}, {benchOneJob, "soak-interval", nil}, {benchOneJob, "result-ttl", nil},
	{benchOneJob, "sweep-interval", nil}, {benchOneJob, "vacuum-every", nil},
	{benchOneJob, "work", longJobs},
	{benchOneJob, "prefetch", nil}, {benchOneJob, "claim-ahead", nil},
	{[]string{"schedules", "show", "fuzz"}, "count", nil},
	{serveCmd, "stream-keepalive", nil},
	{dlqRetryCmd, "limit", nil}, {dlqRetryCmd, "retries", nil}, {dlqRetryCmd, "since", nil}, {dlqRetryCmd, "until", nil},
	{jobsRetryCmd, "retries", nil}, {jobsRetryCmd, "run-at", nil},
	{[]string{"kinds", "compact", "fuzz"}, "over", nil},
	{kindsSetCmd, "compact-over", nil},
	{compactionCmd, "groups", work},
	{[]string{"workflows", "ls"}, "limit", nil}, {[]string{"workflows", "ls"}, "cursor", nil},
	// Any valid --rounds runs the whole workflow scenario (its fan-in of 10,000 parents too).
	{workflowCmd, "rounds", func(n int64) bool { return n >= 1 && n <= bench.MaxRounds }},
}

// aboutOneJob are the commands of flagCases that name a job the fuzz database does not hold:
// a value they accept ends in exit 3 (not found) instead of 0.
var aboutOneJob = map[string]bool{"jobs retry": true}

// parsedStrings are string flags the CLI parses (times, cursors, zones, specs).
var parsedStrings = map[string]bool{"since": true, "until": true, "run-at": true, "from": true, "cursor": true,
	"tz": true, "cron": true, "rate": true, "kind-rate": true}

// requireEveryParsedFlag fails when a command has a parsed flag that no case feeds.
func requireEveryParsedFlag(tb testing.TB) {
	tb.Helper()
	covered := map[string]bool{}
	for _, c := range flagCases {
		covered[commandPath(c.args)+" --"+c.flag] = true
	}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.LocalNonPersistentFlags().VisitAll(func(fl *pflag.Flag) {
			switch fl.Value.Type() {
			case "string", "stringSlice", "stringArray", "bool", "stringToString":
				if !parsedStrings[fl.Name] {
					return
				}
			}
			name := strings.TrimPrefix(cmd.CommandPath(), "hopper ") + " --" + fl.Name
			if !covered[name] {
				tb.Errorf("FuzzFlags does not feed %s (%s): add it to flagCases", name, fl.Value.Type())
			}
		})
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
}

// commandPath is the subcommands at the start of args: "dlq replay".
func commandPath(args []string) string {
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || len(words) > 0 && !isSubcommand(words, a) {
			break
		}
		words = append(words, a)
	}
	return strings.Join(words, " ")
}

func isSubcommand(parent []string, name string) bool {
	cmd, _, err := newRootCmd().Find(append(parent, name))
	return err == nil && cmd.Name() == name
}

// FuzzFlags runs the hopper command with any value for each flag the CLI parses as a number,
// a duration, a time, a cursor, a zone or a spec (from the table flagCases, which FuzzFlags
// checks against the command tree), against one SQLite file for the whole fuzz run. It never
// panics or hangs; it exits 0 or, for a value it refuses, 2 with a message that names the
// flag. `serve` is stopped as soon as it listens.
func FuzzFlags(f *testing.F) {
	requireEveryParsedFlag(f)
	db := filepath.Join(f.TempDir(), "hopper.db")
	var stderr bytes.Buffer
	require.Equal(f, ExitOK, run(f.Context(), []string{"--database", db, "migrate"}, strings.NewReader(""), io.Discard, &stderr), stderr.String())
	for i, c := range flagCases {
		for _, v := range seedValues[flagType(f, c)] {
			f.Add(uint8(i), v)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		c := flagCases[int(which)%len(flagCases)]
		if c.isSlow(value) {
			return // keep each input quick
		}
		runFlag(t, db, c, value)
	})
}

// seedValues are the seeds of each type of flag (few: every seed runs before fuzzing starts,
// and CI fuzzes each target for seconds).
var seedValues = map[string][]string{
	"duration":  {"1h", "0", "-1s", "2562048h"},
	"int":       {"1", "0", "-1", "9223372036854775808"},
	"string":    {"2026-03-01T12:00:00Z", "1h", "aG9wcGVyLWxpc3QtdjE6eA", "\xff"},
	"fraction":  {"0.8", "80%", "1.5", "NaN"},
	"size":      {"2GiB", "0", "1e400", "9999999TiB"},
	"logFormat": {"json", "text", "xml", ""},
	"logLevel":  {"debug", "WARN", "loud", ""},
}

// flagType is the type of c's flag, as seedValues names it.
func flagType(tb testing.TB, c flagCase) string {
	tb.Helper()
	cmd, rest, err := newRootCmd().Find(c.args)
	require.NoError(tb, err, "%v", c.args)
	require.NotEqual(tb, len(c.args), len(rest), "%v names no command", c.args)
	fl := cmd.Flags().Lookup(c.flag)
	require.NotNil(tb, fl, "%s has no --%s", cmd.CommandPath(), c.flag)
	switch t := fl.Value.Type(); t {
	case "int64", "int32":
		return "int"
	default:
		return t
	}
}

// runFlag runs c's command line with value for its flag and checks the exit.
func runFlag(t *testing.T, db string, c flagCase, value string) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	args := append(append([]string{"--database", db}, c.args...), "--"+c.flag+"="+value)
	stdout := &cancelOn{marker: "hopper serving on", cancel: cancel}
	var stderr bytes.Buffer
	code := run(ctx, args, strings.NewReader(""), stdout, &stderr)
	require.NotErrorIs(t, ctx.Err(), context.DeadlineExceeded, "hopper %q did not finish", args)
	if code == ExitNotFound && aboutOneJob[commandPath(c.args)] {
		code = ExitOK
	}
	switch code {
	case ExitOK:
	case ExitUsage:
		msg := stderr.String()
		named := strings.Contains(msg, c.flag) || strings.Contains(msg, strings.ReplaceAll(c.flag, "-", "_")) ||
			strings.Contains(msg, strings.ReplaceAll(c.flag, "-", " "))
		require.True(t, named, "hopper %q: the usage error does not name --%s: %s", args, c.flag, msg)
	default:
		t.Fatalf("hopper %q exited %d, want 0 or 2: %s", args, code, stderr.String())
	}
}

// cancelOn is an output that calls cancel once marker has been written: it stops `serve`
// when it listens.
type cancelOn struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel func()
}

func (w *cancelOn) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.marker) {
		w.cancel()
	}
	return len(p), nil
}
