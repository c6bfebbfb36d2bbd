package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// kindsOut is the JSON of `kinds ls --json`.
type kindsOut struct {
	Kinds []struct {
		Name       string           `json:"name"`
		Disabled   bool             `json:"disabled"`
		MaxRunning int              `json:"max_running"`
		Rate       string           `json:"rate"`
		Counts     map[string]int64 `json:"counts"`
	} `json:"kinds"`
}

// queuesOut is the JSON of `queues ls --json`.
type queuesOut struct {
	Queues []struct {
		Name     string           `json:"name"`
		Counts   map[string]int64 `json:"counts"`
		Disabled *int64           `json:"disabled"`
	} `json:"queues"`
}

func TestKindCommandsBothWays(t *testing.T) {
	b := startServer(t, false)
	b.enqueue(t, "render-pdf", "--queue", "reports")
	b.enqueue(t, "render-pdf", "--queue", "reports")
	b.enqueue(t, "send-invoice", "--queue", "reports")
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"server": b.remote, "database": b.run} {
		res := runner(t, "kinds", "disable", "render-pdf")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "kind render-pdf disabled\n", res.stdout)
		res = runner(t, "kinds", "set", "render-pdf", "--cap", "2", "--rate", "10/m")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "kind render-pdf capped at 2 running jobs\nkind render-pdf rate-limited to 10/1m\n", res.stdout)

		res = runner(t, "kinds", "ls", "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		var ks kindsOut
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &ks))
		require.Len(t, ks.Kinds, 2)
		require.Equal(t, "render-pdf", ks.Kinds[0].Name)
		require.True(t, ks.Kinds[0].Disabled)
		require.Equal(t, 2, ks.Kinds[0].MaxRunning)
		require.Equal(t, "10/1m", ks.Kinds[0].Rate)
		require.Equal(t, int64(2), ks.Kinds[0].Counts["queued"])
		require.Contains(t, ks.Kinds[0].Counts, "canceled", "every state has a count")
		require.Equal(t, "send-invoice", ks.Kinds[1].Name)
		require.False(t, ks.Kinds[1].Disabled)
		require.Zero(t, ks.Kinds[1].MaxRunning)

		res = runner(t, "kinds", "ls")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Regexp(t, `KIND\s+DISABLED\s+CAP\s+RATE\s+CAP/KEY\s+RATE/KEY\s+COMPACT\s+WAITING\s+SCHEDULED\s+QUEUED`, res.stdout)
		require.Regexp(t, `render-pdf\s+yes\s+2\s+10/1m\s+-\s+-\s+-\s+0\s+0\s+2\s`, res.stdout)
		require.Regexp(t, `send-invoice\s+no\s+-\s+-\s+-\s+-\s+-\s+0\s+0\s+1\s`, res.stdout)

		res = runner(t, "queues", "ls", "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		var qs queuesOut
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &qs))
		require.Len(t, qs.Queues, 1)
		require.Equal(t, int64(3), qs.Queues[0].Counts["queued"])
		require.NotNil(t, qs.Queues[0].Disabled)
		require.Equal(t, int64(2), *qs.Queues[0].Disabled, "the queued jobs of the disabled kind")
		res = runner(t, "queues", "ls")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Regexp(t, `QUEUED\s+QUEUED_DISABLED\s+RUNNING`, res.stdout)
		require.Regexp(t, `reports\s+no\s+-\s+-\s+-\s+-\s+-\s+0\s+0\s+3\s+2\s+0`, res.stdout)

		res = runner(t, "kinds", "enable", "render-pdf")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "kind render-pdf enabled\n", res.stdout)
		res = runner(t, "kinds", "set", "render-pdf", "--cap", "0")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "kind render-pdf uncapped\n", res.stdout)
		res = runner(t, "kinds", "ls", "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		ks = kindsOut{}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &ks))
		require.False(t, ks.Kinds[0].Disabled)
		require.Zero(t, ks.Kinds[0].MaxRunning)
		res = runner(t, "queues", "ls")
		require.Equal(t, "10/1m", ks.Kinds[0].Rate, "the rate limit stays")
		res = runner(t, "kinds", "set", "render-pdf", "--rate", "0")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "kind render-pdf not rate-limited\n", res.stdout)
		res = runner(t, "queues", "ls")
		require.Regexp(t, `reports\s+no\s+-\s+-\s+-\s+-\s+-\s+0\s+0\s+3\s+0\s+0`, res.stdout, "nothing disabled any more")
	}
}

func TestKindCommandsRefuseBadInput(t *testing.T) {
	b := startServer(t, false)
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"server": b.remote, "database": b.run} {
		for _, args := range [][]string{
			{"kinds", "disable", "two words"},
			{"kinds", "enable", ""},
			{"kinds", "set", "pdf", "--cap", "-1"},
			{"kinds", "set", "pdf", "--cap", "many"},
			{"kinds", "set", "pdf", "--cap", "4294967296"},
			{"kinds", "set", "pdf"},
			{"kinds", "set", "", "--cap", "1"},
			{"kinds", "set", "pdf", "--rate", "0/1s"},
			{"kinds", "set", "pdf", "--rate", "abc"},
			{"kinds", "set", "pdf", "--cap", "1", "--rate", "5/0s"},
			{"kinds", "disable"},
		} {
			res := runner(t, args...)
			require.Equal(t, ExitUsage, res.code, "%s %v: %s", name, args, res.stderr)
		}
		res := runner(t, "kinds", "set", "pdf", "--cap", "-1")
		require.Contains(t, res.stderr, "invalid --cap:")
		res = runner(t, "kinds", "set", "pdf", "--rate", "0/1s")
		require.Contains(t, res.stderr, "invalid --rate:")
		res = runner(t, "kinds", "enable", "never-seen")
		require.Equal(t, ExitOK, res.code, "%s: enabling an unknown kind changes nothing: %s", name, res.stderr)
		res = runner(t, "kinds", "ls")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "no kinds\n", res.stdout)
	}
}

