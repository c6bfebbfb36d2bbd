package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// enqueue --merge-key K --merge P merges into the waiting job, on a database and through a
// server alike; a bad policy is a usage error naming the field.
func TestEnqueueMergeKey(t *testing.T) {
	b := startServer(t, false)
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"database": b.run, "server": b.remote} {
		kind := "digest-" + name
		res := runner(t, "enqueue", kind, `{"n":1}`, "--merge-key", "user-7", "--merge", "append")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		id := strings.TrimSpace(res.stdout)

		res = runner(t, "enqueue", kind, `{"n":2}`, "--merge-key", "user-7", "--merge", "append")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, id, strings.TrimSpace(res.stdout), name)
		require.Contains(t, res.stderr, "merged into the waiting job", name)

		res = runner(t, "enqueue", kind, `{"n":3}`, "--merge-key", "user-7", "--merge", "append", "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		var out struct {
			Job struct {
				ID       string          `json:"id"`
				Args     json.RawMessage `json:"args"`
				MergeKey string          `json:"mergeKey"`
			} `json:"job"`
			Merged bool `json:"merged"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
		require.True(t, out.Merged, name)
		require.Equal(t, id, out.Job.ID, name)
		require.Equal(t, "user-7", out.Job.MergeKey, name)

		res = runner(t, "jobs", "show", id, "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
		require.JSONEq(t, `[{"n":1},{"n":2},{"n":3}]`, string(out.Job.Args), name)

		res = runner(t, "enqueue", kind, "--merge-key", "user-7", "--merge", "squash")
		require.Equal(t, ExitUsage, res.code, name)
		require.Contains(t, res.stderr, "invalid merge", name)
		res = runner(t, "enqueue", kind, "--merge", "replace")
		require.Equal(t, ExitUsage, res.code, name)
		require.Contains(t, res.stderr, "merge_key", name)
	}
}
