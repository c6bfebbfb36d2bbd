package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/stretchr/testify/require"
)

// deadLetters fails one job per queue for good, as a remote worker would, on the server's
// store, and returns their ids in order.
func (b *serverBundle) deadLetters(t *testing.T, queues ...string) []string {
	t.Helper()
	c, err := hopper.NewClient(hopper.Config{Store: b.store, DisableMaintenance: true, WorkerID: "dlq-maker"})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	defer stoptest.Within(t, c, 10*time.Second)
	var ids []string
	for _, q := range queues {
		res, err := c.Enqueue(t.Context(), hopper.RawArgs{KindName: "charge", JSON: []byte(`{"card":1}`)}, &hopper.InsertOpts{Queue: q})
		require.NoError(t, err)
		jobs, err := workerapi.Of(c).Activate(t.Context(), workerapi.ActivateParams{Worker: "w", Queue: q})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		zero := 0
		_, err = workerapi.Of(c).FailJob(t.Context(), res.Job.ID, jobs[0].Token, workerapi.FailParams{Error: "card\ndeclined", RetriesLeft: &zero})
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	return ids
}

// runIn runs hopper against the database with stdin.
func (b *testBundle) runIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), append([]string{"--database", b.db}, args...), strings.NewReader(stdin), &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

func TestDLQListAndStatsBothWays(t *testing.T) {
	b := startServer(t, false)
	ids := b.deadLetters(t, "billing", "billing", "mail")
	b.enqueue(t, "not-dead")
	for _, runner := range []func(t *testing.T, args ...string) result{b.remote, b.run} {
		res := runner(t, "dlq", "ls", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		var ls struct {
			Jobs []struct {
				ID, State, LastError, ExpiresAt string
			} `json:"jobs"`
		}
		require.NoError(t, json.Unmarshal([]byte(strings.ReplaceAll(res.stdout, "_", "")), &ls))
		require.Len(t, ls.Jobs, 3)
		require.Equal(t, ids[2], ls.Jobs[0].ID, "newest first")
		require.Equal(t, "failed", ls.Jobs[0].State)
		require.NotEmpty(t, ls.Jobs[0].ExpiresAt)

		res = runner(t, "dlq", "ls", "--queue", "billing", "--since", "1h")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, "LAST_ERROR")
		require.Contains(t, res.stdout, "card declined", "the error on one line")
		require.Contains(t, res.stdout, ids[0])
		require.NotContains(t, res.stdout, ids[2])

		res = runner(t, "dlq", "stats", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		var st struct {
			Count          int64  `json:"count"`
			OldestFailedAt string `json:"oldest_failed_at"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &st))
		require.Equal(t, int64(3), st.Count)
		require.NotEmpty(t, st.OldestFailedAt)
		res = runner(t, "dlq", "stats")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, "dead letters: 3")

		res = runner(t, "dlq", "ls", "--limit", "0")
		require.Equal(t, ExitUsage, res.code)
	}
}

func TestDLQReplayBothWays(t *testing.T) {
	b := startServer(t, false)
	ids := b.deadLetters(t, "billing", "billing", "mail")

	res := b.remote(t, "dlq", "replay", ids[0], "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var replayed struct {
		Job struct {
			ID          string `json:"id"`
			State       string `json:"state"`
			OriginalID  string `json:"originalId"`
			ReplayCount int    `json:"replayCount"`
			ReplayedBy  string `json:"replayedBy"`
		} `json:"job"`
		ReplayedBy string `json:"replayedBy"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &replayed))
	job := replayed.Job
	require.Equal(t, "queued", job.State)
	require.Equal(t, ids[0], job.OriginalID)
	require.Equal(t, 1, job.ReplayCount)
	require.Equal(t, "api", job.ReplayedBy, "a server without keys records the API")
	require.Equal(t, "api", replayed.ReplayedBy, "as ReplayResponse says it")

	res = b.run(t, "dlq", "replay", ids[1])
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "replayed as")
	res = b.run(t, "dlq", "replay", job.ID)
	require.Equal(t, ExitConflict, res.code, res.stderr)
	require.Contains(t, res.stderr, "it is queued")
	res = b.remote(t, "dlq", "replay", "01a2ffff-0000-7000-8000-000000000000")
	require.Equal(t, ExitNotFound, res.code, res.stderr)

	res = b.runIn(t, "", "dlq", "replay", "--all")
	require.Equal(t, ExitUsage, res.code, "no answer, no replay")
	require.Contains(t, res.stderr, "not confirmed")
	res = b.runIn(t, "yes\n", "dlq", "replay", "--all", "--queue", "mail")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "1 dead letters replayed")
	res = b.remote(t, "dlq", "replay", "--all", "--yes")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "0 dead letters replayed", "each was replayed once already")

	for _, runner := range []func(t *testing.T, args ...string) result{b.remote, b.run} {
		res = runner(t, "dlq", "replays", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		var log struct {
			Replays []struct {
				SourceJobID string `json:"source_job_id"`
				ReplayedBy  string `json:"replayed_by"`
			} `json:"replays"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &log))
		require.Len(t, log.Replays, 3)
		require.Equal(t, ids[2], log.Replays[0].SourceJobID, "newest first")
		require.True(t, strings.HasPrefix(log.Replays[0].ReplayedBy, "cli"), log.Replays[0].ReplayedBy)
		require.Equal(t, "api", log.Replays[2].ReplayedBy)
		res = runner(t, "dlq", "replays", "--job", ids[0])
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, ids[0])
		require.NotContains(t, res.stdout, ids[1])
	}

	for _, args := range [][]string{
		{"dlq", "replay"}, {"dlq", "replay", ids[0], "--all"}, {"dlq", "replay", ids[0], "--queue", "x"},
		{"dlq", "replay", "--all", "--limit", "1001", "--yes"},
	} {
		res = b.run(t, args...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", args, res.stderr)
	}
}

// dlq ls, dlq stats and the API agree: stats count what ls lists (the dead letters never
// replayed), and the replayed ones apart, which ls --include-replayed lists marked.
func TestDLQCountsWhatItListsBothWays(t *testing.T) {
	b := startServer(t, false)
	ids := b.deadLetters(t, "billing", "billing", "mail")
	require.Equal(t, ExitOK, b.run(t, "dlq", "replay", ids[0]).code)
	require.Equal(t, ExitOK, b.run(t, "dlq", "replay", ids[0], "--again").code)
	for _, runner := range []func(t *testing.T, args ...string) result{b.remote, b.run} {
		res := runner(t, "dlq", "stats", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		var st struct{ Count, Replayed int }
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &st))
		require.Equal(t, 2, st.Count)
		require.Equal(t, 1, st.Replayed)
		res = runner(t, "dlq", "stats")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, "dead letters: 2\n")
		require.Contains(t, res.stdout, "replayed:     1 ")

		res = runner(t, "dlq", "ls", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		var page struct {
			Jobs    []struct{ ID string } `json:"jobs"`
			Replays map[string]struct {
				Count     int    `json:"count"`
				LastJobID string `json:"lastJobId"`
			} `json:"replays"`
		}
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &page))
		require.Len(t, page.Jobs, st.Count, "ls lists what stats counts")
		require.Empty(t, page.Replays)
		require.Contains(t, res.stdout, `"replays": {}`, "printed even when empty")

		res = runner(t, "dlq", "ls", "--include-replayed", "--json")
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &page))
		require.Len(t, page.Jobs, st.Count+st.Replayed)
		require.Len(t, page.Replays, 1)
		require.Equal(t, 2, page.Replays[ids[0]].Count)
		require.NotEmpty(t, page.Replays[ids[0]].LastJobID)

		res = runner(t, "dlq", "ls", "--include-replayed")
		require.Equal(t, ExitOK, res.code, res.stderr)
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		require.Equal(t, []string{"ID", "KIND", "QUEUE", "ATTEMPT", "FAILED", "REPLAY", "REPLAYED", "LAST_ERROR"},
			strings.Fields(lines[0]))
		require.Len(t, lines, 4)
		for _, l := range lines[1:] {
			cells := strings.Fields(l)
			want := "-"
			if cells[0] == ids[0] {
				want = "2"
			}
			require.Equal(t, want, cells[6], "the REPLAYED column of %s", cells[0])
		}
	}
	res := b.run(t, "dlq", "replay", "--all", "--yes")
	require.Equal(t, ExitOK, res.code, res.stderr)
	res = b.run(t, "dlq", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "no dead letters (never replayed; --include-replayed")
	res = b.run(t, "dlq", "stats")
	require.Equal(t, "no dead letters\nreplayed:     3 (dealt with: dlq ls --include-replayed lists them)\n", res.stdout)
}

func TestDLQReplayNeedsTheAdminScope(t *testing.T) {
	b := startServer(t, true)
	ids := b.deadLetters(t, "default")
	plain, k, err := apikey.New("viewer", []apikey.Scope{apikey.ScopeRead})
	require.NoError(t, err)
	require.NoError(t, b.store.KeyCreate(t.Context(), k))
	t.Setenv(envAPIKey, plain)
	res := b.remote(t, "dlq", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	res = b.remote(t, "dlq", "replay", ids[0])
	require.Equal(t, ExitAuth, res.code, res.stderr)

	admin, k, err := apikey.New("oncall", []apikey.Scope{apikey.ScopeAdmin})
	require.NoError(t, err)
	require.NoError(t, b.store.KeyCreate(t.Context(), k))
	t.Setenv(envAPIKey, admin)
	res = b.remote(t, "dlq", "replay", ids[0], "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, `"replayedBy": "oncall"`)
}

func TestServeChecksTheDeadLetterWebhook(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.run(t, "serve", "--dead-letter-webhook", "ftp://alerts.example.com")
	require.Equal(t, ExitUsage, res.code, res.stderr)
	require.Contains(t, res.stderr, "--dead-letter-webhook: ") // the flag, not the Config field
	res = b.run(t, "serve", "--result-ttl", "-1h")
	require.Equal(t, ExitUsage, res.code, res.stderr)
}
