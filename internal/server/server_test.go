package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"connectrpc.com/grpcreflect/v2"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a real server on a loopback port over a fresh SQLite store.
type env struct {
	url     string
	http    *http.Client
	hopper  *hopper.Client
	store   *sqlitestore.Store
	srv     *server.Server
	jobs    hopperv1connect.JobServiceClient
	workers hopperv1connect.WorkerServiceClient
	queues  hopperv1connect.QueueServiceClient
	kinds   hopperv1connect.KindServiceClient
	admin   hopperv1connect.AdminServiceClient
	// workflows is the WorkflowService (workflows_test.go).
	workflows hopperv1connect.WorkflowServiceClient
}

type option func(*server.Config)

// served is a started client over a fresh SQLite store and a ready server on a loopback port,
// all stopped at cleanup. Every test file of the package starts its servers with it.
type served struct {
	ts     *httptest.Server
	client *hopper.Client
	store  *sqlitestore.Store
	srv    *server.Server
}

// serve starts one; clk may be nil (the wall clock), hc and sc adjust the client's and the
// server's configs.
func serve(t testing.TB, clk *clock.Fake, hc func(*hopper.Config), sc func(*server.Config, *sqlitestore.Store)) *served {
	t.Helper()
	s := newServed(t, sqlitetest.Path(t), clk, hc, sc)
	t.Cleanup(func() { s.close(t) })
	return s
}

// newServed is serve on the SQLite file path without the cleanup: the caller closes it (the
// fuzz targets replace theirs now and then).
func newServed(t testing.TB, path string, clk *clock.Fake, hc func(*hopper.Config), sc func(*server.Config, *sqlitestore.Store)) *served {
	t.Helper()
	scfg := sqlitestore.Config{Path: path}
	hcfg := hopper.Config{WorkerID: "server-test"}
	if clk != nil {
		scfg.Clock, hcfg.Clock = clk, clk
	}
	st, err := sqlitestore.Open(context.Background(), scfg)
	require.NoError(t, err)
	hcfg.Store = st
	if hc != nil {
		hc(&hcfg)
	}
	client, err := hopper.NewClient(hcfg)
	require.NoError(t, err)
	require.NoError(t, client.Start(context.Background()))
	cfg := server.Config{Client: client}
	if sc != nil {
		sc(&cfg, st)
	}
	srv, err := server.New(cfg)
	require.NoError(t, err)
	srv.SetReady(true)
	// As `hopper serve` does, it speaks HTTP/1.1 and, in plain text, HTTP/2 (h2c).
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.Protocols = server.Protocols()
	ts.Start()
	return &served{ts: ts, client: client, store: st, srv: srv}
}

// h2cClient speaks HTTP/2 in plain text, as a client of a report stream must.
func h2cClient(t testing.TB) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// close stops the server, the client and the store, each within a bound.
func (s *served) close(t testing.TB) {
	t.Helper()
	s.ts.CloseClientConnections()
	s.ts.Close()
	stoptest.Within(t, s.client, 10*time.Second)
	require.NoError(t, s.store.Close())
}

func start(t *testing.T, opts ...option) *env {
	t.Helper()
	s := serve(t, nil, nil, func(c *server.Config, _ *sqlitestore.Store) {
		for _, o := range opts {
			o(c)
		}
	})
	return newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
}

// startOnClock is start with the client, its store and the server on a fake clock that
// the test moves. The client takes no part in the leadership (DisableMaintenance) and runs no
// jobs, so the clock's only timers are those of the requests the test makes.
func startOnClock(t *testing.T) (*env, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := serve(t, clk, func(c *hopper.Config) { c.DisableMaintenance = true }, nil)
	return newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv), clk
}

// waitOnClock waits (in real time, up to 10 s) until n timers wait on clk: the requests the
// test made wait on it (a long poll holds one timer, for its next look at the store or its
// end, whichever comes first).
func waitOnClock(t *testing.T, clk *clock.Fake, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return clk.Pending() == n }, 10*time.Second, time.Millisecond,
		"%d timers wait on the clock", n)
}

// recv receives from ch, failing the test instead of hanging when nothing comes.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came on the channel within 10 s")
		panic("unreachable")
	}
}

func newEnv(url string, hc *http.Client, client *hopper.Client, st *sqlitestore.Store, srv *server.Server, opts ...connecthttp.Option) *env {
	cc := connect.NewClient(connecthttp.NewTransport(hc, url, opts...))
	return &env{url: url, http: hc, hopper: client, store: st, srv: srv,
		jobs: hopperv1connect.NewJobServiceClient(cc), workers: hopperv1connect.NewWorkerServiceClient(cc),
		queues: hopperv1connect.NewQueueServiceClient(cc), kinds: hopperv1connect.NewKindServiceClient(cc),
		admin: hopperv1connect.NewAdminServiceClient(cc), workflows: hopperv1connect.NewWorkflowServiceClient(cc)}
}

func (e *env) enqueue(t *testing.T, kind, args string) *hopperv1.Job {
	t.Helper()
	res, err := e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: kind, Args: args}})
	require.NoError(t, err)
	return res.GetJob()
}

func (e *env) get(t *testing.T, id string) *hopperv1.Job {
	t.Helper()
	res, err := e.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: id})
	require.NoError(t, err)
	return res.GetJob()
}

func (e *env) activate(t *testing.T, req *hopperv1.ActivateRequest) []*hopperv1.ActivatedJob {
	t.Helper()
	if req.Worker == "" {
		req.Worker = "w1"
	}
	res, err := e.workers.Activate(t.Context(), req)
	require.NoError(t, err)
	return res.GetJobs()
}

func requireCode(t *testing.T, want connect.Code, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, want, connect.CodeOf(err), "error: %v", err)
}

