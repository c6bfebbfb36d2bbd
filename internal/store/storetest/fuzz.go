package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/google/uuid"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/stretchr/testify/require"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzRoundTrip writes any strings a store keeps (kind, queue, a header's name and value, an
// idempotency key, a group key, args, result, checkpoint and resume payloads built around
// a string, a worker name, a progress message, error text and reasons) through a
// hopper.Client, and the job's fields directly through the store, on one store opened for the
// whole fuzz run. Through the client, what is accepted is read back byte for byte (payloads
// with insignificant white space dropped from args) and what is refused is a
// *hopper.ValidationError naming the field, never another error. Directly, the store keeps
// what the client accepts exactly, and anything else exactly or refuses it with
// store.ErrInvalid. A store's package calls it from its own FuzzRoundTrip.
func FuzzRoundTrip(f *testing.F, opener Opener) {
	for _, s := range []roundTrip{
		{kind: "send-email", queue: "mail", headerName: "traceparent", headerValue: "00-abc", key: "order-1",
			group: "customer-1", payload: "hello", text: "boom"},
		{kind: awkwardKind, queue: "q-ü", headerName: "x-émoji", headerValue: "🚀\uFFFD", key: strings.Repeat("é", 256),
			group: awkward, payload: awkward, text: awkward, op: opFail},
		{kind: "k\x00", queue: "q\x00", headerName: "h\x00", headerValue: "v\x00", key: "k\x00", group: "g\x00",
			payload: "a\x00b", text: "t\x00", op: opSuspend},
		{kind: "caf\xe9", queue: "caf\xe9", headerName: "caf\xe9", headerValue: "caf\xe9", key: "caf\xe9", group: "caf\xe9",
			payload: "caf\xe9", text: "caf\xe9", op: opRelease},
		{kind: "k", payload: `\u0000 \ud800 "`, text: strings.Repeat("x", 5000), op: opComplete | opMarshal},
		{kind: "k", payload: "<b>&amp;</b>\u2028", text: "", op: opFail | opMarshal | opWorker},
		{kind: "a b", queue: "a b", headerName: "", headerValue: "v", payload: `"},"x":{"`, op: opSuspend | opWorker},
	} {
		f.Add(s.kind, s.queue, s.headerName, s.headerValue, s.key, s.group, s.payload, s.text, s.op)
	}
	st := opener(f, clock.Real{})()
	f.Cleanup(func() { st.Close() })
	client, err := hopper.NewClient(hopper.Config{Store: st, WorkerID: "fuzz"})
	require.NoError(f, err)
	require.NoError(f, client.Start(context.Background()))
	f.Cleanup(func() { stoptest.Within(f, client, 10*time.Second) })
	f.Fuzz(func(t *testing.T, kind, queue, headerName, headerValue, key, group, payload, text string, op uint8) {
		in := roundTrip{kind: kind, queue: queue, headerName: headerName, headerValue: headerValue, key: key,
			group: group, payload: payload, text: text, op: op, n: fuzzInputs.Add(1)}
		accepted := in.throughClient(t, client)
		in.throughStore(t, st, accepted)
	})
}

// fuzzInputs numbers inputs, so that each uses idempotency keys of its own.
var fuzzInputs atomic.Int64

// What an input's op byte chooses: how its attempt ends (the low two bits) and how its
// payload string becomes JSON and who claims it.
const (
	opComplete uint8 = iota // complete with the payload as result
	opFail                  // fail with the text as error
	opSuspend               // suspend with the payload as checkpoint, resume with it as data, cancel with the text
	opRelease               // release with the text as reason, cancel with the text

	opMarshal uint8 = 1 << 4 // encode the payload string with json.Marshal instead of pasting it into a string literal
	opWorker  uint8 = 1 << 5 // claim as a worker named by the text
)

// roundTrip is one input of FuzzRoundTrip.
type roundTrip struct {
	kind, queue, headerName, headerValue, key, group, payload, text string
	op                                                              uint8
	n                                                               int64
}

// json is the payload string as a JSON document: pasted between quotes (so it may not be
// JSON, or not UTF-8) or encoded by json.Marshal.
func (in roundTrip) json() json.RawMessage {
	if in.op&opMarshal != 0 {
		b, _ := json.Marshal(map[string]string{"s": in.payload}) // cannot fail for a string
		return b
	}
	return json.RawMessage(`{"s":"` + in.payload + `"}`)
}

func (in roundTrip) headers() map[string]string {
	if in.headerName == "" && in.headerValue == "" {
		return nil
	}
	return map[string]string{in.headerName: in.headerValue}
}

// idempotencyKey makes the key the input's own (prefix n): a key used before with another
// payload is a duplicate, and its job is another input's.
func (in roundTrip) idempotencyKey(prefix string) string {
	if in.key == "" {
		return ""
	}
	return fmt.Sprintf("%s%d-%s", prefix, in.n, in.key)
}

// requireRefused requires err to be a *hopper.ValidationError naming one of fields.
func requireRefused(t *testing.T, err error, what string, fields ...string) {
	t.Helper()
	var ve *hopper.ValidationError
	require.ErrorAs(t, err, &ve, "%s: want a *hopper.ValidationError, got %v", what, err)
	require.ErrorIs(t, err, hopper.ErrInvalid, what)
	require.Contains(t, fields, strings.TrimPrefix(ve.Field, "jobs[0]."), "%s: the error names the field: %v", what, err)
}

// compact is a JSON document without insignificant white space.
func compact(t *testing.T, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, json.Compact(&out, b))
	return out.String()
}

