package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// `kinds set` and `queues set` take --cap-per-key and --rate-per-key, through the server and
// on the database; `ls` shows them, in the table and in --json; bad values name the flag.
func TestLimitsPerKeyBothWays(t *testing.T) {
	b := startServer(t, false)
	b.enqueue(t, "render-pdf", "--queue", "reports", "--fairness-key", "tenant-a")
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"server": b.remote, "database": b.run} {
		res := runner(t, "kinds", "set", "render-pdf", "--cap-per-key", "2", "--rate-per-key", "10/1s")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "kind render-pdf capped at 2 running jobs per fairness key\n"+
			"kind render-pdf rate-limited to 10/1s per fairness key\n", res.stdout)
		res = runner(t, "queues", "set", "reports", "--cap-per-key", "3", "--rate-per-key", "5/1m")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)

		res = runner(t, "kinds", "ls", "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		var ks struct {
			Kinds []struct {
				CapPerKey  int    `json:"cap_per_key"`
				RatePerKey string `json:"rate_per_key"`
			} `json:"kinds"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &ks))
		require.Len(t, ks.Kinds, 1)
		require.Equal(t, 2, ks.Kinds[0].CapPerKey)
		require.Equal(t, "10/1s", ks.Kinds[0].RatePerKey)
		res = runner(t, "queues", "ls", "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		var qs struct {
			Queues []struct {
				CapPerKey  int    `json:"cap_per_key"`
				RatePerKey string `json:"rate_per_key"`
			} `json:"queues"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &qs))
		require.Len(t, qs.Queues, 1)
		require.Equal(t, 3, qs.Queues[0].CapPerKey)
		require.Equal(t, "5/1m", qs.Queues[0].RatePerKey)

		res = runner(t, "kinds", "ls")
		require.Regexp(t, `KIND\s+DISABLED\s+CAP\s+RATE\s+CAP/KEY\s+RATE/KEY\s+COMPACT`, res.stdout)
		require.Regexp(t, `render-pdf\s+no\s+-\s+-\s+2\s+10/1s\s+-`, res.stdout)
		res = runner(t, "queues", "ls")
		require.Regexp(t, `reports\s+no\s+-\s+-\s+-\s+3\s+5/1m`, res.stdout)

		for _, bad := range [][]string{{"--cap-per-key", "-1"}, {"--rate-per-key", "0/1s"}} {
			res = runner(t, append([]string{"kinds", "set", "render-pdf"}, bad...)...)
			require.Equal(t, ExitUsage, res.code, "%s: %v", name, bad)
			require.Contains(t, res.stderr, bad[0])
		}

		res = runner(t, "kinds", "set", "render-pdf", "--cap-per-key", "0", "--rate-per-key", "0")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "kind render-pdf uncapped per fairness key\nkind render-pdf not rate-limited per fairness key\n", res.stdout)
		res = runner(t, "queues", "set", "reports", "--cap-per-key", "0", "--rate-per-key", "0")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
	}
}