func TestJobServiceEndToEnd(t *testing.T) {
	e := start(t)
	job := e.enqueue(t, "send-email", `{"to":"a@example.com"}`)
	require.Equal(t, "queued", job.GetState())
	require.JSONEq(t, `{"to":"a@example.com"}`, job.GetArgs())

	got := e.get(t, job.GetId())
	require.Equal(t, job.GetId(), got.GetId())

	batch, err := e.jobs.EnqueueBatch(t.Context(), &hopperv1.EnqueueBatchRequest{Jobs: []*hopperv1.JobSpec{
		{Kind: "resize", Queue: "images"}, {Kind: "resize", Queue: "images", Priority: 5},
	}})
	require.NoError(t, err)
	require.Len(t, batch.GetResults(), 2)

	list, err := e.jobs.List(t.Context(), &hopperv1.ListRequest{Queues: []string{"images"}, Limit: 1})
	require.NoError(t, err)
	require.Len(t, list.GetJobs(), 1)
	require.NotEmpty(t, list.GetNextCursor())
	next, err := e.jobs.List(t.Context(), &hopperv1.ListRequest{Queues: []string{"images"}, Cursor: list.GetNextCursor()})
	require.NoError(t, err)
	require.Len(t, next.GetJobs(), 1)

	canceled, err := e.jobs.Cancel(t.Context(), &hopperv1.CancelRequest{Id: job.GetId(), Reason: "not needed"})
	require.NoError(t, err)
	require.Equal(t, "canceled", canceled.GetJob().GetState())
	_, err = e.jobs.Cancel(t.Context(), &hopperv1.CancelRequest{Id: job.GetId()})
	requireCode(t, connect.CodeFailedPrecondition, err)

	ev, err := e.jobs.Events(t.Context(), &hopperv1.EventsRequest{Id: job.GetId()})
	require.NoError(t, err)
	require.Len(t, ev.GetEvents(), 2)
	require.Equal(t, "canceled", ev.GetEvents()[1].GetTo())
	require.Equal(t, "not needed", ev.GetEvents()[1].GetReason())

	_, err = e.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: "no-such-job"})
	requireCode(t, connect.CodeNotFound, err)
}

func TestEnqueueRefusesBadInputWithTheField(t *testing.T) {
	e := start(t)
	_, err := e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", Args: "{not json"}})
	requireCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "args")
	_, err = e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", Queue: "bad queue"}})
	requireCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "queue")
	_, err = e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{})
	requireCode(t, connect.CodeInvalidArgument, err)

	spec := &hopperv1.JobSpec{Kind: "k", Args: `{"n":1}`, IdempotencyKey: "order-1"}
	first, err := e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: spec})
	require.NoError(t, err)
	again, err := e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: spec})
	require.NoError(t, err)
	require.True(t, again.GetExisting())
	require.Equal(t, first.GetJob().GetId(), again.GetJob().GetId())
	spec.Args = `{"n":2}`
	_, err = e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: spec})
	requireCode(t, connect.CodeAlreadyExists, err)
}

func TestWorkerCallsAreFencedByTheLeaseToken(t *testing.T) {
	e := start(t)
	job := e.enqueue(t, "charge", `{"amount":5,"card":"x","note":"n"}`)
	act := e.activate(t, &hopperv1.ActivateRequest{Kinds: []string{"charge"}, FetchFields: []string{"amount", "card"},
		LeaseTimeout: durationpb.New(time.Minute)})
	require.Len(t, act, 1)
	a := act[0]
	require.Equal(t, job.GetId(), a.GetId())
	require.JSONEq(t, `{"amount":5,"card":"x"}`, a.GetArgs(), "only the fetched fields")
	require.Equal(t, int32(1), a.GetAttempt())

	stale := a.GetLeaseToken() + 1
	_, err := e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: a.GetId(), LeaseToken: stale})
	requireCode(t, connect.CodeFailedPrecondition, err)
	_, err = e.workers.Fail(t.Context(), &hopperv1.FailRequest{Id: a.GetId(), LeaseToken: stale, Error: "x"})
	requireCode(t, connect.CodeFailedPrecondition, err)
	_, err = e.workers.ExtendLease(t.Context(), &hopperv1.ExtendLeaseRequest{Id: a.GetId(), LeaseToken: stale, Duration: durationpb.New(time.Minute)})
	requireCode(t, connect.CodeFailedPrecondition, err)
	_, err = e.workers.Heartbeat(t.Context(), &hopperv1.HeartbeatRequest{Id: a.GetId(), LeaseToken: stale})
	requireCode(t, connect.CodeFailedPrecondition, err)
	_, err = e.workers.ReportProgress(t.Context(), &hopperv1.ReportProgressRequest{Id: a.GetId(), LeaseToken: stale, Percent: 5})
	requireCode(t, connect.CodeFailedPrecondition, err)

	tok := a.GetLeaseToken()
	ext, err := e.workers.ExtendLease(t.Context(), &hopperv1.ExtendLeaseRequest{Id: a.GetId(), LeaseToken: tok, Duration: durationpb.New(2 * time.Minute)})
	require.NoError(t, err)
	require.WithinDuration(t, time.Now().Add(2*time.Minute), ext.GetLeaseExpiresAt().AsTime(), 5*time.Second)
	_, err = e.workers.Heartbeat(t.Context(), &hopperv1.HeartbeatRequest{Id: a.GetId(), LeaseToken: tok})
	require.NoError(t, err)
	_, err = e.workers.ReportProgress(t.Context(), &hopperv1.ReportProgressRequest{Id: a.GetId(), LeaseToken: tok, Percent: 60, Message: "charging"})
	require.NoError(t, err)
	got := e.get(t, a.GetId())
	require.Equal(t, int32(60), got.GetProgressPercent())
	require.Equal(t, "charging", got.GetProgressMessage())

	_, err = e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: a.GetId(), LeaseToken: tok, Result: `{"receipt":"r-1"}`})
	require.NoError(t, err)
	got = e.get(t, a.GetId())
	require.Equal(t, "completed", got.GetState())
	require.JSONEq(t, `{"receipt":"r-1"}`, got.GetResult())
	_, err = e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: a.GetId(), LeaseToken: tok})
	requireCode(t, connect.CodeFailedPrecondition, err)
}