// throughClient enqueues the job, claims it, reports progress and ends the attempt as the op
// says, checking each accepted value as read back and each refusal's field. It reports
// whether the client accepted the job's own fields.
func (in roundTrip) throughClient(t *testing.T, c *hopper.Client) (accepted bool) {
	ctx := t.Context()
	job, accepted := in.enqueue(t, c)
	worker := "fuzz-worker"
	if in.op&opWorker != 0 {
		worker = in.text
	}
	params := workerapi.ActivateParams{Worker: worker, Queue: job.Queue, Kinds: []string{job.Kind}}
	claimed, err := workerapi.Of(c).Activate(ctx, params)
	if err != nil {
		requireRefused(t, err, "activate as "+worker, "worker")
		params.Worker, worker = "fuzz-worker", "fuzz-worker"
		claimed, err = workerapi.Of(c).Activate(ctx, params)
		require.NoError(t, err)
	}
	require.Len(t, claimed, 1, "the job just enqueued is claimed")
	require.Equal(t, job.ID, claimed[0].ID, "the job just enqueued is claimed")
	job = claimed[0]
	require.Equal(t, worker, job.WorkerID)

	if err := workerapi.Of(c).ReportJobProgress(ctx, job.ID, job.Token, 50, in.text); err != nil {
		requireRefused(t, err, "progress", "message")
	} else {
		require.Equal(t, in.text, in.get(t, c, job.ID).ProgressMessage, "progress message")
	}
	switch in.op % 4 {
	case opComplete:
		in.complete(t, c, job)
	case opFail:
		in.fail(t, c, job, worker)
	case opSuspend:
		in.suspend(t, c, job)
		in.cancel(t, c, job.ID)
	case opRelease:
		in.release(t, c, job, worker)
		in.cancel(t, c, job.ID)
	}
	return accepted
}

func (in roundTrip) get(t *testing.T, c *hopper.Client, id string) *hopper.JobRow {
	t.Helper()
	job, err := c.Get(t.Context(), id)
	require.NoError(t, err)
	return job
}

