package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/stretchr/testify/require"
)

// albumWorkflow is a workflow document: fetch, then resize, then publish (which runs even if
// resize fails).
const albumWorkflow = `{"name": "publish-album", "steps": [
  {"name": "publish", "kind": "publish-album", "args": {"album": 7}, "after": ["resize"], "on_parent_failure": "run"},
  {"name": "fetch", "kind": "fetch-photos", "args": {"album": 7}, "queue": "io", "max_attempts": 3},
  {"name": "resize", "kind": "resize", "args": {"size": 320}, "after": ["fetch"], "timeout": "30s"}]}`

// writeFile writes text to a file of the test's temporary directory and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

// runner runs hopper with args, against a database or a server.
type runner func(t *testing.T, args ...string) result

// workflowCommands enqueues, lists, shows and cancels a workflow through run.
func workflowCommands(t *testing.T, run runner) {
	t.Helper()
	res := run(t, "workflows", "enqueue", writeFile(t, "album.json", albumWorkflow))
	require.Equal(t, ExitOK, res.code, res.stderr)
	id := strings.TrimSpace(res.stdout)

	res = run(t, "workflows", "show", id, "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var shown struct {
		Workflow map[string]any `json:"workflow"`
		Steps    []struct {
			Job   map[string]any `json:"job"`
			After []string       `json:"after"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &shown))
	require.Equal(t, "publish-album", shown.Workflow["name"])
	require.Equal(t, "running", shown.Workflow["state"])
	require.Len(t, shown.Steps, 3)
	fetch, resize, publish := shown.Steps[0], shown.Steps[1], shown.Steps[2]
	require.Equal(t, "fetch", fetch.Job["step"], "parents first")
	require.Equal(t, "io", fetch.Job["queue"])
	require.EqualValues(t, 3, fetch.Job["maxAttempts"])
	require.Equal(t, "queued", fetch.Job["state"])
	require.Equal(t, []string{}, fetch.After)
	require.Equal(t, []string{"fetch"}, resize.After)
	require.Equal(t, "30s", resize.Job["timeout"])
	require.Equal(t, []string{"resize"}, publish.After)
	require.Equal(t, "waiting", publish.Job["state"])
	require.Equal(t, id, publish.Job["workflowId"])

	res = run(t, "workflows", "show", id)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "Workflow "+id)
	require.Contains(t, res.stdout, "steps    3: 2 waiting, 1 queued")
	require.Regexp(t, `(?m)^STEP\s+STATE\s+ATTEMPT\s+CREATED\s+STARTED\s+FINISHED\s+WAIT\s+DURATION\s+AFTER\s+JOB$`, res.stdout)
	require.Regexp(t, `(?m)^publish\s+waiting\s+0/\d+\s+\d{4}-\S+\s+-\s+-\s+-\s+-\s+resize\s+`, res.stdout)
	require.Regexp(t, `(?m)^fetch\s+queued\s+0/3\s+`, res.stdout)

	res = run(t, "jobs", "show", fetch.Job["id"].(string))
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, id+", step fetch")

	res = run(t, "workflows", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, id+`\s+publish-album\s+running\s+0/3\s+`, res.stdout)
	res = run(t, "workflows", "ls", "--name", "publish-album", "--state", "completed,failed")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Equal(t, "no workflows\n", res.stdout)
	res = run(t, "workflows", "ls", "--state", "done")
	require.Equal(t, ExitUsage, res.code, res.stderr)

	res = run(t, "workflows", "cancel", id, "--reason", "album withdrawn")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Equal(t, "workflow "+id+" canceled: 3 steps (fetch, publish, resize)\n", res.stdout)
	res = run(t, "jobs", "events", fetch.Job["id"].(string))
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "album withdrawn")
	res = run(t, "workflows", "cancel", id)
	require.Equal(t, ExitConflict, res.code, res.stderr)
	require.Contains(t, res.stderr, "it has already been canceled")
	require.Equal(t, []string{id}, listedWorkflows(t, run, "--state", "canceled"))

	res = run(t, "workflows", "show", "0190f0e4-0000-7000-8000-000000000000")
	require.Equal(t, ExitNotFound, res.code, res.stderr)
	res = run(t, "workflows", "cancel", "0190f0e4-0000-7000-8000-000000000000")
	require.Equal(t, ExitNotFound, res.code, res.stderr)

	// A bad workflow is a usage error naming the field, and enqueues nothing.
	for file, field := range map[string]string{
		`{"name": "w", "steps": [{"name": "a", "kind": "k", "after": ["b"]}, {"name": "b", "kind": "k", "after": ["a"]}]}`: "steps[1].after[0]",
		`{"name": "w", "steps": [{"name": "a", "kind": "k"}, {"name": "b", "kind": "k", "queue": "no spaces"}]}`:           "steps[1].queue",
		`{"name": "w", "steps": [{"name": "a", "kind": "k", "after": ["nope"]}]}`:                                          "steps[0].after[0]",
		`{"name": "w", "steps": [{"name": "a", "kind": "k", "idempotency_key": "x"}]}`:                                     "steps[0].idempotency_key",
		`{"name": "w", "steps": [{"name": "a", "kind": "k", "colour": "red"}]}`:                                            `steps[0]: unknown field "colour"`,
		`{"name": "w", "stages": []}`: `unknown field "stages"`,
	} {
		res = run(t, "workflows", "enqueue", writeFile(t, "bad.json", file))
		require.Equal(t, ExitUsage, res.code, "%s: %s", file, res.stderr)
		require.Contains(t, res.stderr, field, file)
	}
	require.Equal(t, []string{id}, listedWorkflows(t, run), "only the first workflow was enqueued")
}

// listedWorkflows is the ids `workflows ls --json` lists with the flags given.
func listedWorkflows(t *testing.T, run runner, flags ...string) []string {
	t.Helper()
	res := run(t, append([]string{"workflows", "ls", "--json"}, flags...)...)
	require.Equal(t, ExitOK, res.code, res.stderr)
	var out struct {
		Workflows []struct {
			ID string `json:"id"`
		} `json:"workflows"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
	var ids []string
	for _, w := range out.Workflows {
		ids = append(ids, w.ID)
	}
	return ids
}

func TestWorkflowCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	workflowCommands(t, b.run)

	// - reads the workflow from stdin.
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"--database", b.db, "workflows", "enqueue", "-"}, strings.NewReader(albumWorkflow), &stdout, &stderr)
	require.Equal(t, ExitOK, code, stderr.String())
	res := b.run(t, "workflows", "show", strings.TrimSpace(stdout.String()))
	require.Equal(t, ExitOK, res.code, res.stderr)
}

