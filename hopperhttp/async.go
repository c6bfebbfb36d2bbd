package hopperhttp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apierr"
	"github.com/hopperjobs/hopper/internal/jobtrace"
)

// AsyncHandler returns a handler that enqueues a job of kind for each POST: the job's args are
// the request body, a JSON value, and its headers record the request (see the package doc). It
// answers 202 Accepted with Location: <prefix>/<job id> and the body StatusHandler answers
// with, {"job": …, "statusUrl": …}, plus "existing": true for a repeated Idempotency-Key and
// "merged": true for a request a Merge-Key merged into a waiting job.
//
// An Idempotency-Key header becomes the job's idempotency key. Within the key's retention (24 h)
// a request with the same key and the same JSON value (whitespace aside) gets the job of the
// first request, again with 202, plus Idempotent-Replayed: true; with another value it gets
// 422. Keys are shared with every other enqueue of the client, of any kind.
//
// A Merge-Key header becomes the job's merge key (hopper.InsertOpts.MergeKey) and a Merge
// header its policy: keep (the default), replace or append. A request that merges into a
// waiting job of the kind gets 202 with that job, "merged": true and Merged: true.
//
// A Fairness-Key header becomes the job's fairness key (hopper.InsertOpts.FairnessKey): the
// queue's claims share their jobs between the keys, round robin.
//
// An After header names the jobs the new job waits for (hopper.InsertOpts.After: job ids,
// comma-separated, or the header repeated; it is not recorded in the job's headers), and an
// On-Parent-Failure header what a parent's failure does to it: cancel (the default), run or
// skip (hopper.InsertOpts.OnParentFailure). The job is answered in state waiting until its
// parents have ended.
//
// Errors: 400 for a body that is not JSON in UTF-8, an empty Idempotency-Key, Merge-Key,
// Merge, Fairness-Key or On-Parent-Failure, an empty id in After, an After with a Merge-Key,
// more than hopper.MaxParents ids in it or an id of no job (the message names the field,
// after[i]), an unknown On-Parent-Failure, an unknown Merge policy or one without a Merge-Key, a Fairness-Key
// over 128 bytes or with control characters, or a kind or key that is not UTF-8 or holds a NUL
// byte, 405 for a method other than POST, 413 for a body over
// WithMaxBodyBytes or the client's Config.MaxArgsBytes (also the args an append would make), 422 for
// a reused idempotency key, 431 for headers too large to record (64 KiB), 503 with Retry-After
// when the store is unavailable (hopper.ErrUnavailable), 500 when it fails otherwise (the
// message is only the request id; the error goes to WithLogger's logger with it). It panics
// when c is nil or kind is empty. It is safe for concurrent use.
func AsyncHandler(c *hopper.Client, kind string, opts ...Option) http.Handler {
	if kind == "" {
		panic("hopperhttp: AsyncHandler needs a kind")
	}
	return newAsyncHandler(c, func(*http.Request) string { return kind }, opts)
}

// AsyncKindHandler is AsyncHandler for the kind named by the route's wildcard: mounted at
// "POST /v1/async/{kind}" with wildcard "kind", a POST to /v1/async/resize enqueues a job of
// kind "resize". Any kind can be enqueued through it, so mount it behind authorization. It
// panics when c is nil or wildcard is empty.
func AsyncKindHandler(c *hopper.Client, wildcard string, opts ...Option) http.Handler {
	if wildcard == "" {
		panic("hopperhttp: AsyncKindHandler needs the name of a path wildcard")
	}
	return newAsyncHandler(c, func(r *http.Request) string { return r.PathValue(wildcard) }, opts)
}

type asyncHandler struct {
	client *hopper.Client
	kind   func(*http.Request) string
	cfg    config
}

func newAsyncHandler(c *hopper.Client, kind func(*http.Request) string, opts []Option) *asyncHandler {
	if c == nil {
		panic("hopperhttp: nil *hopper.Client")
	}
	return &asyncHandler{client: c, kind: kind, cfg: newConfig(opts)}
}

func (h *asyncHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		methodNotAllowed(w, r, http.MethodPost)
		return
	}
	body, ok := h.readBody(w, r)
	if !ok {
		return
	}
	key, ok := oneHeader(w, r, "Idempotency-Key")
	if !ok {
		return
	}
	mergeKey, ok := oneHeader(w, r, "Merge-Key")
	if !ok {
		return
	}
	policy, ok := oneHeader(w, r, "Merge")
	if !ok {
		return
	}
	fairnessKey, ok := oneHeader(w, r, "Fairness-Key")
	if !ok {
		return
	}
	after, ok := parentsHeader(w, r)
	if !ok {
		return
	}
	onFailure, ok := oneHeader(w, r, "On-Parent-Failure")
	if !ok {
		return
	}
	kind := h.kind(r)
	// The caller's trace context (its traceparent header) goes with the job: its attempts
	// join the caller's trace.
	res, err := h.client.Enqueue(jobtrace.FromHTTP(r.Context(), r.Header), hopper.RawArgs{KindName: kind, JSON: body}, &hopper.InsertOpts{
		Queue: h.cfg.queue, Priority: h.cfg.priority, MaxAttempts: h.cfg.maxAttempts,
		Headers: requestHeaders(r, h.cfg.skip), IdempotencyKey: key, MergeKey: mergeKey, Merge: hopper.MergePolicy(policy),
		FairnessKey: fairnessKey, After: after, OnParentFailure: hopper.ParentPolicy(onFailure),
	})
	if err != nil {
		h.enqueueError(w, r, kind, body, err)
		return
	}
	w.Header().Set("Location", h.cfg.statusURL(res.Job.ID))
	if res.Existing {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	if res.Merged {
		w.Header().Set("Merged", "true")
	}
	h.cfg.writeJob(w, r, http.StatusAccepted, res.Job, enqueued{existing: res.Existing, merged: res.Merged})
}

