package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// --max-rescues sets a job's bound on rescues, directly and through a server; jobs show and
// --json show it with the rescues so far; a bad value is a usage error naming the field.
func TestEnqueueMaxRescues(t *testing.T) {
	b := startServer(t, false)
	show := func(t *testing.T, res result) map[string]any {
		t.Helper()
		require.Equal(t, ExitOK, res.code, res.stderr)
		var out struct {
			Job map[string]any `json:"job"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
		return out.Job
	}
	direct := b.enqueue(t, "send-email", "--max-rescues", "5")
	job := show(t, b.run(t, "jobs", "show", direct, "--json"))
	require.EqualValues(t, 5, job["maxRescues"])
	require.NotContains(t, job, "rescues", "none so far: a zero is left out, as in the API")
	res := b.run(t, "jobs", "show", direct)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, `rescues\s+0/5`, res.stdout)

	res = b.remote(t, "enqueue", "send-email", "--max-rescues", "-1")
	require.Equal(t, ExitOK, res.code, res.stderr)
	id := res.stdout[:len(res.stdout)-1]
	job = show(t, b.remote(t, "jobs", "show", id, "--json"))
	require.EqualValues(t, -1, job["maxRescues"])
	res = b.remote(t, "jobs", "show", id)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, `rescues\s+0 \(no limit\)`, res.stdout)
	job = show(t, b.remote(t, "jobs", "show", b.enqueue(t, "send-email"), "--json"))
	require.EqualValues(t, 3, job["maxRescues"], "the default")

	for _, run := range []func(*testing.T, ...string) result{b.run, b.remote} {
		res := run(t, "enqueue", "send-email", "--max-rescues", "-2")
		require.Equal(t, ExitUsage, res.code, res.stderr)
		require.Contains(t, res.stderr, "max_rescues")
	}
}

// serve --max-rescues sets the server's default bound; a bad value stops it before it listens.
func TestServeMaxRescuesIsChecked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "serve", "--addr", "127.0.0.1:0", "--max-rescues", "1001")
	require.Equal(t, ExitUsage, res.code, res.stderr)
	require.Contains(t, res.stderr, "--max-rescues: 1001 is outside", "the error names the flag, not the client's Config field")
}
