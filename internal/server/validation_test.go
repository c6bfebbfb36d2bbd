package server_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/workerapi"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/pgstore"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// backend is a store the server can run on, with a way around the client for tests that plant
// rows no client would write (from before validation existed, or a direct database write).
type backend struct {
	store hopper.Store
	// setArgs overwrites a job's stored args with raw bytes.
	setArgs func(t *testing.T, id string, args []byte)
}

// onEachStore runs fn against a server on SQLite and on PostgreSQL (skipped when no
// PostgreSQL is reachable, except under CI=true).
func onEachStore(t *testing.T, fn func(t *testing.T, e *env, b *backend)) {
	for name, open := range map[string]func(t *testing.T) *backend{"SQLite": sqliteBackend, "PostgreSQL": postgresBackend} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := open(t)
			s := serve(t, nil, func(c *hopper.Config) { c.Store = b.store }, nil)
			fn(t, newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv), b)
		})
	}
}

func sqliteBackend(t *testing.T) *backend {
	path := sqlitetest.Path(t)
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: path})
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, db.Close())
		require.NoError(t, st.Close())
	})
	return &backend{store: st, setArgs: func(t *testing.T, id string, args []byte) {
		res, err := db.ExecContext(t.Context(), `UPDATE jobs SET args = ? WHERE id = ?`, args, id)
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
	}}
}

func postgresBackend(t *testing.T) *backend {
	pgtest.Require(t)
	schema := pgtest.FreshSchema(t, "hopper_server_")
	st, err := pgstore.Open(t.Context(), pgstore.Config{URL: pgtest.URL(), Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return &backend{store: st, setArgs: func(t *testing.T, id string, args []byte) {
		conn, err := pgx.Connect(t.Context(), pgtest.URL())
		require.NoError(t, err)
		defer conn.Close(context.Background())
		tag, err := conn.Exec(t.Context(), `UPDATE `+pgx.Identifier{schema, "jobs"}.Sanitize()+` SET args = $1 WHERE id = $2`, args, id)
		require.NoError(t, err)
		require.Equal(t, int64(1), tag.RowsAffected())
	}}
}

// A body that is not UTF-8 is refused at the door: nothing is stored that a reader or a
// worker could not be given later.
func TestAsyncRefusesBytesThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		status, _, body := httpDo(t, e.http, http.MethodPost, e.url+"/v1/async/demo", "{\"a\":\"\xff\"}", nil)
		require.Equal(t, http.StatusBadRequest, status, body)
		requireJSONCode(t, body, "invalid_argument")
		require.Contains(t, body, "UTF-8")

		status, _, body = httpDo(t, e.http, http.MethodPost, e.url+"/v1/async/x%FFkind", `{}`, nil)
		require.Equal(t, http.StatusBadRequest, status, body)
		requireJSONCode(t, body, "invalid_argument")
		require.Contains(t, body, "kind")

		status, _, body = httpDo(t, e.http, http.MethodPost, e.url+"/v1/async/demo", `{}`,
			http.Header{"Idempotency-Key": {"k\xff"}})
		require.Equal(t, http.StatusBadRequest, status, body)
		require.Contains(t, body, "idempotency_key")

		list, err := e.jobs.List(t.Context(), &hopperv1.ListRequest{})
		require.NoError(t, err)
		require.Empty(t, list.GetJobs(), "nothing stored")

		// A request header or query value that is not UTF-8 is recorded with U+FFFD in its
		// place; the request itself is fine.
		status, _, body = httpDo(t, e.http, http.MethodPost, e.url+"/v1/async/demo?q=%FF", `{}`,
			http.Header{"X-Latin1": {"caf\xe9"}})
		require.Equal(t, http.StatusAccepted, status, body)
		list, err = e.jobs.List(t.Context(), &hopperv1.ListRequest{})
		require.NoError(t, err)
		require.Len(t, list.GetJobs(), 1)
		h := list.GetJobs()[0].GetHeaders()
		require.Equal(t, "caf\uFFFD", h["http.header.x-latin1"])
		require.Equal(t, "\uFFFD", h["http.query.q"])
	})
}

