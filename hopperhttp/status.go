package hopperhttp

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apierr"
	"github.com/hopperjobs/hopper/internal/clock"
)

// MaxWait bounds the ?wait= of a status request.
const MaxWait = 60 * time.Second

// Polling intervals of a waiting status request: it starts fast, so a short job is seen as
// soon as it ends, and slows down, so a long wait costs at most ten reads a second.
const (
	firstPoll = 5 * time.Millisecond
	maxPoll   = 100 * time.Millisecond
)

// StatusHandler returns a handler for GET <prefix>/{id}: it reads the job id from the route's
// {id} wildcard and answers 200 with {"job": …, "statusUrl": …}. The job has the shape of a job
// everywhere in Hopper's API (camelCase fields, empty ones left out; docs/api.md), but shows
// only its status: id, kind, queue, state, attempt, maxAttempts, progressPercent,
// progressMessage, runAt, createdAt, startedAt and finishedAt; result (the JSON value the
// worker set, inline) once completed; lastError once failed. It never shows args, headers,
// checkpoints or the lease.
//
// With ?wait=<Go duration> (at most 60s) it answers as soon as the job is completed, failed
// or canceled, or when the wait ends, with the state then (still 200). It stops at once when
// the request ends. The wait is timed on the client's clock (hopper.Config.Clock).
//
// Errors: 400 for a bad wait or an id that is not UTF-8 or holds a NUL byte, 404 for an
// unknown job, 405 for a method other than GET or HEAD, 503 with Retry-After when the store is
// unavailable (hopper.ErrUnavailable), 500 when it fails otherwise or the route has no {id}
// wildcard (the message is only the request id; the error goes to WithLogger's logger with
// it). It panics when c is nil. It is safe for concurrent use.
func StatusHandler(c *hopper.Client, opts ...Option) http.Handler {
	if c == nil {
		panic("hopperhttp: nil *hopper.Client")
	}
	return &statusHandler{client: c, cfg: newConfig(opts)}
}

type statusHandler struct {
	client *hopper.Client
	cfg    config
}

func (h *statusHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		methodNotAllowed(w, r, "GET, HEAD")
		return
	}
	id := r.PathValue("id")
	if id == "" {
		failed(w, r, h.cfg.log, "get job", errors.New("StatusHandler is mounted at a pattern without {id}"),
			"pattern", r.Pattern)
		return
	}
	wait, err := parseWait(r.URL.Query().Get("wait"))
	if err != nil {
		writeError(w, http.StatusBadRequest, codeInvalidArgument, err.Error())
		return
	}
	job, err := waitForJob(r.Context(), h.client, id, wait)
	switch {
	case apierr.StoreRefusal(err):
		h.cfg.log.Warn("the store refused a value", "request_id", apierr.RequestID(w, r), "job_id", id, "err", err)
		writeError(w, http.StatusBadRequest, codeInvalidArgument, apierr.StoreRefusalMessage)
	case errors.Is(err, hopper.ErrInvalid):
		writeError(w, http.StatusBadRequest, codeInvalidArgument, err.Error())
	case errors.Is(err, hopper.ErrNotFound):
		writeError(w, http.StatusNotFound, codeNotFound, "no job "+id)
	case err != nil && r.Context().Err() != nil: // the client went away; nobody reads an answer
	case err != nil:
		failed(w, r, h.cfg.log, "get job", err, "job_id", id)
	default:
		h.cfg.writeJob(w, r, http.StatusOK, job, enqueued{})
	}
}

// parseWait reads ?wait=: empty means do not wait.
func parseWait(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 || d > MaxWait {
		return 0, errors.New(`invalid wait: ` + s + ` is not a duration from 0s to 60s (e.g. "10s")`)
	}
	return d, nil
}

// waitForJob returns the job once it is completed, failed or canceled, or when wait has
// passed on the client's clock. It polls: it re-reads the job every 5 ms at first, backing off
// to every 100 ms. Polling needs no notification from whichever process (local or remote
// worker, another node) ends the job, and its cost is bounded: at most ten reads a second per
// waiting request.
func waitForJob(ctx context.Context, c *hopper.Client, id string, wait time.Duration) (*hopper.JobRow, error) {
	clk := clock.OrReal(c.Config().Clock)
	deadline := clk.Now().Add(wait)
	interval := firstPoll
	for {
		job, err := c.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		left := deadline.Sub(clk.Now())
		if job.State.Terminal() || left <= 0 {
			return job, nil
		}
		t := clk.NewTimer(min(interval, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C():
		}
		interval = min(2*interval, maxPoll)
	}
}