func TestFailRetriesWithBackoffOrFailsForGood(t *testing.T) {
	e := start(t)
	job := e.enqueue(t, "flaky", `{}`)
	a := e.activate(t, &hopperv1.ActivateRequest{})[0]
	res, err := e.workers.Fail(t.Context(), &hopperv1.FailRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken(),
		Error: "upstream 503", RetryBackoff: durationpb.New(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, "scheduled", res.GetState())
	require.WithinDuration(t, time.Now().Add(time.Hour), res.GetRunAt().AsTime(), 5*time.Second)

	job2 := e.enqueue(t, "flaky", `{}`)
	a2 := e.activate(t, &hopperv1.ActivateRequest{})[0]
	require.Equal(t, job2.GetId(), a2.GetId())
	zero := int32(0)
	res, err = e.workers.Fail(t.Context(), &hopperv1.FailRequest{Id: a2.GetId(), LeaseToken: a2.GetLeaseToken(),
		Error: "card declined", Retries: &zero})
	require.NoError(t, err)
	require.Equal(t, "failed", res.GetState())
	got := e.get(t, job2.GetId())
	require.Equal(t, "failed", got.GetState())
	require.Equal(t, "card declined", got.GetLastError())

	ev, err := e.jobs.Events(t.Context(), &hopperv1.EventsRequest{Id: job.GetId()})
	require.NoError(t, err)
	require.Len(t, ev.GetAttempts(), 1)
	require.Equal(t, "error", ev.GetAttempts()[0].GetOutcome())
	require.Equal(t, "w1", ev.GetAttempts()[0].GetWorkerId())
}

// A Fail without retry_backoff waits the job's own backoff for the attempt that failed: base,
// base·m, base·m² from each failure (no jitter here).
func TestFailBackoffGrowsWithTheAttempt(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := serve(t, clk, nil, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	_, err := e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "flaky", MaxAttempts: 4,
		RetryPolicy: &hopperv1.RetryPolicy{Base: durationpb.New(10 * time.Second), Multiplier: 3, Jitter: -1}}})
	require.NoError(t, err)
	a := e.activate(t, &hopperv1.ActivateRequest{})[0]
	for i, want := range []time.Duration{10 * time.Second, 30 * time.Second, 90 * time.Second} {
		require.Equal(t, int32(i+1), a.GetAttempt())
		failedAt := clk.Now()
		res, err := e.workers.Fail(t.Context(), &hopperv1.FailRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken(), Error: "503"})
		require.NoError(t, err)
		require.Equal(t, "scheduled", res.GetState())
		require.Equal(t, failedAt.Add(want), res.GetRunAt().AsTime(), "retry after failure %d", i+1)
		clk.Advance(want)
		require.Eventually(t, func() bool { // once the leader has promoted it
			jobs := e.activate(t, &hopperv1.ActivateRequest{})
			if len(jobs) == 1 {
				a = jobs[0]
			}
			return len(jobs) == 1
		}, 10*time.Second, 5*time.Millisecond)
	}
	require.Equal(t, int32(4), a.GetAttempt())
}

// A long poll waits on the server's clock: an enqueue wakes it with the clock standing still
// (neither the store poll, every second, nor its timeout can have ended the wait: the wake-up
// is pushed, not polled), and with nothing enqueued it returns no jobs, and no error, once the
// clock has passed its wait, not before.
func TestLongPollWakesOnEnqueueAndTimesOutCleanly(t *testing.T) {
	e, clk := startOnClock(t)
	type result struct {
		jobs []*hopperv1.ActivatedJob
		err  error
	}
	poll := func(wait time.Duration) <-chan result {
		done := make(chan result, 1)
		go func() {
			res, err := e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "poller",
				RequestTimeout: durationpb.New(wait)})
			done <- result{res.GetJobs(), err}
		}()
		return done
	}
	done := poll(30 * time.Second)
	waitOnClock(t, clk, 1)
	job := e.enqueue(t, "wake", `{}`)
	r := recv(t, done)
	require.NoError(t, r.err)
	require.Len(t, r.jobs, 1, "woken by the enqueue, the clock standing still")
	require.Equal(t, job.GetId(), r.jobs[0].GetId())

	done = poll(200 * time.Millisecond)
	waitOnClock(t, clk, 1)
	clk.Advance(199 * time.Millisecond)
	waitOnClock(t, clk, 1) // still: the wait is not over (a poll that ended would hold no timer)
	clk.Advance(time.Millisecond)
	r = recv(t, done)
	require.NoError(t, r.err, "a timed-out long poll is an empty answer, not an error")
	require.Empty(t, r.jobs)
}

func waitingPolls(t *testing.T, e *env) int32 {
	res, err := e.admin.ListWorkers(t.Context(), &hopperv1.ListWorkersRequest{})
	require.NoError(t, err)
	var n int32
	for _, w := range res.GetWorkers() {
		n += w.GetWaitingPolls()
	}
	return n
}

func TestStreamNeverHoldsMoreThanItsCredit(t *testing.T) {
	e := start(t)
	for range 6 {
		e.enqueue(t, "push", `{}`)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "streamer", Credit: 2})
	require.NoError(t, err)
	defer stream.Close()

	received := make(chan *hopperv1.ActivatedJob, 10)
	go func() {
		for {
			msg, err := stream.Receive()
			if err != nil {
				close(received)
				return
			}
			for _, j := range msg.GetJobs() {
				received <- j
			}
		}
	}()
	held := []*hopperv1.ActivatedJob{<-received, <-received}
	require.Never(t, func() bool { return len(received) > 0 }, 200*time.Millisecond, 10*time.Millisecond,
		"a third job while two are unfinished")
	require.Equal(t, int64(2), running(t, e))

	done := 0
	for done < 6 {
		j := held[0]
		held = held[1:]
		_, err := e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken()})
		require.NoError(t, err)
		done++
		require.LessOrEqual(t, running(t, e), int64(2), "never more than the credit running")
		if done < 5 {
			held = append(held, <-received)
		}
	}
	streams, err := e.admin.ListStreams(t.Context(), &hopperv1.ListStreamsRequest{})
	require.NoError(t, err)
	require.Len(t, streams.GetStreams(), 1)
	s := streams.GetStreams()[0]
	require.Equal(t, int64(6), s.GetPushed())
	require.Equal(t, int64(6), s.GetCompleted())
	require.Equal(t, int32(2), s.GetCredit())
	require.Equal(t, int32(0), s.GetInFlight())
}

func running(t *testing.T, e *env) int64 {
	res, err := e.queues.List(t.Context(), &hopperv1.QueueServiceListRequest{})
	require.NoError(t, err)
	var n int64
	for _, q := range res.GetQueues() {
		n += q.GetCounts()["running"]
	}
	return n
}

