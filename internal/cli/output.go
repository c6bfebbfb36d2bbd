package cli

import (
	"encoding/json"
	"io"
	"time"

	"github.com/hopperjobs/hopper"
)

// The JSON the CLI prints is its own contract, kept apart from the Go types so that renaming
// a field in hoppertype does not break scripts. Times are RFC 3339 in UTC; zero times and
// empty values are left out.

type jobJSON struct {
	ID              string            `json:"id"`
	Kind            string            `json:"kind"`
	Queue           string            `json:"queue"`
	Priority        int               `json:"priority"`
	State           string            `json:"state"`
	Stalled         bool              `json:"stalled,omitempty"`
	Attempt         int               `json:"attempt"`
	MaxAttempts     int               `json:"max_attempts"`
	Rescues         int               `json:"rescues"`
	MaxRescues      int               `json:"max_rescues"`
	Args            json.RawMessage   `json:"args"`
	Headers         map[string]string `json:"headers,omitempty"`
	RunAt           string            `json:"run_at,omitempty"`
	Timeout         string            `json:"timeout,omitempty"`
	WorkerID        string            `json:"worker_id,omitempty"`
	LeaseExpiresAt  string            `json:"lease_expires_at,omitempty"`
	Token           int64             `json:"token,omitempty"`
	HeartbeatAt     string            `json:"heartbeat_at,omitempty"`
	ProgressPercent int               `json:"progress_percent,omitempty"`
	ProgressMessage string            `json:"progress_message,omitempty"`
	Result          json.RawMessage   `json:"result,omitempty"`
	LastError       string            `json:"last_error,omitempty"`
	IdempotencyKey  string            `json:"idempotency_key,omitempty"`
	GroupKey        string            `json:"group_key,omitempty"`
	OriginalID      string            `json:"original_id,omitempty"`
	ReplayCount     int               `json:"replay_count,omitempty"`
	ReplayedBy      string            `json:"replayed_by,omitempty"`
	ExpiresAt       string            `json:"expires_at,omitempty"`
	CreatedAt       string            `json:"created_at,omitempty"`
	StartedAt       string            `json:"started_at,omitempty"`
	FinishedAt      string            `json:"finished_at,omitempty"`
	UpdatedAt       string            `json:"updated_at,omitempty"`
}

func newJobJSON(j *hopper.JobRow) *jobJSON {
	out := &jobJSON{
		ID: j.ID, Kind: j.Kind, Queue: j.Queue, Priority: j.Priority, State: string(j.State),
		Stalled: j.Stalled(time.Now(), hopper.DefaultStalledAfter),
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, Rescues: j.Rescues, MaxRescues: j.MaxRescues,
		Args: j.Args, Headers: j.Headers,
		RunAt: jsonTime(j.RunAt), WorkerID: j.WorkerID, LeaseExpiresAt: jsonTime(j.LeaseExpiresAt),
		Token: j.Token, HeartbeatAt: jsonTime(j.HeartbeatAt), ProgressPercent: j.ProgressPercent,
		ProgressMessage: j.ProgressMessage, Result: j.Result, LastError: j.LastError,
		IdempotencyKey: j.IdempotencyKey, GroupKey: j.GroupKey, CreatedAt: jsonTime(j.CreatedAt),
		StartedAt: jsonTime(j.StartedAt), FinishedAt: jsonTime(j.FinishedAt), UpdatedAt: jsonTime(j.UpdatedAt),
		OriginalID: j.OriginalID, ReplayCount: j.ReplayCount, ReplayedBy: j.ReplayedBy, ExpiresAt: jsonTime(j.ExpiresAt),
	}
	if j.Timeout > 0 {
		out.Timeout = j.Timeout.String()
	}
	if len(out.Args) == 0 {
		out.Args = json.RawMessage("null")
	}
	return out
}

type attemptJSON struct {
	Attempt   int    `json:"attempt"`
	Token     int64  `json:"token"`
	WorkerID  string `json:"worker_id"`
	StartedAt string `json:"started_at,omitempty"`
	EndedAt   string `json:"ended_at,omitempty"`
	Outcome   string `json:"outcome"`
	Error     string `json:"error,omitempty"`
	Stack     string `json:"stack,omitempty"`
}

func newAttemptJSON(a *hopper.AttemptRecord) *attemptJSON {
	return &attemptJSON{
		Attempt: a.Attempt, Token: a.Token, WorkerID: a.WorkerID, StartedAt: jsonTime(a.StartedAt),
		EndedAt: jsonTime(a.EndedAt), Outcome: string(a.Outcome), Error: a.Error, Stack: a.Stack,
	}
}

type eventJSON struct {
	Seq    int64  `json:"seq"`
	At     string `json:"at"`
	From   string `json:"from,omitempty"`
	To     string `json:"to"`
	Actor  string `json:"actor"`
	Reason string `json:"reason,omitempty"`
}

func newEventJSON(e *hopper.Event) *eventJSON {
	return &eventJSON{
		Seq: e.Seq, At: jsonTime(e.At), From: string(e.From), To: string(e.To),
		Actor: string(e.Actor), Reason: e.Reason,
	}
}

func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stateText is a job's state for tables: a stalled running job says so.
func stateText(j *hopper.JobRow) string {
	if j.Stalled(time.Now(), hopper.DefaultStalledAfter) {
		return string(j.State) + " (stalled)"
	}
	return string(j.State)
}