// PostgreSQL's text type refuses a NUL byte (SQLSTATE 22021); SQLite kept it. Either way the
// caller gets INVALID_ARGUMENT naming the field, never INTERNAL.
func TestNULBytesAreInvalidArgumentOnEveryStore(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		ctx := t.Context()
		job := e.enqueue(t, "k", `{}`)
		check := func(what, field string, err error) {
			t.Helper()
			requireCode(t, connect.CodeInvalidArgument, err)
			require.Contains(t, err.Error(), field, what)
			require.Contains(t, err.Error(), "NUL", what)
		}
		_, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", IdempotencyKey: "a\x00b"}})
		check("idempotency key", "idempotency_key", err)
		_, err = e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", GroupKey: "g\x00"}})
		check("group key", "group_key", err)
		_, err = e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", FairnessKey: "t\x00"}})
		check("fairness key", "fairness_key", err)
		_, err = e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k",
			Headers: map[string]string{"x": "a\x00"}}})
		check("header", "headers", err)
		_, err = e.jobs.Get(ctx, &hopperv1.GetRequest{Id: "\x00"})
		check("get", "id", err)
		_, err = e.jobs.Events(ctx, &hopperv1.EventsRequest{Id: job.GetId() + "\x00"})
		check("events", "id", err)
		_, err = e.jobs.Cancel(ctx, &hopperv1.CancelRequest{Id: job.GetId(), Reason: "no\x00"})
		check("cancel reason", "reason", err)
		_, err = e.jobs.List(ctx, &hopperv1.ListRequest{Kinds: []string{"k\x00"}})
		check("kinds filter", "kinds", err)
		_, err = e.workers.Activate(ctx, &hopperv1.ActivateRequest{Worker: "w\x00"})
		check("worker name", "worker", err)
		_, err = e.workers.Complete(ctx, &hopperv1.CompleteRequest{Id: "\x00", LeaseToken: 1})
		check("complete", "id", err)

		status, _, body := httpDo(t, e.http, http.MethodGet, e.url+"/v1/jobs/%00", "", nil)
		require.Equal(t, http.StatusBadRequest, status, body)
		requireJSONCode(t, body, "invalid_argument")

		require.Equal(t, "queued", e.get(t, job.GetId()).GetState(), "the refused cancel changed nothing")
	})
}

func TestGetWithoutAnIDNamesTheField(t *testing.T) {
	t.Parallel()
	e := start(t)
	_, err := e.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: ""})
	requireCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "invalid id")
}

// An unknown job is NOT_FOUND; a known job with a stale token is FAILED_PRECONDITION.
func TestCallsAboutAnUnknownJobAreNotFound(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		ctx := t.Context()
		const id, tok = "01900000-0000-7000-8000-000000000000", int64(1)
		calls := map[string]func() error{
			"Complete": func() error {
				_, err := e.workers.Complete(ctx, &hopperv1.CompleteRequest{Id: id, LeaseToken: tok})
				return err
			},
			"Fail": func() error {
				_, err := e.workers.Fail(ctx, &hopperv1.FailRequest{Id: id, LeaseToken: tok, Error: "x"})
				return err
			},
			"ExtendLease": func() error {
				_, err := e.workers.ExtendLease(ctx, &hopperv1.ExtendLeaseRequest{Id: id, LeaseToken: tok, Duration: durationpb.New(time.Minute)})
				return err
			},
			"Heartbeat": func() error {
				_, err := e.workers.Heartbeat(ctx, &hopperv1.HeartbeatRequest{Id: id, LeaseToken: tok})
				return err
			},
			"ReportProgress": func() error {
				_, err := e.workers.ReportProgress(ctx, &hopperv1.ReportProgressRequest{Id: id, LeaseToken: tok, Percent: 5})
				return err
			},
			"Release": func() error {
				_, err := e.workers.Release(ctx, &hopperv1.ReleaseRequest{Id: id, LeaseToken: tok})
				return err
			},
			"Snooze": func() error {
				_, err := e.workers.Snooze(ctx, &hopperv1.SnoozeRequest{Id: id, LeaseToken: tok, Delay: durationpb.New(time.Minute)})
				return err
			},
			"Suspend": func() error {
				_, err := e.workers.Suspend(ctx, &hopperv1.SuspendRequest{Id: id, LeaseToken: tok})
				return err
			},
		}
		for name, call := range calls {
			err := call()
			require.Equal(t, connect.CodeNotFound, connect.CodeOf(err), "%s: %v", name, err)
		}
		// The same calls with a stale token of a known job.
		e.enqueue(t, "k", `{}`)
		a := e.activate(t, &hopperv1.ActivateRequest{})[0]
		_, err := e.workers.Complete(ctx, &hopperv1.CompleteRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken() + 1})
		requireCode(t, connect.CodeFailedPrecondition, err)
		_, err = e.workers.Snooze(ctx, &hopperv1.SnoozeRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken() + 1})
		requireCode(t, connect.CodeFailedPrecondition, err)
		_, err = e.workers.Release(ctx, &hopperv1.ReleaseRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken() + 1})
		requireCode(t, connect.CodeFailedPrecondition, err)
	})
}