// When a stream closes, the jobs it pushed stay their worker's (it may report on them over a
// new connection while their tokens are current); the jobs claimed for it but never sent are
// back in the queue at once.
func TestClosedStreamLeavesItsPushedJobsToTheWorker(t *testing.T) {
	e := start(t)
	for range 3 {
		e.enqueue(t, "push", `{}`)
	}
	ctx, cancel := context.WithCancel(t.Context())
	stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "leaver", Credit: 3,
		LeaseTimeout: durationpb.New(time.Hour)})
	require.NoError(t, err)
	var pushed []*hopperv1.ActivatedJob
	for len(pushed) < 3 {
		msg, err := stream.Receive()
		require.NoError(t, err)
		pushed = append(pushed, msg.GetJobs()...)
	}
	cancel()
	stream.Close()
	require.Eventually(t, func() bool {
		streams, err := e.admin.ListStreams(t.Context(), &hopperv1.ListStreamsRequest{})
		require.NoError(t, err)
		return len(streams.GetStreams()) == 0
	}, 5*time.Second, 5*time.Millisecond, "the stream is closed")
	_, body := get(t, e.url+"/metrics")
	require.Contains(t, body, "\nhopper_stream_jobs_pushed_total 3\n", "the pushes stay counted once their stream is closed")
	require.Contains(t, body, "\nhopper_stream_jobs_pushed 0\n", "unlike the open streams' gauge")
	require.Empty(t, e.activate(t, &hopperv1.ActivateRequest{Worker: "other", MaxJobs: 3}), "no job was given back")
	for _, j := range pushed {
		_, err := e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken()})
		require.NoError(t, err, "the worker reports over a new connection")
		require.Equal(t, "completed", e.get(t, j.GetId()).GetState())
	}
}

func TestQueuesAndAdmin(t *testing.T) {
	e := start(t)
	e.enqueue(t, "k", `{}`)
	_, err := e.queues.Pause(t.Context(), &hopperv1.PauseRequest{Queue: "default"})
	require.NoError(t, err)
	require.Empty(t, e.activate(t, &hopperv1.ActivateRequest{}), "a paused queue hands out nothing")
	res, err := e.queues.List(t.Context(), &hopperv1.QueueServiceListRequest{})
	require.NoError(t, err)
	require.Len(t, res.GetQueues(), 1)
	require.True(t, res.GetQueues()[0].GetPaused())
	require.Equal(t, int64(1), res.GetQueues()[0].GetCounts()["queued"])
	_, err = e.queues.Resume(t.Context(), &hopperv1.ResumeRequest{Queue: "default"})
	require.NoError(t, err)
	require.Len(t, e.activate(t, &hopperv1.ActivateRequest{}), 1)
	_, err = e.queues.Pause(t.Context(), &hopperv1.PauseRequest{Queue: "no spaces"})
	requireCode(t, connect.CodeInvalidArgument, err)

	// Set: a weight and a cap, listed; a bad value is refused naming its field, and a refused
	// weight changes nothing.
	_, err = e.queues.Set(t.Context(), &hopperv1.QueueServiceSetRequest{Queue: "default", Weight: proto.Int32(3), MaxRunning: proto.Int32(7),
		Rate: proto.String("100/1s"), CapPerKey: proto.Int32(2), RatePerKey: proto.String("10/1s"),
		KeyWeights: map[string]int32{"customer-42": 3, "customer-7": 2}})
	require.NoError(t, err)
	for _, bad := range []struct {
		req   *hopperv1.QueueServiceSetRequest
		field string
	}{
		{&hopperv1.QueueServiceSetRequest{Queue: "default", Weight: proto.Int32(-1)}, "weight"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", Weight: proto.Int32(1001), MaxRunning: proto.Int32(1)}, "weight"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", MaxRunning: proto.Int32(-2)}, "max_running"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default"}, "weight"},
		{&hopperv1.QueueServiceSetRequest{Queue: "no spaces", Weight: proto.Int32(2)}, "queue"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", Weight: proto.Int32(2), Rate: proto.String("0/1s")}, "rate"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", MaxRunning: proto.Int32(2), Rate: proto.String("abc")}, "rate"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", Rate: proto.String("1/1000h")}, "rate"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", CapPerKey: proto.Int32(-1)}, "cap_per_key"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", Weight: proto.Int32(2), RatePerKey: proto.String("x")}, "rate_per_key"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", Weight: proto.Int32(5), KeyWeights: map[string]int32{"customer-42": 1001}}, "weight"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", KeyWeights: map[string]int32{"customer-42": -1}}, "weight"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", Weight: proto.Int32(5), KeyWeights: map[string]int32{"": 2}}, "fairness_key"},
		{&hopperv1.QueueServiceSetRequest{Queue: "default", KeyWeights: map[string]int32{"a\x01b": 2}}, "fairness_key"},
		{&hopperv1.QueueServiceSetRequest{Queue: "no spaces", KeyWeights: map[string]int32{"customer-42": 2}}, "queue"},
	} {
		_, err = e.queues.Set(t.Context(), bad.req)
		requireCode(t, connect.CodeInvalidArgument, err)
		require.ErrorContains(t, err, bad.field)
	}
	res, err = e.queues.List(t.Context(), &hopperv1.QueueServiceListRequest{})
	require.NoError(t, err)
	require.Equal(t, int32(3), res.GetQueues()[0].GetWeight())
	require.Equal(t, int32(7), res.GetQueues()[0].GetMaxRunning())
	require.Equal(t, "100/1s", res.GetQueues()[0].GetRate())
	require.Equal(t, int32(2), res.GetQueues()[0].GetCapPerKey())
	require.Equal(t, "10/1s", res.GetQueues()[0].GetRatePerKey())
	require.Equal(t, map[string]int32{"customer-42": 3, "customer-7": 2}, res.GetQueues()[0].GetKeyWeights(), "a refused request changes nothing")
	_, err = e.queues.Set(t.Context(), &hopperv1.QueueServiceSetRequest{Queue: "default", Weight: proto.Int32(0), MaxRunning: proto.Int32(0),
		Rate: proto.String("0"), CapPerKey: proto.Int32(0), RatePerKey: proto.String("0"),
		KeyWeights: map[string]int32{"customer-42": 0, "customer-7": 1}})
	require.NoError(t, err)
	res, err = e.queues.List(t.Context(), &hopperv1.QueueServiceListRequest{})
	require.NoError(t, err)
	require.Zero(t, res.GetQueues()[0].GetWeight(), "0 removes the weight")
	require.Zero(t, res.GetQueues()[0].GetMaxRunning(), "and the cap")
	require.Empty(t, res.GetQueues()[0].GetRate(), "and the rate limit")
	require.Zero(t, res.GetQueues()[0].GetCapPerKey(), "and the limits per key")
	require.Empty(t, res.GetQueues()[0].GetRatePerKey())
	require.Empty(t, res.GetQueues()[0].GetKeyWeights(), "0 and 1 remove key weights")

	require.Eventually(t, func() bool {
		nodes, err := e.admin.ListNodes(t.Context(), &hopperv1.ListNodesRequest{})
		require.NoError(t, err)
		return len(nodes.GetNodes()) == 1 && nodes.GetNodes()[0].GetId() == "server-test" && nodes.GetNodes()[0].GetLeader() &&
			nodes.GetNodes()[0].GetIdle()
	}, 5*time.Second, 10*time.Millisecond, "the server's node leads and is idle: no job runs in its process")
	workers, err := e.admin.ListWorkers(t.Context(), &hopperv1.ListWorkersRequest{})
	require.NoError(t, err)
	require.Len(t, workers.GetWorkers(), 1)
	require.Equal(t, "w1", workers.GetWorkers()[0].GetName())
	require.Equal(t, int64(1), workers.GetWorkers()[0].GetActivated())
}

