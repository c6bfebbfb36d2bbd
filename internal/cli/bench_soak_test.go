package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// bench --scenario soak refuses a bad duration, interval, rate, TTL or sweep interval with a
// usage error that names the flag, before it runs anything.
func TestBenchSoakRefusesBadFlags(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct{ flag, value, named string }{
		{"--duration", "0", "--duration"},
		{"--duration", "-1s", "duration"},
		{"--duration", "10s", "duration"}, // shorter than one row (1m)
		{"--soak-interval", "0", "--soak-interval"},
		{"--soak-interval", "-1m", "--soak-interval"},
		{"--rate", "-1", "rate"},
		{"--result-ttl", "-1s", "result ttl"},
		{"--sweep-interval", "1ms", "sweep interval"},
		{"--vacuum-every", "-1s", "vacuum every"},
	} {
		res := b.run(t, "bench", "--scenario", "soak", c.flag, c.value)
		require.Equal(t, ExitUsage, res.code, "%s %s: %s", c.flag, c.value, res.stderr)
		require.Contains(t, res.stderr, c.named, "%s %s", c.flag, c.value)
	}
	res := b.run(t, "bench", "--scenario", "soak", "--compare-remote")
	require.Equal(t, ExitUsage, res.code, res.stderr)
}

// A two-second soak prints its rows and verdicts, and with --json the rows and the summary.
func TestBenchSoakRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	args := []string{"bench", "--scenario", "soak", "--duration", "2s", "--soak-interval", "1s", "--rate", "50",
		"--workers", "5", "--result-ttl", "1s", "--sweep-interval", "500ms", "--synchronous", "NORMAL"}
	res := b.run(t, args...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	for _, want := range []string{"claim99", "store            sqlite", "50 enqueues/s", "verdicts", "jobs_rows"} {
		require.Contains(t, res.stdout, want)
	}
	require.NotContains(t, res.stdout, "measuring the maximum", "--rate was given")

	res = b.run(t, append(args, "--json")...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	var out struct {
		Rows    []map[string]any `json:"rows"`
		Summary map[string]any   `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.TrimSpace(res.stdout)), &out), res.stdout)
	require.Len(t, out.Rows, 2)
	require.Contains(t, out.Rows[0], "claim_p99_ms")
	require.EqualValues(t, 50, out.Summary["rate"])
}
