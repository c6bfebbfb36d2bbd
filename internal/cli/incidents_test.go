package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// Issue 31, item 9, from the command line: a second replay of a dead letter exits 4 naming the
// first, through a server and on the database alike, unless --again; replay --all says how many
// it skipped.
func TestDLQReplayTwiceIsRefused(t *testing.T) {
	b := startServer(t, false)
	ids := b.deadLetters(t, "billing", "mail")
	for i, runner := range []func(t *testing.T, args ...string) result{b.remote, b.run} {
		id := ids[i]
		res := runner(t, "dlq", "replay", id, "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		var first struct {
			Job struct{ ID string } `json:"job"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &first))

		res = runner(t, "dlq", "replay", id)
		require.Equal(t, ExitConflict, res.code, res.stderr)
		require.Contains(t, res.stderr, "already replayed as job "+first.Job.ID, "names the earlier replay")
		require.Contains(t, res.stderr, "--again")
		res = runner(t, "jobs", "retry", id)
		require.Equal(t, ExitConflict, res.code, "a replayed dead letter is not retried either: %s", res.stderr)

		res = runner(t, "dlq", "replay", id, "--again", "--reason", "second charge agreed")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, "replay 1 of "+id)
	}
	res := b.run(t, "dlq", "replay", "--all", "--yes")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "0 dead letters replayed (2 skipped: replayed before)")
	res = b.remote(t, "dlq", "replays", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var log struct {
		Replays []struct {
			Action string `json:"action"`
			Forced bool   `json:"forced"`
			Reason string `json:"reason"`
		} `json:"replays"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &log))
	require.Len(t, log.Replays, 4)
	require.True(t, log.Replays[0].Forced, "the forced replay is audited as forced")
	require.Equal(t, "second charge agreed", log.Replays[0].Reason)
	require.False(t, log.Replays[3].Forced)
	res = b.run(t, "dlq", "replays")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "replay (forced)")
}

// jobs retry, jobs set-retries and dlq retry, through a server and on the database.
func TestJobsRetryInPlaceBothWays(t *testing.T) {
	b := startServer(t, false)
	ids := b.deadLetters(t, "a", "b", "c", "d")
	res := b.remote(t, "jobs", "retry", ids[0], "--retries", "3", "--args", `{"card":2}`, "--reason", "card replaced", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var got struct {
		Job struct {
			ID          string `json:"id"`
			State       string `json:"state"`
			Args        json.RawMessage
			MaxAttempts int `json:"maxAttempts"`
		} `json:"job"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got))
	require.Equal(t, ids[0], got.Job.ID, "the same job")
	require.Equal(t, "queued", got.Job.State)
	require.Equal(t, 4, got.Job.MaxAttempts, "one attempt made, three more")
	res = b.run(t, "jobs", "retry", ids[1], "--run-at", "2099-01-01T00:00:00Z")
	require.Equal(t, ExitUsage, res.code, "more than a year ahead: %s", res.stderr)
	require.Contains(t, res.stderr, "run_at")
	res = b.run(t, "jobs", "retry", ids[1])
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "retried in place: queued, attempt 2 of 2 next")

	for _, runner := range []func(t *testing.T, args ...string) result{b.remote, b.run} {
		res = runner(t, "jobs", "retry", ids[0])
		require.Equal(t, ExitConflict, res.code, res.stderr)
		require.Contains(t, res.stderr, "it is queued, and only failed jobs are")
		res = runner(t, "jobs", "retry", ids[2], "--args", `{"card":`)
		require.Equal(t, ExitUsage, res.code, res.stderr)
		require.Contains(t, res.stderr, "args")
		res = runner(t, "jobs", "retry", ids[2], "--retries", "0")
		require.Equal(t, ExitUsage, res.code, res.stderr)
		res = runner(t, "jobs", "retry", "01a2ffff-0000-7000-8000-000000000000")
		require.Equal(t, ExitNotFound, res.code, res.stderr)

		res = runner(t, "jobs", "set-retries", ids[0], "9")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, "at most 9 attempts (1 made)")
		res = runner(t, "jobs", "set-retries", ids[0], "1")
		require.Equal(t, ExitUsage, res.code, res.stderr)
		require.Contains(t, res.stderr, "max_attempts")
		res = runner(t, "jobs", "set-retries", ids[2], "5")
		require.Equal(t, ExitConflict, res.code, "an ended job: %s", res.stderr)
		res = runner(t, "jobs", "set-retries", ids[0], "x")
		require.Equal(t, ExitUsage, res.code, res.stderr)
	}
	res = b.runIn(t, "", "dlq", "retry", "--all")
	require.Equal(t, ExitUsage, res.code, "no answer, no retry")
	res = b.run(t, "dlq", "retry")
	require.Equal(t, ExitUsage, res.code, res.stderr)
	res = b.remote(t, "dlq", "retry", "--all", "--queue", "c", "--yes")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "job "+ids[2]+" retried in place")
	require.Contains(t, res.stdout, "1 dead letters retried")
	res = b.run(t, "dlq", "retry", "--all", "--yes", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, ids[3])
}