// Plain JSON over HTTP, as curl or any language without a Connect library sends it.
func TestPlainJSONOverHTTP(t *testing.T) {
	e := start(t)
	body := `{"job":{"kind":"hello","args":{"name":"Ada"}}}`
	resp, err := http.Post(e.url+"/hopper.v1.JobService/Enqueue", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var buf bytes.Buffer
	_, err = buf.ReadFrom(resp.Body)
	require.NoError(t, err)
	require.Contains(t, buf.String(), `"args":{"name":"Ada"}`)
	require.Contains(t, buf.String(), `"state":"queued"`)

	resp2, err := http.Get(e.url + "/healthz")
	require.NoError(t, err)
	resp2.Body.Close()
	require.Equal(t, http.StatusOK, resp2.StatusCode)
}

func TestGRPCAndGRPCWebClients(t *testing.T) {
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	client, err := hopper.NewClient(hopper.Config{Store: st})
	require.NoError(t, err)
	require.NoError(t, client.Start(context.Background()))
	srv, err := server.New(server.Config{Client: client})
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(srv)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(func() {
		ts.Close()
		stoptest.Within(t, client, 10*time.Second)
		require.NoError(t, st.Close())
	})
	hc := ts.Client()
	hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // test server
	for name, opt := range map[string]connecthttp.Option{"grpc": connecthttp.WithGRPC(), "grpc-web": connecthttp.WithGRPCWeb()} {
		e := newEnv(ts.URL, hc, client, st, srv, opt)
		job := e.enqueue(t, "proto-"+name, `{}`)
		require.Equal(t, job.GetId(), e.get(t, job.GetId()).GetId(), name)
		a := e.activate(t, &hopperv1.ActivateRequest{Kinds: []string{"proto-" + name}})
		require.Len(t, a, 1, name)
		_, err := e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: a[0].GetId(), LeaseToken: a[0].GetLeaseToken() + 7})
		requireCode(t, connect.CodeFailedPrecondition, err)
	}
}

func TestBodyOverTheLimitIs413(t *testing.T) {
	e := start(t, func(c *server.Config) { c.MaxBodyBytes = 1024 })
	big := `{"job":{"kind":"k","args":"\"` + strings.Repeat("x", 2000) + `\""}}`
	resp, err := http.Post(e.url+"/hopper.v1.JobService/Enqueue", "application/json", strings.NewReader(big))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	_, err = e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", Args: `"` + strings.Repeat("x", 2000) + `"`}})
	require.Error(t, err, "a Connect client gets an error too")
	list, err := e.jobs.List(t.Context(), &hopperv1.ListRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetJobs(), "nothing stored")
}

func TestTooManyLongPollsIs429WithRetryAfter(t *testing.T) {
	e := start(t, func(c *server.Config) { c.MaxPollsPerKey = 1 })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	waiting := make(chan error, 1)
	go func() {
		_, err := e.workers.Activate(ctx, &hopperv1.ActivateRequest{Worker: "a", RequestTimeout: durationpb.New(time.Minute)})
		waiting <- err
	}()
	require.Eventually(t, func() bool { return waitingPolls(t, e) == 1 }, 5*time.Second, time.Millisecond)

	body := `{"worker":"b","requestTimeout":"10s"}`
	resp, err := http.Post(e.url+"/hopper.v1.WorkerService/Activate", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
	require.Equal(t, "1", resp.Header.Get("Retry-After"))

	_, err = e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "c"})
	require.NoError(t, err, "a poll that does not wait is not limited")
	cancel()
	<-waiting
}

func TestTooManyStreamsIs429(t *testing.T) {
	e := start(t, func(c *server.Config) { c.MaxStreamsPerKey = 1 })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	first, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "a", Credit: 1})
	require.NoError(t, err)
	defer first.Close()
	require.Eventually(t, func() bool {
		res, err := e.admin.ListStreams(t.Context(), &hopperv1.ListStreamsRequest{})
		require.NoError(t, err)
		return len(res.GetStreams()) == 1
	}, 5*time.Second, time.Millisecond)
	second, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "b", Credit: 1})
	if err == nil {
		_, err = second.Receive()
		second.Close()
	}
	requireCode(t, connect.CodeResourceExhausted, err)
}

