package hopperhttp

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apierr"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/hopperjobs/hopper/internal/jsoncodec"
)

// Error codes of the JSON error body, those of Connect and gRPC.
const (
	codeInvalidArgument   = "invalid_argument"
	codeNotFound          = "not_found"
	codeAlreadyExists     = "already_exists"
	codeResourceExhausted = "resource_exhausted"
	codeUnimplemented     = "unimplemented"
	codeUnavailable       = "unavailable"
	codeInternal          = "internal"
)

// errorBody is every error's JSON body, the shape `hopper serve` answers with too.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, errorBody{Code: code, Message: message})
}

// failed answers a request that failed for a reason that is not the caller's. An unavailable
// store (hopper.ErrUnavailable) is 503 with Retry-After and a message that names nothing
// internal. Anything else is 500 whose message is only the request id (X-Request-Id, set on
// the response when the handler is not behind a server that set it); the error is logged with
// that id. what says what the handler was doing, for the log.
func failed(w http.ResponseWriter, r *http.Request, log *slog.Logger, what string, err error, attrs ...any) {
	if errors.Is(err, hopper.ErrUnavailable) {
		w.Header().Set("Retry-After", apierr.RetryAfter)
		writeError(w, http.StatusServiceUnavailable, codeUnavailable, apierr.UnavailableMessage)
		return
	}
	id := apierr.RequestID(w, r)
	log.Error("hopperhttp: "+what, append(attrs, "path", r.URL.Path, "request_id", id, "err", err)...)
	writeError(w, http.StatusInternalServerError, codeInternal, apierr.InternalMessage(id))
}

// methodNotAllowed answers 405 with the methods the handler serves.
func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, codeUnimplemented, r.Method+" is not allowed here; use "+allow)
}

// writeJSON answers with v as JSON. Status answers change, so nothing may cache them. Values
// are written as they are: no escaping of <, > and & (the answer is JSON, not HTML).
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v) //nolint:errcheck // the client may be gone
}

// jobBody is the body of a 202 and of a status answer.
type jobBody struct {
	// Job is the job's status in the shape of a job everywhere in the API (statusView).
	Job       json.RawMessage `json:"job"`
	Existing  bool            `json:"existing,omitempty"`
	Merged    bool            `json:"merged,omitempty"`
	StatusURL string          `json:"statusUrl"`
}

// enqueued says how an enqueue found its job: an Idempotency-Key returned it (existing), or a
// Merge-Key merged the request into it (merged). Its zero value is a status answer's.
type enqueued struct{ existing, merged bool }

// writeJob answers with the status of job and how the request that enqueued it found it.
func (c *config) writeJob(w http.ResponseWriter, r *http.Request, status int, job *hopper.JobRow, how enqueued) {
	shown := statusView(job)
	if status == http.StatusAccepted && c.identityOnly != nil && c.identityOnly(r) {
		shown = &hopperv1.Job{Id: shown.Id, Kind: shown.Kind, Queue: shown.Queue, State: shown.State,
			RunAt: shown.RunAt, CreatedAt: shown.CreatedAt, StartedAt: shown.StartedAt, FinishedAt: shown.FinishedAt}
	}
	view, err := jsoncodec.Marshal(shown)
	if err != nil { // a stored time protobuf cannot carry, say
		failed(w, r, c.log, "show job", err, "job_id", job.ID)
		return
	}
	writeJSON(w, status, jobBody{Job: view, Existing: how.existing, Merged: how.merged, StatusURL: c.statusURL(job.ID)})
}

// statusView is what the async endpoints show of a job: the API's view (package apiview)
// without the args, headers, checkpoint, lease or anything else only operators see; the
// result once completed, the last error once failed.
func statusView(j *hopper.JobRow) *hopperv1.Job {
	v := apiview.Job(j, false)
	out := &hopperv1.Job{Id: v.Id, Kind: v.Kind, Queue: v.Queue, State: v.State, Attempt: v.Attempt,
		MaxAttempts: v.MaxAttempts, ProgressPercent: v.ProgressPercent, ProgressMessage: v.ProgressMessage,
		RunAt: v.RunAt, CreatedAt: v.CreatedAt, StartedAt: v.StartedAt, FinishedAt: v.FinishedAt}
	switch j.State {
	case hopper.StateCompleted:
		out.Result = v.Result
	case hopper.StateFailed:
		out.LastError = v.LastError
	}
	return out
}