// readBody reads a body of at most maxBody bytes that is one JSON value, or answers with the
// error and returns false.
func (h *asyncHandler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := h.cfg.maxBody
	if r.ContentLength > limit {
		tooLarge(w, fmt.Sprintf("%d bytes exceed the limit of %d", r.ContentLength, limit))
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		tooLarge(w, fmt.Sprintf("more than the limit of %d bytes", maxErr.Limit))
		return nil, false
	case err != nil: // the client went away mid-body
		writeError(w, http.StatusBadRequest, codeInvalidArgument, "read request body: "+err.Error())
		return nil, false
	case len(strings.TrimSpace(string(body))) == 0:
		writeError(w, http.StatusBadRequest, codeInvalidArgument, "the request body is empty; send the job's args as a JSON value")
		return nil, false
	}
	var v json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		msg := "the request body is not valid JSON: " + err.Error()
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			msg += fmt.Sprintf(" (at byte %d)", syn.Offset)
		}
		writeError(w, http.StatusBadRequest, codeInvalidArgument, msg)
		return nil, false
	}
	return body, true
}

func tooLarge(w http.ResponseWriter, detail string) {
	writeError(w, http.StatusRequestEntityTooLarge, codeResourceExhausted, "the request body is too large: "+detail)
}

// oneHeader returns the value of the header name (Idempotency-Key, Merge-Key, Merge,
// Fairness-Key), "" without
// one, or answers 400 for an empty one or several. The IETF draft sends an Idempotency-Key as a
// quoted string ("abc"), Stripe and others bare (abc): both name the same key, and so for the
// others.
func oneHeader(w http.ResponseWriter, r *http.Request, name string) (string, bool) {
	vals := r.Header.Values(name)
	if len(vals) == 0 {
		return "", true
	}
	v := strings.TrimSpace(vals[0])
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if len(vals) > 1 || v == "" {
		writeError(w, http.StatusBadRequest, codeInvalidArgument, "send one non-empty "+name+" header")
		return "", false
	}
	return v, true
}

// parentsHeader returns the job ids of the After headers (comma-separated, or the header
// repeated), nil without one, or answers 400 for an empty id.
func parentsHeader(w http.ResponseWriter, r *http.Request) ([]string, bool) {
	var ids []string
	for _, v := range r.Header.Values("After") {
		for id := range strings.SplitSeq(v, ",") {
			id = strings.TrimSpace(id)
			if id == "" {
				writeError(w, http.StatusBadRequest, codeInvalidArgument,
					fmt.Sprintf("invalid after[%d]: an empty job id in the After header", len(ids)))
				return nil, false
			}
			ids = append(ids, id)
		}
	}
	return ids, true
}

// requestFields are the inputs of an enqueue that come from the request; a bad one is the
// caller's error. The others come from the handler's options: a bad one is the program's.
var requestFields = map[string]bool{
	"args": true, "headers": true, "idempotency_key": true, "kind": true, "merge_key": true, "merge": true,
	"fairness_key": true, "after": true, "on_parent_failure": true,
}

// requestField reports whether field (after[2] is after's) comes from the request.
func requestField(field string) bool {
	name, _, _ := strings.Cut(field, "[")
	return requestFields[name]
}

func (h *asyncHandler) enqueueError(w http.ResponseWriter, r *http.Request, kind string, body []byte, err error) {
	var verr *hopper.ValidationError
	isValidation := errors.As(err, &verr)
	switch {
	case isValidation && verr.Field == "args" && !utf8.Valid(body):
		writeError(w, http.StatusBadRequest, codeInvalidArgument, "the request body is "+verr.Reason)
	case isValidation && verr.Field == "args": // the body is valid JSON in UTF-8: only its size is left
		tooLarge(w, verr.Reason)
	case isValidation && verr.Field == "headers":
		writeError(w, http.StatusRequestHeaderFieldsTooLarge, codeResourceExhausted,
			"the request headers are too large to record in the job: "+verr.Reason)
	case isValidation && requestField(verr.Field):
		writeError(w, http.StatusBadRequest, codeInvalidArgument, err.Error())
	case apierr.StoreRefusal(err):
		h.cfg.log.Warn("the store refused a value", "request_id", apierr.RequestID(w, r), "kind", kind, "err", err)
		writeError(w, http.StatusBadRequest, codeInvalidArgument, apierr.StoreRefusalMessage)
	case errors.Is(err, hopper.ErrDuplicate):
		// The store's message names the other job; the caller need not learn its id.
		writeError(w, http.StatusUnprocessableEntity, codeAlreadyExists,
			"the Idempotency-Key was already used with another request body or kind")
	case r.Context().Err() != nil: // the client went away; nobody reads an answer
	default:
		failed(w, r, h.cfg.log, "enqueue job", err, "kind", kind)
	}
}
