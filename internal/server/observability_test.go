package server_test

import (
	"context"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hopperprom"
	"github.com/hopperjobs/hopper/internal/jobtrace"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/protobuf/types/known/durationpb"
)

// withMetrics serves job metrics: the client's observer and the server's /metrics share one
// hopperprom.Metrics, as in hopper serve.
func withMetrics(t *testing.T) (*served, *env) {
	t.Helper()
	m := hopperprom.New()
	s := serve(t, nil, func(c *hopper.Config) { c.Observers = []hopper.Observer{m} },
		func(c *server.Config, _ *sqlitestore.Store) { c.Metrics = m })
	return s, newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
}

// scrape returns /metrics, after checking it the way `promtool check metrics` does.
func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, body := get(t, url+"/metrics")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	require.NoError(t, err)
	require.Empty(t, problems, "promlint (promtool check metrics) finds no problem")
	return body
}

// Remote workers' attempts are counted where the server writes their outcomes: completed,
// failed (by business error code), retried, rescued, with the wait before each start and the run time of each attempt,
// by queue and kind; every state of a queue is reported, 0 included, and the oldest queued
// job's age.
func TestJobMetricsCountRemoteAttempts(t *testing.T) {
	t.Parallel()
	s, e := withMetrics(t)
	ctx := t.Context()
	for range 5 {
		e.enqueue(t, "m", `{}`)
	}
	a := e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 4, LeaseTimeout: durationpb.New(time.Minute)})
	require.Len(t, a, 4)
	_, err := e.workers.Complete(ctx, &hopperv1.CompleteRequest{Id: a[0].GetId(), LeaseToken: a[0].GetLeaseToken()})
	require.NoError(t, err)
	zero := int32(0)
	_, err = e.workers.Fail(ctx, &hopperv1.FailRequest{Id: a[1].GetId(), LeaseToken: a[1].GetLeaseToken(), Error: "x", Retries: &zero,
		ErrorCode: "card_declined"})
	require.NoError(t, err)
	res, err := e.workers.Report(ctx, &hopperv1.ReportRequest{Outcomes: []*hopperv1.Outcome{{Outcome: &hopperv1.Outcome_Fail{
		Fail: &hopperv1.FailRequest{Id: a[2].GetId(), LeaseToken: a[2].GetLeaseToken(), Error: "again"}}}}})
	require.NoError(t, err)
	require.Equal(t, "ok", res.GetOutcomes()[0].GetCode())
	_, err = workerapi.Of(s.client).RescueJobs(ctx, []workerapi.LeaseRef{{ID: a[3].GetId(), Token: a[3].GetLeaseToken()}}, "gone")
	require.NoError(t, err)

	body := scrape(t, e.url)
	for _, want := range []string{
		`hopper_jobs_enqueued_total{kind="m",queue="default"} 5`,
		`hopper_jobs_completed_total{kind="m",queue="default"} 1`,
		`hopper_jobs_failed_total{error_code="",kind="m",queue="default"} 0`,
		`hopper_jobs_failed_total{error_code="card_declined",kind="m",queue="default"} 1`,
		`hopper_jobs_retried_total{kind="m",queue="default"} 1`,
		`hopper_jobs_rescued_total{kind="m",queue="default"} 1`,
		`hopper_job_wait_seconds_count{queue="default"} 4`,
		`hopper_job_run_seconds_count{kind="m",queue="default"} 3`,
		`hopper_jobs{queue="default",state="canceled"} 0`,
		`hopper_jobs{queue="default",state="completed"} 1`,
		`hopper_queue_oldest_job_age_seconds{queue="default"} `,
		`hopper_stream_jobs_pushed_total 0`,
	} {
		require.Contains(t, body, want)
	}
}

// In-process attempts go through the same observer: one count per outcome, whoever ran it.
func TestJobMetricsCountInProcessAttempts(t *testing.T) {
	t.Parallel()
	m := hopperprom.New()
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[traced]) error { return nil })
	s := serve(t, nil, func(c *hopper.Config) {
		c.Observers, c.Workers, c.Queues = []hopper.Observer{m}, ws, map[string]hopper.QueueConfig{"local": {}}
	}, func(c *server.Config, _ *sqlitestore.Store) { c.Metrics = m })
	res, err := s.client.Enqueue(t.Context(), traced{}, &hopper.InsertOpts{Queue: "local"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		job, err := s.client.Get(t.Context(), res.Job.ID)
		require.NoError(t, err)
		return job.State == hopper.StateCompleted
	}, 10*time.Second, 5*time.Millisecond)
	require.Eventually(t, func() bool {
		return strings.Contains(scrape(t, s.ts.URL), `hopper_jobs_completed_total{kind="traced",queue="local"} 1`)
	}, 5*time.Second, 5*time.Millisecond)
}

// traced is the kind of the in-process jobs of these tests.
type traced struct{}

func (traced) Kind() string { return "traced" }

// The done-when of tracing: a job enqueued over the RPC API with a traceparent header carries
// that trace id in its headers, and its attempt's span is in that trace, under the server's
// span for the Enqueue call (otelconnect), itself under the caller's.
func TestRPCEnqueueCarriesTheCallersTrace(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[traced]) error { return nil })
	s := serve(t, nil, func(c *hopper.Config) { c.Workers, c.TracerProvider = ws, tp },
		func(c *server.Config, _ *sqlitestore.Store) { c.TracerProvider = tp })
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx, info := connect.NewClientContext(t.Context())
	info.RequestHeader().Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	res, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "traced", Args: `{}`}})
	require.NoError(t, err)
	job := res.GetJob()
	require.Equal(t, traceID, jobtrace.TraceID(job.GetHeaders()), "the job carries the caller's trace id")

	var attempt tracetest.SpanStub
	require.Eventually(t, func() bool {
		for _, sp := range exp.GetSpans() {
			if sp.Name == "process traced" {
				attempt = sp
				return true
			}
		}
		return false
	}, 10*time.Second, 5*time.Millisecond, "the attempt's span")
	require.Equal(t, traceID, attempt.SpanContext.TraceID().String(), "the attempt's span is in the caller's trace")
	var rpc tracetest.SpanStub
	for _, sp := range exp.GetSpans() {
		if sp.Name == "hopper.v1.JobService/Enqueue" {
			rpc = sp
		}
	}
	require.Equal(t, traceID, rpc.SpanContext.TraceID().String(), "otelconnect continues the caller's trace")
	require.Equal(t, rpc.SpanContext.SpanID(), attempt.Parent.SpanID(), "the Enqueue call's span is the attempt's parent")
}