func TestAPIKeysAndScopes(t *testing.T) {
	var keys *sqlitestore.Store
	e := start(t, func(c *server.Config) {})
	keys = e.store
	auth := &server.KeyAuth{Keys: keys}
	srv, err := server.New(server.Config{Client: e.hopper, Auth: auth})
	require.NoError(t, err)
	srv.SetReady(true)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	mk := func(name string, scopes ...apikey.Scope) string {
		plain, k, err := apikey.New(name, scopes)
		require.NoError(t, err)
		require.NoError(t, keys.KeyCreate(t.Context(), k))
		return plain
	}
	reader := mk("reader", apikey.ScopeRead)
	worker := mk("worker", apikey.ScopeWork, apikey.ScopeEnqueue)
	revoked := mk("old", apikey.ScopeAdmin)
	_, err = keys.KeyRevoke(t.Context(), "old")
	require.NoError(t, err)

	call := func(key, path, body string) int {
		req, err := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	enqueue := `{"job":{"kind":"k"}}`
	require.Equal(t, http.StatusUnauthorized, call("", "/hopper.v1.JobService/Enqueue", enqueue))
	require.Equal(t, http.StatusUnauthorized, call("hop_garbage", "/hopper.v1.JobService/Enqueue", enqueue))
	require.Equal(t, http.StatusUnauthorized, call(revoked, "/hopper.v1.JobService/Enqueue", enqueue))
	require.Equal(t, http.StatusForbidden, call(reader, "/hopper.v1.JobService/Enqueue", enqueue))
	require.Equal(t, http.StatusOK, call(worker, "/hopper.v1.JobService/Enqueue", enqueue))
	require.Equal(t, http.StatusOK, call(reader, "/hopper.v1.QueueService/List", `{}`))
	require.Equal(t, http.StatusForbidden, call(worker, "/hopper.v1.QueueService/Pause", `{"queue":"default"}`))
	require.Equal(t, http.StatusOK, call(worker, "/hopper.v1.WorkerService/Activate", `{"worker":"w"}`))

	// A Connect client sees the codes.
	cc := connect.NewClient(connecthttp.NewTransport(http.DefaultClient, ts.URL))
	jobs := hopperv1connect.NewJobServiceClient(cc)
	ctx, info := connect.NewClientContext(t.Context())
	info.RequestHeader().Set("Authorization", "Bearer "+reader)
	_, err = jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k"}})
	requireCode(t, connect.CodePermissionDenied, err)
	_, err = jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k"}})
	requireCode(t, connect.CodeUnauthenticated, err)

	resp, err := http.Get(ts.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "health checks need no key")
}

// Every route has an auth policy, and only health checks, ServerService.Info (what /readyz
// says too) and gRPC server reflection (the schema, no data) are public: a route added
// without one would panic at New (procedures) or show up here.
func TestEveryRouteHasAnAuthPolicy(t *testing.T) {
	e := start(t)
	routes := e.srv.Routes()
	require.NotEmpty(t, routes)
	known := map[server.Scope]bool{server.ScopeEnqueue: true, server.ScopeWork: true, server.ScopeRead: true,
		server.ScopeAdmin: true, server.ScopePublic: true, server.ScopeDashboard: true}
	for pattern, scope := range routes {
		require.True(t, known[scope], "route %s has unknown scope %q", pattern, scope)
		if scope == server.ScopeDashboard { // its own login (hopperui), tested there
			require.True(t, pattern == "/ui/" || pattern == "GET /{$}", "only the dashboard checks its own sessions, not %s", pattern)
		}
		if scope == server.ScopePublic {
			require.True(t, strings.HasSuffix(pattern, "/livez") || strings.HasSuffix(pattern, "/healthz") || strings.HasSuffix(pattern, "/readyz") ||
				pattern == hopperv1connect.ServerServiceInfoProcedure ||
				strings.HasPrefix(pattern, "/"+grpcreflect.ReflectV1ServiceName+"/") ||
				strings.HasPrefix(pattern, "/"+grpcreflect.ReflectV1AlphaServiceName+"/"),
				"only the probes, ServerService.Info and reflection are public, not %s", pattern)
		}
	}
	// Every RPC method of every service is routed.
	for _, sd := range []string{hopperv1connect.JobServiceName, hopperv1connect.WorkerServiceName,
		hopperv1connect.QueueServiceName, hopperv1connect.AdminServiceName} {
		_, ok := routes["/"+sd+"/"]
		require.True(t, ok, "service %s", sd)
	}
	methods := hopperv1.File_hopper_v1_hopper_proto.Services()
	for i := range methods.Len() {
		svc := methods.Get(i)
		for j := range svc.Methods().Len() {
			path := "/" + string(svc.FullName()) + "/" + string(svc.Methods().Get(j).Name())
			_, ok := routes[path]
			require.True(t, ok, "method %s has no route", path)
		}
	}
}

func TestReleaseGivesTheJobBackAtOnce(t *testing.T) {
	e := start(t)
	job := e.enqueue(t, "k", `{}`)
	a := e.activate(t, &hopperv1.ActivateRequest{LeaseTimeout: durationpb.New(time.Hour)})[0]
	_, err := e.workers.Release(t.Context(), &hopperv1.ReleaseRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken() + 1})
	requireCode(t, connect.CodeFailedPrecondition, err)
	_, err = e.workers.Release(t.Context(), &hopperv1.ReleaseRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken(), Reason: "not ready"})
	require.NoError(t, err)
	again := e.activate(t, &hopperv1.ActivateRequest{})
	require.Len(t, again, 1)
	require.Equal(t, job.GetId(), again[0].GetId())
	require.Equal(t, int32(1), again[0].GetAttempt(), "the attempt was given back")
}

// On a loopback address the server is open until the first key exists, then closed.
func TestOpenUntilTheFirstKey(t *testing.T) {
	e := start(t)
	now := time.Now()
	var mu sync.Mutex
	auth := &server.KeyAuth{Keys: e.store, OpenWithoutKeys: true, Now: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}}
	srv, err := server.New(server.Config{Client: e.hopper, Auth: auth})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	list := func() int {
		resp, err := http.Post(ts.URL+"/hopper.v1.QueueService/List", "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, list())
	for name, set := range map[string]func(*http.Request){
		"another site's page": func(r *http.Request) { r.Header.Set("Origin", "https://evil.example") },
		"a cross-site fetch":  func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") },
		"DNS rebinding":       func(r *http.Request) { r.Host = "evil.example:7070" },
	} {
		req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/async/anything", strings.NewReader(`{}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "text/plain")
		set(req)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, name)
	}
	_, k, err := apikey.New("first", []apikey.Scope{apikey.ScopeAdmin})
	require.NoError(t, err)
	require.NoError(t, e.store.KeyCreate(t.Context(), k))
	mu.Lock()
	now = now.Add(3 * time.Second)
	mu.Unlock()
	require.Equal(t, http.StatusUnauthorized, list(), "closed once a key exists")
}

// Stalled is judged on the client's clock, the one the store stamps heartbeats with: here a
// fake one, so the test moves time instead of sleeping through it.
func TestStalledJobsAreShown(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := serve(t, clk, nil, func(c *server.Config, _ *sqlitestore.Store) { c.StalledAfter = 2 * time.Minute })
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	e.enqueue(t, "slow", `{}`)
	a := e.activate(t, &hopperv1.ActivateRequest{LeaseTimeout: durationpb.New(time.Hour)})[0]
	clk.Advance(time.Minute)
	require.False(t, e.get(t, a.GetId()).GetStalled(), "a sign of life within the threshold")
	clk.Advance(90 * time.Second)
	require.True(t, e.get(t, a.GetId()).GetStalled(), "no sign of life for longer than the threshold")
	_, err := e.workers.Heartbeat(t.Context(), &hopperv1.HeartbeatRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken()})
	require.NoError(t, err)
	require.False(t, e.get(t, a.GetId()).GetStalled(), "a heartbeat clears it")
}

