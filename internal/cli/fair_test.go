package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// enqueue --fairness-key keeps the key on the job, shown by jobs show and selected by jobs ls
// --fairness-key, on a database and through a server alike; a bad key is a usage error naming
// the field.
func TestEnqueueFairnessKey(t *testing.T) {
	b := startServer(t, false)
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"database": b.run, "server": b.remote} {
		res := runner(t, "enqueue", "export-"+name, "--fairness-key", "customer-42")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		id := strings.TrimSpace(res.stdout)

		res = runner(t, "jobs", "show", id, "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		var out struct {
			Job struct {
				FairnessKey string `json:"fairnessKey"`
			} `json:"job"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
		require.Equal(t, "customer-42", out.Job.FairnessKey, name)
		res = runner(t, "jobs", "show", id)
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Regexp(t, `fairness key\s+customer-42`, res.stdout, name)

		other := strings.TrimSpace(runner(t, "enqueue", "export-"+name, "--fairness-key", "customer, 7").stdout)
		runner(t, "enqueue", "export-"+name)
		res = runner(t, "jobs", "ls", "--kind", "export-"+name, "--fairness-key", "customer-42", "--fairness-key", "customer, 7", "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		var page struct {
			Jobs []struct {
				ID string `json:"id"`
			} `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &page), res.stdout)
		require.Len(t, page.Jobs, 2, name)
		require.Equal(t, []string{other, id}, []string{page.Jobs[0].ID, page.Jobs[1].ID}, name)

		res = runner(t, "enqueue", "export-"+name, "--fairness-key", strings.Repeat("k", 129))
		require.Equal(t, ExitUsage, res.code, name)
		require.Contains(t, res.stderr, "fairness_key", name)
	}
}