// One batch naming one idempotency key twice: the same payload is one job; another payload is
// the caller's mistake, named by its entry, and never an id that was rolled back.
func TestBatchRepeatingAnIdempotencyKey(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		ctx := t.Context()
		spec := func(args string) *hopperv1.JobSpec {
			return &hopperv1.JobSpec{Kind: "k", Args: args, IdempotencyKey: "order-9"}
		}
		_, err := e.jobs.EnqueueBatch(ctx, &hopperv1.EnqueueBatchRequest{Jobs: []*hopperv1.JobSpec{
			{Kind: "other"}, spec(`{"n":1}`), {Kind: "other"}, spec(`{"n":2}`),
		}})
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "jobs[3].idempotency_key")
		require.Contains(t, err.Error(), "jobs[1]")
		list, err := e.jobs.List(ctx, &hopperv1.ListRequest{})
		require.NoError(t, err)
		require.Empty(t, list.GetJobs(), "nothing stored")

		res, err := e.jobs.EnqueueBatch(ctx, &hopperv1.EnqueueBatchRequest{Jobs: []*hopperv1.JobSpec{
			spec(`{"n":1}`), spec(`{"n": 1}`),
		}})
		require.NoError(t, err)
		require.Equal(t, res.GetResults()[0].GetJob().GetId(), res.GetResults()[1].GetJob().GetId())
		require.False(t, res.GetResults()[0].GetExisting())
		require.True(t, res.GetResults()[1].GetExisting())
	})
}

// plantUndeliverable enqueues good jobs around one whose stored args are not UTF-8 (written
// behind the client's back, as a row from before validation would be), and returns the ids
// of the good ones and of the bad one.
func plantUndeliverable(t *testing.T, e *env, b *backend) (good []string, bad string) {
	t.Helper()
	for i := range 4 {
		job := e.enqueue(t, "k", fmt.Sprintf(`{"n":%d}`, i))
		if i == 1 {
			bad = job.GetId()
			continue
		}
		good = append(good, job.GetId())
	}
	b.setArgs(t, bad, []byte("{\"a\":\"\xff\"}"))
	return good, bad
}

// Reads never fail on a stored job that is not UTF-8: the answer shows U+FFFD in its place.
func requireReadable(t *testing.T, e *env, id string) *hopperv1.Job {
	t.Helper()
	job := e.get(t, id)
	require.Contains(t, job.GetArgs(), "\uFFFD")
	list, err := e.jobs.List(t.Context(), &hopperv1.ListRequest{})
	require.NoError(t, err)
	require.NotEmpty(t, list.GetJobs())
	_, err = e.jobs.Events(t.Context(), &hopperv1.EventsRequest{Id: id})
	require.NoError(t, err)
	status, _, body := httpDo(t, e.http, http.MethodGet, e.url+"/v1/jobs/"+url.PathEscape(id), "", nil)
	require.Equal(t, http.StatusOK, status, body)
	return job
}

// requireUndeliverable checks the bad job failed alone, once, into the dead-letter queue.
func requireUndeliverable(t *testing.T, e *env, bad string) {
	t.Helper()
	job := requireReadable(t, e, bad)
	require.Equal(t, "failed", job.GetState())
	require.Contains(t, job.GetLastError(), "cannot deliver to a remote worker: args are not valid UTF-8")
	ev, err := e.jobs.Events(t.Context(), &hopperv1.EventsRequest{Id: bad})
	require.NoError(t, err)
	require.Len(t, ev.GetAttempts(), 1)
	require.Equal(t, string(hopper.OutcomeUndeliverable), ev.GetAttempts()[0].GetOutcome())
	dead, err := e.hopper.DeadLetters(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, dead.DeadLetters, 1)
	require.Equal(t, bad, dead.DeadLetters[0].ID, "in the dead-letter queue")
	require.Empty(t, e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 10}), "never claimed again")
}