// A streamed job canceled by an operator: the worker learns it from its next renewal
// (FAILED_PRECONDITION), and that answer frees the job's credit, so the worker never runs more
// than its credit. The server itself renews nothing: a stream's leases are its worker's.
func TestStreamWorkerLearnsOfALostLeaseFromItsRenewal(t *testing.T) {
	e := start(t)
	first := e.enqueue(t, "push", `{}`)
	e.enqueue(t, "push", `{}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "w", Credit: 1,
		LeaseTimeout: durationpb.New(time.Hour)})
	require.NoError(t, err)
	defer stream.Close()
	msg, err := stream.Receive()
	require.NoError(t, err)
	require.Len(t, msg.GetJobs(), 1)
	job := msg.GetJobs()[0]
	require.Equal(t, first.GetId(), job.GetId())

	_, err = e.jobs.Cancel(t.Context(), &hopperv1.CancelRequest{Id: job.GetId()})
	require.NoError(t, err)
	res, err := e.workers.Report(t.Context(), &hopperv1.ReportRequest{Renewals: []*hopperv1.ExtendLeaseRequest{
		{Id: job.GetId(), LeaseToken: job.GetLeaseToken(), Duration: durationpb.New(time.Hour)}}})
	require.NoError(t, err)
	require.Equal(t, "failed_precondition", res.GetRenewals()[0].GetCode())
	msg, err = stream.Receive()
	require.NoError(t, err)
	require.Len(t, msg.GetJobs(), 1, "the refused renewal freed the credit")
}

// A worker that holds its stream open but shows no sign of life (hung, stopped) keeps nothing:
// the server does not renew its jobs' leases, so they lapse within one lease and the leader
// can give them to another worker. The server runs on a fake clock, moved past the lease
// once the stream waits on it; the client takes no part in the leadership, so that no rescue
// takes the job meanwhile.
func TestAnOpenStreamKeepsNoLeaseAlive(t *testing.T) {
	e, clk := startOnClock(t)
	e.enqueue(t, "push", `{}`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "hung", Credit: 1,
		LeaseTimeout: durationpb.New(time.Second)})
	require.NoError(t, err)
	defer stream.Close()
	msg, err := stream.Receive()
	require.NoError(t, err)
	// The stream's only timer is its next look at the empty queue (streamRecheck): once it
	// waits on it again after the clock has passed the lease, whatever the server's clock
	// paces has run.
	waitOnClock(t, clk, 1)
	clk.Advance(1500 * time.Millisecond) // more than the lease, with the stream open
	waitOnClock(t, clk, 1)
	job := e.get(t, msg.GetJobs()[0].GetId())
	require.Equal(t, "running", job.GetState())
	require.True(t, job.GetLeaseExpiresAt().AsTime().Before(clk.Now()), "the lease lapsed: %s", job.GetLeaseExpiresAt().AsTime())
}

// A stream rechecks its key every 2 s (keyRecheck), on the server's clock: here a fake one,
// moved once past the recheck instead of waited for. (A key revoked through the server ends
// its streams at once: TestStreamsFollowTheKeys.)
func TestRevokingAKeyEndsItsStreams(t *testing.T) {
	e := start(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	srv, err := server.New(server.Config{Client: e.hopper, Auth: &server.KeyAuth{Keys: e.store}, Clock: clk})
	require.NoError(t, err)
	srv.SetReady(true)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	plain, k, err := apikey.New("worker", []apikey.Scope{apikey.ScopeWork})
	require.NoError(t, err)
	require.NoError(t, e.store.KeyCreate(t.Context(), k))
	cc := connect.NewClient(connecthttp.NewTransport(http.DefaultClient, ts.URL))
	workers := hopperv1connect.NewWorkerServiceClient(cc)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // a stream never ended fails, not hangs
	defer cancel()
	ctx, info := connect.NewClientContext(ctx)
	info.RequestHeader().Set("Authorization", "Bearer "+plain)
	stream, err := workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "w", Credit: 1,
		LeaseTimeout: durationpb.New(time.Second)})
	require.NoError(t, err)
	defer stream.Close()
	_, err = e.store.KeyRevoke(t.Context(), "worker")
	require.NoError(t, err)
	// Two timers: the key check (2 s) and, the queue being empty, the stream's look at it
	// again (streamRecheck, 1 s).
	require.Eventually(t, func() bool { return clk.Pending() == 2 }, 5*time.Second, time.Millisecond,
		"the stream waits for its next key check")
	clk.Advance(2 * time.Second)
	_, err = stream.Receive()
	requireCode(t, connect.CodeUnauthenticated, err)
}

func TestShutdownEndsStreamsAndPollsWithUnavailable(t *testing.T) {
	e := start(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "w", Credit: 1})
	require.NoError(t, err)
	defer stream.Close()
	polled := make(chan error, 1)
	go func() {
		_, err := e.workers.Activate(ctx, &hopperv1.ActivateRequest{Worker: "p", RequestTimeout: durationpb.New(time.Minute)})
		polled <- err
	}()
	require.Eventually(t, func() bool { return waitingPolls(t, e) == 1 }, 5*time.Second, time.Millisecond)
	e.srv.Shutdown()
	_, err = stream.Receive()
	requireCode(t, connect.CodeUnavailable, err)
	requireCode(t, connect.CodeUnavailable, <-polled)
	resp, err := http.Get(e.url + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
}

func TestSuspendAndResumeOverTheAPI(t *testing.T) {
	e := start(t)
	job := e.enqueue(t, "approve", `{}`)
	a := e.activate(t, &hopperv1.ActivateRequest{})[0]
	_, err := e.workers.Suspend(t.Context(), &hopperv1.SuspendRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken() + 1})
	requireCode(t, connect.CodeFailedPrecondition, err)
	_, err = e.workers.Suspend(t.Context(), &hopperv1.SuspendRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken(),
		Checkpoint: `{"step":2}`})
	require.NoError(t, err)
	got := e.get(t, job.GetId())
	require.Equal(t, "suspended", got.GetState())
	require.JSONEq(t, `{"step":2}`, got.GetCheckpoint())

	res, err := e.jobs.Resume(t.Context(), &hopperv1.JobServiceResumeRequest{Id: job.GetId(), Data: `{"ok":true}`})
	require.NoError(t, err)
	require.Equal(t, "queued", res.GetJob().GetState())
	next := e.activate(t, &hopperv1.ActivateRequest{})[0]
	require.JSONEq(t, `{"step":2}`, next.GetCheckpoint())
	require.JSONEq(t, `{"ok":true}`, next.GetResumeData())
	_, err = e.jobs.Resume(t.Context(), &hopperv1.JobServiceResumeRequest{Id: job.GetId()})
	requireCode(t, connect.CodeFailedPrecondition, err)

	_, err = e.workers.Snooze(t.Context(), &hopperv1.SnoozeRequest{Id: next.GetId(), LeaseToken: next.GetLeaseToken() + 1,
		Delay: durationpb.New(time.Minute)})
	requireCode(t, connect.CodeFailedPrecondition, err)
	_, err = e.workers.Snooze(t.Context(), &hopperv1.SnoozeRequest{Id: next.GetId(), LeaseToken: next.GetLeaseToken(),
		Delay: durationpb.New(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, "scheduled", e.get(t, job.GetId()).GetState())
}

func TestMetrics(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := serve(t, clk, nil, func(c *server.Config, _ *sqlitestore.Store) { c.StalledAfter = 50 * time.Millisecond })
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	e.enqueue(t, "m", `{}`)
	e.enqueue(t, "m", `{}`)
	e.enqueue(t, "m", `{}`)
	a := e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 2, LeaseTimeout: durationpb.New(time.Minute)})
	require.Len(t, a, 2)
	zero := int32(0)
	_, err := e.workers.Fail(t.Context(), &hopperv1.FailRequest{Id: a[1].GetId(), LeaseToken: a[1].GetLeaseToken(), Error: "x", Retries: &zero})
	require.NoError(t, err)
	require.NoError(t, e.hopper.DisableKind(t.Context(), "off"))
	require.NoError(t, e.hopper.SetRateLimit(t.Context(), hopper.RateLimit{Kind: "m", Rate: hopper.Rate{Limit: 5000, Period: time.Hour}}))
	require.NoError(t, e.hopper.SetRateLimit(t.Context(), hopper.RateLimit{Queue: "default", Rate: hopper.Rate{Limit: 100, Period: time.Second}}))
	require.NoError(t, e.hopper.SetLimit(t.Context(), hopper.Limit{Queue: "default", MaxRunning: 2, PerKey: true}))
	require.NoError(t, e.hopper.SetRateLimit(t.Context(), hopper.RateLimit{Kind: "m", Rate: hopper.Rate{Limit: 10, Period: time.Second}, PerKey: true}))
	clk.Advance(100 * time.Millisecond) // the running one is now stalled
	var body string
	require.Eventually(t, func() bool { // the leader flag comes with the first election
		resp, err := http.Get(e.url + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var buf bytes.Buffer
		_, err = buf.ReadFrom(resp.Body)
		require.NoError(t, err)
		body = buf.String()
		return strings.Contains(body, "hopper_leader 1")
	}, 5*time.Second, 20*time.Millisecond)
	for _, want := range []string{
		`hopper_jobs{queue="default",state="queued"} 1`,
		`hopper_jobs{queue="default",state="running"} 1`,
		`hopper_jobs{queue="default",state="failed"} 1`,
		`hopper_jobs_stalled{queue="default"} 1`,
		`hopper_kind_disabled{kind="m"} 0`,
		`hopper_kind_disabled{kind="off"} 1`,
		`hopper_rate_limit_starts_per_second{name="default",scope="queue"} 100`,
		`hopper_rate_limit_starts_per_second{name="m",scope="kind"} 1.3888888888888888`,
		`hopper_cap_per_key{name="default",scope="queue"} 2`,
		`hopper_rate_per_key_starts_per_second{name="m",scope="kind"} 10`,
		`hopper_dead_letters 1`,
		`hopper_dead_letter_oldest_age_seconds`,
		`hopper_queue_awaiting_compute{queue="default"} 1`,
		`hopper_queue_held_by_governor{queue="default"} 0`,
		`hopper_governor_holding 0`,
		`hopper_governor_cpu 0`,
		`hopper_governor_memory_bytes 0`,
		`go_goroutines`,
	} {
		require.Contains(t, body, want)
	}
}

// Contract 12 through the API: a completed job carries its expiry and is gone for every read
// once it has passed, before any sweep.
func TestResultsExpireThroughTheAPI(t *testing.T) {
	s := serve(t, nil, func(c *hopper.Config) { c.ResultTTL = 300 * time.Millisecond }, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	job := e.enqueue(t, "k", `{}`)
	a := e.activate(t, &hopperv1.ActivateRequest{})[0]
	_, err := e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: a.GetId(), LeaseToken: a.GetLeaseToken(), Result: `{"n":1}`})
	require.NoError(t, err)
	done := e.get(t, job.GetId())
	require.Equal(t, "completed", done.GetState())
	require.WithinDuration(t, done.GetFinishedAt().AsTime().Add(300*time.Millisecond), done.GetExpiresAt().AsTime(), 50*time.Millisecond)
	require.Eventually(t, func() bool {
		_, err := e.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: job.GetId()})
		return connect.CodeOf(err) == connect.CodeNotFound
	}, 5*time.Second, 20*time.Millisecond, "gone once expired")
	list, err := e.jobs.List(t.Context(), &hopperv1.ListRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetJobs())
}

// Small answers go uncompressed even to a caller that accepts gzip (setting up gzip for every
// few-byte Complete answer and pushed job cost a quarter of a streaming worker's server time);
// large ones are compressed.
func TestOnlyLargeAnswersAreCompressed(t *testing.T) {
	t.Parallel()
	e := start(t)
	job := e.enqueue(t, "k", `{}`)
	resp, _ := postAs(t, "application/json", e.url+"/hopper.v1.JobService/Get", `{"id":"`+job.GetId()+`"}`,
		"Accept-Encoding", "gzip")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, resp.Header.Get("Content-Encoding"), "a small answer is sent as it is")
	for range 20 {
		e.enqueue(t, "k", `{"padding":"`+strings.Repeat("x", 100)+`"}`)
	}
	resp, _ = postAs(t, "application/json", e.url+"/hopper.v1.JobService/List", `{}`, "Accept-Encoding", "gzip")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"), "a large answer is compressed")
}
