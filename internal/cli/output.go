package cli

import (
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/hopperjobs/hopper/internal/jsoncodec"
	"google.golang.org/protobuf/proto"
)

// A job in the CLI's JSON is the job of the API's JSON (docs/api.md): apiview.Job through
// package jsoncodec, so `hopper jobs show --json` shows a job exactly as JobService.Get does,
// whether the CLI reads a database or asks a server. The objects around jobs are the API's
// answers too (the same field names: nextCursor, replayedBy), except that a list or a cursor
// is printed even when empty, so that scripts need not test for it.

// apiJSON is a message that encoding/json writes as the API's JSON.
type apiJSON struct{ proto.Message }

// MarshalJSON returns the message as package jsoncodec encodes it.
func (m apiJSON) MarshalJSON() ([]byte, error) { return jsoncodec.Marshal(m.Message) }

// apiJob is j as the API shows it; stalled by this machine's clock and the default threshold,
// as the tables show it.
func apiJob(j *hopper.JobRow) apiJSON {
	return apiJSON{apiview.Job(j, j.Stalled(time.Now(), hopper.DefaultStalledAfter))}
}

// apiJobs is apiJob of each job; never nil.
func apiJobs(jobs []*hopper.JobRow) []apiJSON {
	out := make([]apiJSON, len(jobs))
	for i, j := range jobs {
		out[i] = apiJob(j)
	}
	return out
}

// jobsPage is a page of jobs: JobService.List's and DeadLetterService.List's answer.
type jobsPage struct {
	Jobs       []apiJSON `json:"jobs"`
	NextCursor string    `json:"nextCursor"`
}

// history is a job's history: JobService.Events' answer.
type history struct {
	Events   []apiJSON `json:"events"`
	Attempts []apiJSON `json:"attempts"`
}

func newHistory(events []*hopper.Event, attempts []*hopper.AttemptRecord) history {
	h := history{Events: make([]apiJSON, len(events)), Attempts: make([]apiJSON, len(attempts))}
	for i, e := range events {
		h.Events[i] = apiJSON{apiview.Event(e)}
	}
	for i, a := range attempts {
		h.Attempts[i] = apiJSON{apiview.Attempt(a)}
	}
	return h
}

func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// printJSON prints v as indented JSON. Values are printed as they are: no escaping of <, >
// and &.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// stateText is a job's state for people: a stalled running job says so.
func stateText(j *hopper.JobRow) string {
	if j.Stalled(time.Now(), hopper.DefaultStalledAfter) {
		return string(j.State) + " (stalled)"
	}
	return string(j.State)
}

// stateCell is stateText as one word, for tables: running(stalled).
func stateCell(j *hopper.JobRow) string { return strings.ReplaceAll(stateText(j), " ", "") }