func TestActivateFailsAnUndeliverableJobAloneAndDeliversTheOthers(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, b *backend) {
		good, bad := plantUndeliverable(t, e, b)
		requireReadable(t, e, bad)

		jobs := e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 10, LeaseTimeout: durationpb.New(time.Hour)})
		var got []string
		for _, j := range jobs {
			got = append(got, j.GetId())
			_, err := e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken()})
			require.NoError(t, err)
		}
		require.ElementsMatch(t, good, got)
		requireUndeliverable(t, e, bad)
	})
}

func TestStreamFailsAnUndeliverableJobAloneAndDeliversTheOthers(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, b *backend) {
		good, bad := plantUndeliverable(t, e, b)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "s", Credit: 10,
			LeaseTimeout: durationpb.New(time.Hour)})
		require.NoError(t, err)
		defer stream.Close()
		var got []string
		for len(got) < len(good) {
			msg, err := stream.Receive()
			require.NoError(t, err)
			require.NotEmpty(t, msg.GetJobs())
			for _, j := range msg.GetJobs() {
				got = append(got, j.GetId())
				_, err = e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken()})
				require.NoError(t, err)
			}
		}
		require.ElementsMatch(t, good, got)
		for _, id := range good {
			require.Equal(t, "completed", e.get(t, id).GetState())
		}
		requireUndeliverable(t, e, bad)
		cancel()
	})
}

// failingStream is an RPC stream whose sends fail, as when the worker's connection breaks.
type failingStream struct{}

func (failingStream) Receive(any) error  { return io.EOF }
func (failingStream) SendHeaders() error { return nil }
func (failingStream) Send(any) error     { return errors.New("write: connection reset by peer") }

// When the answer to Activate cannot be sent, its jobs go back to the queue at once, their
// attempts given back, instead of waiting an hour-long lease with nobody on them.
func TestActivatedJobsThatCannotBeSentGoBackAtOnce(t *testing.T) {
	t.Parallel()
	e := start(t)
	job := e.enqueue(t, "k", `{}`)
	claimed, err := workerapi.Of(e.hopper).Activate(t.Context(), workerapi.ActivateParams{Worker: "w", LeaseDuration: time.Hour})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	handler := e.srv.ReleaseUnsent(func(_ context.Context, _ connect.Spec, stream connect.ServerStream) error {
		return stream.Send(&hopperv1.ActivateResponse{Jobs: []*hopperv1.ActivatedJob{
			{Id: claimed[0].ID, LeaseToken: claimed[0].Token}}})
	})
	err = handler(t.Context(), connect.Spec{Procedure: hopperv1connect.WorkerServiceActivateProcedure}, failingStream{})
	require.ErrorContains(t, err, "connection reset")
	got := e.get(t, job.GetId())
	require.Equal(t, "queued", got.GetState())
	require.Equal(t, int32(0), got.GetAttempt(), "the attempt was given back")
	again := e.activate(t, &hopperv1.ActivateRequest{})
	require.Len(t, again, 1)
	require.Equal(t, job.GetId(), again[0].GetId())
}

// RevokeKey checks its id_or_name like every other door: a NUL byte, or anything else no key
// id or name can hold, is INVALID_ARGUMENT naming the field, on every store (PostgreSQL's
// own refusal would speak SQL and name no field).
func TestRevokeKeyNamesItsField(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) *backend{"SQLite": sqliteBackend, "PostgreSQL": postgresBackend} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := open(t)
			s := serve(t, nil, func(c *hopper.Config) { c.Store = b.store },
				func(c *server.Config, _ *sqlitestore.Store) { c.Keys = b.store.(store.KeyStore) })
			admin := hopperv1connect.NewAdminServiceClient(connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL)))
			for _, bad := range []string{"a\x00b", "", "no such key!"} {
				_, err := admin.RevokeKey(t.Context(), &hopperv1.RevokeKeyRequest{IdOrName: bad})
				requireCode(t, connect.CodeInvalidArgument, err)
				require.Contains(t, err.Error(), "invalid id_or_name", "%q", bad)
				require.NotContains(t, err.Error(), "SQLSTATE")
			}
			_, err := admin.RevokeKey(t.Context(), &hopperv1.RevokeKeyRequest{IdOrName: "nobody"})
			requireCode(t, connect.CodeNotFound, err)
		})
	}
}