// enqueue enqueues the input's job and checks it as stored; when the client refuses it, it
// enqueues a plain job in a queue of its own, so that the other fields still get their turn.
func (in roundTrip) enqueue(t *testing.T, c *hopper.Client) (*hopper.JobRow, bool) {
	t.Helper()
	args, headers := in.json(), in.headers()
	opts := &hopper.InsertOpts{Queue: in.queue, Headers: headers, IdempotencyKey: in.idempotencyKey("c"), GroupKey: in.group}
	res, err := c.Enqueue(t.Context(), hopper.RawArgs{KindName: in.kind, JSON: args}, opts)
	if err != nil {
		requireRefused(t, err, "enqueue", "kind", "queue", "headers", "idempotency_key", "group_key", "args")
		res, err = c.Enqueue(t.Context(), hopper.RawArgs{KindName: "fuzz", JSON: json.RawMessage(`{}`)},
			&hopper.InsertOpts{Queue: fmt.Sprintf("fuzz-%d", in.n)})
		require.NoError(t, err)
		return res.Job, false
	}
	require.False(t, res.Existing, "a key of its own finds no job")
	got := in.get(t, c, res.Job.ID)
	wantQueue := in.queue
	if wantQueue == "" {
		wantQueue = hopper.DefaultQueue
	}
	require.Equal(t, []any{in.kind, wantQueue, opts.IdempotencyKey, in.group, compact(t, args)},
		[]any{got.Kind, got.Queue, got.IdempotencyKey, got.GroupKey, string(got.Args)}, "kind, queue, keys and args as sent")
	if len(headers) > 0 || len(got.Headers) > 0 {
		require.Equal(t, headers, got.Headers, "headers as sent")
	}
	return got, true
}

func (in roundTrip) complete(t *testing.T, c *hopper.Client, job *hopper.JobRow) {
	t.Helper()
	result := in.json()
	if err := workerapi.Of(c).CompleteJob(t.Context(), job.ID, job.Token, result); err != nil {
		requireRefused(t, err, "complete", "result")
		require.NoError(t, workerapi.Of(c).CompleteJob(t.Context(), job.ID, job.Token, nil))
		return
	}
	got := in.get(t, c, job.ID)
	require.Equal(t, hopper.StateCompleted, got.State)
	require.Equal(t, string(result), string(got.Result), "result as sent")
}

func (in roundTrip) fail(t *testing.T, c *hopper.Client, job *hopper.JobRow, worker string) {
	t.Helper()
	none := 0
	_, err := workerapi.Of(c).FailJob(t.Context(), job.ID, job.Token, workerapi.FailParams{Error: in.text, RetriesLeft: &none})
	want := in.text
	if err != nil {
		requireRefused(t, err, "fail", "error")
		want = "refused error text"
		_, err = workerapi.Of(c).FailJob(t.Context(), job.ID, job.Token, workerapi.FailParams{Error: want, RetriesLeft: &none})
		require.NoError(t, err)
	}
	require.Equal(t, hopper.StateFailed, in.get(t, c, job.ID).State)
	attempts, err := c.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	require.Equal(t, []string{want, worker}, []string{attempts[0].Error, attempts[0].WorkerID}, "error text and worker as sent")
}

// suspend parks the job with the payload as checkpoint, then resumes it with the payload as
// data.
func (in roundTrip) suspend(t *testing.T, c *hopper.Client, job *hopper.JobRow) {
	t.Helper()
	ctx := t.Context()
	payload := in.json()
	err := workerapi.Of(c).SuspendJob(ctx, job.ID, job.Token, payload, workerapi.SuspendParams{})
	if err != nil {
		requireRefused(t, err, "suspend", "checkpoint")
		require.NoError(t, workerapi.Of(c).SuspendJob(ctx, job.ID, job.Token, nil, workerapi.SuspendParams{}))
	} else {
		require.Equal(t, string(payload), string(in.get(t, c, job.ID).Checkpoint), "checkpoint as sent")
	}
	if _, err := c.Resume(ctx, job.ID, payload); err != nil {
		requireRefused(t, err, "resume", "data")
		return
	}
	require.Equal(t, string(payload), string(in.get(t, c, job.ID).ResumeData), "resume data as sent")
}