func TestWorkflowCommandsThroughAServer(t *testing.T) {
	b := startServer(t, false)
	workflowCommands(t, b.remote)
}

// `workflows show` prints each step's timings: created, started, finished, the wait from its
// release (its run-at) to its latest start, and how long it ran ("+" while it runs).
func TestPrintWorkflowStepTimings(t *testing.T) {
	at := func(s int) time.Time { return time.Date(2026, 3, 1, 12, 0, s, 0, time.Local) }
	step := func(name string, state hopper.JobState, created, due, started, finished int, after ...string) *hopper.StepRow {
		j := &hopper.JobRow{ID: "id-" + name, Step: name, State: state, MaxAttempts: 3, CreatedAt: at(created), RunAt: at(due)}
		if started > 0 {
			j.StartedAt, j.Attempt = at(started), 1
		}
		if finished > 0 {
			j.FinishedAt = at(finished)
		}
		return &hopper.StepRow{Job: j, After: after}
	}
	d := &hopper.WorkflowDetail{Workflow: &hopper.WorkflowRow{ID: "wf", Name: "album", State: hopper.WorkflowRunning,
		Steps: 3, CreatedAt: at(0)}, Steps: []*hopper.StepRow{
		step("fetch", hopper.StateCompleted, 0, 0, 1, 4),
		step("resize", hopper.StateRunning, 0, 4, 7, 0, "fetch"),
		step("publish", hopper.StateWaiting, 0, 0, 0, 0, "resize"),
	}}
	var out strings.Builder
	require.NoError(t, printWorkflow(&out, d, at(10)))
	require.Regexp(t, `(?m)^fetch\s+completed\s+1/3\s+2026-03-01T12:00:00\s+2026-03-01T12:00:01\s+2026-03-01T12:00:04\s+1s\s+3s\s+-\s+id-fetch$`, out.String())
	require.Regexp(t, `(?m)^resize\s+running\s+1/3\s+2026-03-01T12:00:00\s+2026-03-01T12:00:07\s+-\s+3s\s+3s\+\s+fetch\s+id-resize$`, out.String())
	require.Regexp(t, `(?m)^publish\s+waiting\s+0/3\s+2026-03-01T12:00:00\s+-\s+-\s+-\s+-\s+resize\s+id-publish$`, out.String())
}