// compactOut is the JSON of `kinds compact --json`.
type compactOut struct {
	Groups    int `json:"groups"`
	Jobs      int `json:"jobs"`
	Compacted []struct {
		GroupKey string   `json:"group_key"`
		NewJobID string   `json:"new_job_id"`
		Replaced []string `json:"replaced"`
	} `json:"compacted"`
	Refused []struct {
		GroupKey string `json:"group_key"`
		JobID    string `json:"job_id"`
		Reason   string `json:"reason"`
	} `json:"refused"`
}

func TestKindsCompactBothWays(t *testing.T) {
	b := startServer(t, false)
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"server": b.remote, "database": b.run} {
		var replaced []string
		for _, args := range []string{`{"n":1}`, `{"n":2}`} {
			replaced = append(replaced, b.enqueue(t, "reindex", "--group-key", "doc-"+name, args))
		}
		plain := b.enqueue(t, "reindex", "--group-key", "list-"+name, `[1]`)
		b.enqueue(t, "reindex", "--group-key", "list-"+name, "--merge-key", "m-"+name, "--merge", "append", `{"n":2}`)

		res := runner(t, "kinds", "compact", "reindex", "--merge", "append")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Contains(t, res.stdout, "kind reindex: groups compacted: 0, jobs replaced: 0\n", name)
		require.Contains(t, res.stdout, "  group list-"+name+" refused: job "+plain+": ", name)

		res = runner(t, "kinds", "compact", "reindex", "--group-key", "doc-"+name, "--merge", "replace", "--json")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		var out compactOut
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
		require.Equal(t, 1, out.Groups, name)
		require.Equal(t, 2, out.Jobs, name)
		require.Len(t, out.Compacted, 1, name)
		require.Equal(t, replaced, out.Compacted[0].Replaced, name)
		require.Empty(t, out.Refused, name)
		job := b.run(t, "jobs", "show", out.Compacted[0].NewJobID, "--json")
		require.Contains(t, job.stdout, `"reason": "compacted 2 jobs (replace)"`, name)
		require.Regexp(t, `"args": \{\s+"n": 2\s+\}`, job.stdout, name)
		old := runner(t, "jobs", "show", replaced[0])
		require.Contains(t, old.stdout, "canceled", name)
		require.Regexp(t, `compacted into\s+`+out.Compacted[0].NewJobID, old.stdout, name)
		shown := runner(t, "jobs", "show", out.Compacted[0].NewJobID)
		require.Regexp(t, `compacted from\s+`+replaced[0]+", "+replaced[1]+"\n", shown.stdout, name)

		res = runner(t, "kinds", "compact", "reindex", "--over", "2")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "kind reindex: groups compacted: 0, jobs replaced: 0\n", res.stdout, name)

		res = runner(t, "kinds", "set", "reindex", "--compact-over", "10", "--compact-merge", "append")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "kind reindex compacted by the leader over 10 waiting jobs per group (append)\n", res.stdout)
		res = runner(t, "kinds", "ls")
		require.Regexp(t, `reindex\s+no\s+-\s+-\s+-\s+-\s+>10 append\s+0\s+`, res.stdout, name)
		res = runner(t, "kinds", "ls", "--json")
		require.Contains(t, res.stdout, `"compact_over": 10,`, name)
		require.Contains(t, res.stdout, `"compact_merge": "append",`, name)
		res = runner(t, "kinds", "set", "reindex", "--compact-over", "0")
		require.Equal(t, ExitOK, res.code, "%s: %s", name, res.stderr)
		require.Equal(t, "kind reindex not compacted by the leader\n", res.stdout)
		res = runner(t, "kinds", "ls")
		require.Regexp(t, `reindex\s+no\s+-\s+-\s+-\s+-\s+-\s+0\s+`, res.stdout, name)
	}
}

func TestKindsCompactRefusesBadInput(t *testing.T) {
	b := startServer(t, false)
	for name, runner := range map[string]func(t *testing.T, args ...string) result{"server": b.remote, "database": b.run} {
		for _, tc := range []struct {
			args []string
			says string
		}{
			{[]string{"kinds", "compact", "pdf", "--over", "-1"}, "over"},
			{[]string{"kinds", "compact", "pdf", "--over", "4294967296"}, "over"},
			{[]string{"kinds", "compact", "pdf", "--merge", "squash"}, "merge"},
			{[]string{"kinds", "compact", ""}, "kind"},
			{[]string{"kinds", "compact"}, "accepts 1 arg"},
			{[]string{"kinds", "set", "pdf", "--compact-over", "-1"}, "invalid --compact-over"},
			{[]string{"kinds", "set", "pdf", "--compact-over", "4294967296"}, "invalid --compact-over"},
			{[]string{"kinds", "set", "pdf", "--compact-over", "3", "--compact-merge", "squash"}, "invalid --compact-merge"},
			{[]string{"kinds", "set", "pdf", "--compact-merge", "append"}, "invalid --compact-merge"},
			{[]string{"kinds", "set", "pdf"}, "--compact-over"},
		} {
			res := runner(t, tc.args...)
			require.Equal(t, ExitUsage, res.code, "%s %v: %s", name, tc.args, res.stderr)
			require.Contains(t, res.stderr, tc.says, "%s %v", name, tc.args)
		}
	}
}