// release gives the job back with the text as reason, recorded as the attempt's error.
func (in roundTrip) release(t *testing.T, c *hopper.Client, job *hopper.JobRow, worker string) {
	t.Helper()
	if err := workerapi.Of(c).ReleaseJob(t.Context(), job.ID, job.Token, in.text); err != nil {
		requireRefused(t, err, "release", "reason")
		require.NoError(t, workerapi.Of(c).ReleaseJob(t.Context(), job.ID, job.Token, "refused reason"))
		return
	}
	attempts, err := c.Attempts(t.Context(), job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	want := in.text
	if want == "" {
		want = "released by the worker"
	}
	require.Equal(t, []string{want, worker}, []string{attempts[0].Error, attempts[0].WorkerID}, "release reason and worker as sent")
}

// cancel cancels the job with the text as reason (a plain one when that is refused).
func (in roundTrip) cancel(t *testing.T, c *hopper.Client, id string) {
	t.Helper()
	ctx := t.Context()
	if _, err := c.CancelBy(ctx, id, hopper.ActorOperator, in.text); err != nil {
		requireRefused(t, err, "cancel", "reason")
		_, err = c.CancelBy(ctx, id, hopper.ActorOperator, "refused reason")
		require.NoError(t, err)
		return
	}
	evs, err := c.Events(ctx, id)
	require.NoError(t, err)
	last := evs[len(evs)-1]
	require.Equal(t, []string{string(hopper.StateCanceled), in.text}, []string{string(last.To), last.Reason}, "cancel reason as sent")
}

// throughStore inserts the input's job directly: what the client accepted is kept exactly;
// the rest is kept exactly or refused with store.ErrInvalid. The job is then canceled with
// the text as reason when the client would take it (kept exactly too), so that no later
// input claims it.
func (in roundTrip) throughStore(t *testing.T, st store.Store, clientAccepted bool) {
	ctx := t.Context()
	p := &store.InsertParams{
		ID: uuid.Must(uuid.NewV7()).String(), Kind: in.kind, Queue: in.queue, Args: in.json(), Headers: in.headers(),
		IdempotencyKey: in.idempotencyKey("s"), GroupKey: in.group, MaxAttempts: 1,
		Actor: hoppertype.ActorAPI, Reason: "enqueue",
	}
	if p.IdempotencyKey != "" {
		p.IdempotencyTTL = time.Hour
	}
	res, err := st.JobInsertMany(ctx, []*store.InsertParams{p})
	if err != nil {
		require.False(t, clientAccepted, "the store refuses what the client accepted: %v", err)
		require.ErrorIs(t, err, store.ErrInvalid, "a store refuses what it cannot keep with ErrInvalid")
		_, err := st.JobGet(ctx, p.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "a refused insert stores nothing")
		return
	}
	id := res[0].Job.ID
	got, err := st.JobGet(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []any{p.Kind, p.Queue, p.IdempotencyKey, p.GroupKey, string(p.Args)},
		[]any{got.Kind, got.Queue, got.IdempotencyKey, got.GroupKey, string(got.Args)}, "kept exactly")
	if len(p.Headers) > 0 || len(got.Headers) > 0 {
		require.Equal(t, p.Headers, got.Headers, "headers kept exactly")
	}
	reason := in.text
	if field.Clean(reason) != reason || len(reason) > 4<<10 {
		reason = "fuzz"
	}
	_, err = st.JobCancel(ctx, &store.CancelParams{ID: id, Actor: hoppertype.ActorOperator, Reason: reason})
	require.NoError(t, err)
	evs, err := st.JobEvents(ctx, id)
	require.NoError(t, err)
	require.Equal(t, reason, evs[len(evs)-1].Reason, "cancel reason kept exactly")
}