// schedules add --workflow saves a schedule that starts the file's workflow at each fire; ls
// and show say so, --json carries the workflow as the API does, and run starts one.
func workflowScheduleCommands(t *testing.T, run runner) {
	t.Helper()
	file := writeFile(t, "album.json", albumWorkflow)
	res := run(t, "schedules", "add", "albums", "--cron", "0 3 * * *", "--tz", "Europe/Paris", "--workflow", file)
	require.Equal(t, ExitOK, res.code, res.stderr)
	res = run(t, "schedules", "ls")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "workflow publish-album (3 steps)")
	res = run(t, "schedules", "show", "albums")
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Contains(t, res.stdout, "resize: resize after fetch")
	res = run(t, "schedules", "ls", "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var listed struct {
		Schedules []struct {
			Workflow struct {
				Name  string `json:"name"`
				Steps []struct {
					Name string         `json:"name"`
					Job  map[string]any `json:"job"`
				} `json:"steps"`
			} `json:"workflow"`
		} `json:"schedules"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &listed), res.stdout)
	wf := listed.Schedules[0].Workflow
	require.Equal(t, "publish-album", wf.Name)
	require.Equal(t, "fetch", wf.Steps[0].Name)
	require.Equal(t, "io", wf.Steps[0].Job["queue"])
	res = run(t, "schedules", "run", "albums")
	require.Equal(t, ExitOK, res.code, res.stderr)

	res = run(t, "schedules", "add", "x", "--cron", "@daily", "--workflow", file, "--kind", "k")
	require.Equal(t, ExitUsage, res.code)
	res = run(t, "schedules", "add", "x", "--cron", "@daily")
	require.Equal(t, ExitUsage, res.code)
	res = run(t, "schedules", "add", "x", "--fixed-delay", "5m", "--workflow", file)
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, "fixed_delay")
	bad := writeFile(t, "bad.json", `{"name": "w", "steps": [{"name": "a", "kind": "k", "queue": "no spaces"}]}`)
	res = run(t, "schedules", "add", "x", "--cron", "@daily", "--workflow", bad)
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, "workflow.steps[0]")
}

func TestWorkflowScheduleCommands(t *testing.T) {
	t.Parallel()
	workflowScheduleCommands(t, setup(t).run)
}

func TestWorkflowScheduleCommandsThroughAServer(t *testing.T) {
	workflowScheduleCommands(t, startServer(t, false).remote)
}

// workflows batch enqueues a batch file as one workflow: its jobs, and a callback after them
// all with policy run; a bad job is named as the batch names it.
func workflowBatchCommands(t *testing.T, run runner) {
	t.Helper()
	res := run(t, "workflows", "batch", writeFile(t, "batch.json", `{"name": "resize-album",
	  "jobs": [{"kind": "resize", "args": {"photo": 1}}, {"kind": "resize", "args": {"photo": 2}, "queue": "big"}],
	  "callback": {"kind": "album-ready", "args": {"album": 7}}}`))
	require.Equal(t, ExitOK, res.code, res.stderr)
	id := strings.TrimSpace(res.stdout)
	res = run(t, "workflows", "show", id, "--json")
	require.Equal(t, ExitOK, res.code, res.stderr)
	var shown struct {
		Steps []struct {
			Job   map[string]any `json:"job"`
			After []string       `json:"after"`
		} `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &shown), res.stdout)
	require.Len(t, shown.Steps, 3)
	require.Equal(t, "callback", shown.Steps[2].Job["step"])
	require.Equal(t, []string{"job-0", "job-1"}, shown.Steps[2].After)
	require.Equal(t, "big", shown.Steps[1].Job["queue"])

	res = run(t, "workflows", "batch", writeFile(t, "bad.json", `{"name": "b", "jobs": [{"kind": "k"}, {"kind": "k", "queue": "no spaces"}],
	  "callback": {"kind": "cb"}}`))
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, "jobs[1].queue")
	res = run(t, "workflows", "batch", writeFile(t, "empty.json", `{"name": "b", "jobs": [], "callback": {"kind": "cb"}}`))
	require.Equal(t, ExitUsage, res.code)
	require.Contains(t, res.stderr, "jobs")
}

func TestWorkflowBatchCommands(t *testing.T) {
	t.Parallel()
	workflowBatchCommands(t, setup(t).run)
}

func TestWorkflowBatchCommandsThroughAServer(t *testing.T) {
	workflowBatchCommands(t, startServer(t, false).remote)
}
