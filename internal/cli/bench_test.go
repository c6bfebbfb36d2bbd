package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A scenario's flags are refused with a usage error that names them: a bad --rows or
// --rounds, --rows, --pin or --rounds without their scenario, the horizon scenario on SQLite, an unknown scenario, a bad
// --work or one with a scenario whose jobs are its own.
func TestBenchScenarioFlags(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", "retained", "--rows", "-1"}, "--rows"},
		{[]string{"--scenario", "retained", "--rows", "100000001"}, "--rows"},
		{[]string{"--rows", "5"}, "--rows"},
		{[]string{"--scenario", "fairness", "--rows", "5"}, "--rows"},
		{[]string{"--pin=false"}, "--pin"},
		{[]string{"--scenario", "horizon"}, "--scenario horizon"},
		{[]string{"--scenario", "horizon", "--pin=false"}, "--scenario horizon"},
		{[]string{"--scenario", "retained", "--server", "http://127.0.0.1:1"}, "--scenario retained"},
		{[]string{"--scenario", "frob"}, "--scenario"},
		{[]string{"--work", "-1ms"}, "--work"},
		{[]string{"--work", "61s"}, "--work"},
		{[]string{"--scenario", "soak", "--work", "1ms"}, "--work"},
		{[]string{"--scenario", "fairness", "--work", "1ms"}, "--work"},
		{[]string{"--scenario", "tenants", "--work", "1ms"}, "--work"},
		{[]string{"--scenario", "tenants", "--groups", "5"}, "--groups"},
		{[]string{"--scenario", "tenants", "--duration", "0"}, "--duration"},
		{[]string{"--scenario", "fairness", "--duration", "5s"}, "--duration"},
		{[]string{"--scenario", "compaction", "--server", "http://127.0.0.1:1"}, "--scenario compaction"},
		{[]string{"--prefetch", "5"}, "--prefetch"},
		{[]string{"--compare-remote", "--prefetch", "-1"}, "--prefetch"},
		{[]string{"--compare-remote", "--workers", "900", "--prefetch", "101"}, "--prefetch"},
		{[]string{"--server", "http://127.0.0.1:1", "--mode", "poll", "--prefetch", "5"}, "--prefetch"},
		{[]string{"--claim-ahead", "-2"}, "--claim-ahead"},
		{[]string{"--claim-ahead", "1001"}, "--claim-ahead"},
		{[]string{"--compare-remote", "--claim-ahead", "5"}, "--claim-ahead"},
		{[]string{"--server", "http://127.0.0.1:1", "--claim-ahead", "5"}, "--claim-ahead"},
		{[]string{"--scenario", "soak", "--claim-ahead", "5"}, "--claim-ahead"},
		{[]string{"--rounds", "3"}, "--rounds"},
		{[]string{"--scenario", "fairness", "--rounds", "3"}, "--rounds"},
		{[]string{"--scenario", "workflow", "--rounds", "0"}, "--rounds"},
		{[]string{"--scenario", "workflow", "--rounds", "21"}, "--rounds"},
	} {
		res := b.run(t, append([]string{"bench"}, c.args...)...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", c.args, res.stderr)
		require.Contains(t, res.stderr, c.want, "%v", c.args)
	}
}

// bench --scenario tenants runs its three runs and reports each: the quiet tenants' jobs all
// start in each run (those after the flood ran dry apart from the others), and none is lost.
func TestBenchTenants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "bench", "--scenario", "tenants", "--jobs", "300", "--workers", "5", "--duration", "1s",
		"--synchronous", "NORMAL", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &raw))
	for name, want := range map[string][2]any{"flood": {true, 300}, "no_flood": {true, 0}, "flood_no_keys": {false, 300}} {
		var run struct {
			FairnessKeys bool `json:"fairness_keys"`
			FloodJobs    int  `json:"flood_jobs"`
			QuietJobs    int  `json:"quiet_jobs"`
			QuietAfter   int  `json:"quiet_after_flood"`
		}
		require.NoError(t, json.Unmarshal(raw[name], &run), name)
		require.Equal(t, want[0], run.FairnessKeys, name)
		require.Equal(t, want[1], run.FloodJobs, name)
		require.Equal(t, 9, run.QuietJobs+run.QuietAfter, name) // nine quiet tenants, one job each in 1 s
	}
	require.Contains(t, raw, "p99_ratio")
}

// bench --scenario compaction compacts every group and counts the rows it wrote: each replaced
// job canceled and its lineage recorded, one new job per group.
func TestBenchCompaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "bench", "--scenario", "compaction", "--jobs", "100", "--groups", "10", "--synchronous", "NORMAL", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Equal(t, 10.0, got["groups_compacted"])
	require.Equal(t, 100.0, got["jobs_replaced"])
	require.Equal(t, 210.0, got["rows_written"])

	res = b.run(t, "bench", "--scenario", "compaction", "--jobs", "100", "--groups", "101")
	require.Equal(t, ExitUsage, res.code, res.stderr)
	require.Contains(t, res.stderr, "groups")
}

// bench --scenario retained fills the store, then measures, and says both.
func TestBenchRetained(t *testing.T) {
	t.Parallel()
	b := setup(t)
	small := []string{"bench", "--scenario", "retained", "--rows", "300", "--jobs", "50", "--workers", "5",
		"--batch", "50", "--latency-jobs", "5", "--rate", "500", "--synchronous", "NORMAL", "--bench-db", t.TempDir() + "/r.db"}
	res := b.run(t, small...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "retained         300 finished jobs")
	require.Contains(t, res.stdout, "throughput")
	require.Contains(t, res.stderr, "retained: 300 of 300 jobs")

	small[len(small)-1] = t.TempDir() + "/j.db"
	res = b.run(t, append(small, "--json")...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Equal(t, 300.0, got["retained_rows"])
	require.Contains(t, got, "db_bytes")
}

// bench --work makes every job take that long: 50 jobs of 20 ms on 5 workers take at least
// 200 ms, so no run of them reports more than 250 jobs a second; the report says how long
// each took.
func TestBenchWork(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "bench", "--jobs", "50", "--workers", "5", "--batch", "50", "--latency-jobs", "-1",
		"--work", "20ms", "--synchronous", "NORMAL", "--bench-db", t.TempDir()+"/w.db", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Equal(t, 20.0, got["work_ms"])
	require.LessOrEqual(t, got["jobs_per_sec"], 250.0, "each job slept 20 ms")
	require.Positive(t, got["jobs_per_sec"])
}

// bench --claim-ahead sets the in-process client's claiming ahead, and says so.
func TestBenchClaimAhead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	args := []string{"bench", "--jobs", "50", "--workers", "5", "--batch", "50", "--latency-jobs", "-1",
		"--synchronous", "NORMAL", "--claim-ahead", "-1"}
	res := b.run(t, args...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "5 workers (no claim ahead)")
	res = b.run(t, append(args[:len(args)-1], "20", "--json")...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Equal(t, 20.0, got["claim_ahead"])
}
