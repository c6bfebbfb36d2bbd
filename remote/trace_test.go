package remote_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// A remote worker's attempt runs in a span of the enqueuer's trace, as in process: the
// traceparent the enqueue recorded travels with the job to the worker, whose span's parent
// is the enqueuer's span; the handler runs inside it, and a failure marks it.
func TestRemoteAttemptSpanContinuesTheEnqueuersTrace(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
			url, client := serve(t)
			ws := hopper.NewWorkers()
			inside := make(chan trace.SpanContext, 1)
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				inside <- trace.SpanContextFromContext(ctx)
				return hopper.NoRetry(errors.New("bad image"))
			})
			w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, Name: "traced-" + name,
				PollWait: time.Second, TracerProvider: tp})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer stoptest.Within(t, w, 10*time.Second)

			ctx, caller := tp.Tracer("app").Start(t.Context(), "upload")
			res, err := client.Enqueue(ctx, resize{Width: 1}, nil)
			caller.End()
			require.NoError(t, err)
			waitFor(t, client, res.Job.ID, hopper.StateFailed)

			var span tracetest.SpanStub
			require.Eventually(t, func() bool {
				for _, s := range exp.GetSpans() {
					if s.Name == "process resize" {
						span = s
						return true
					}
				}
				return false
			}, 10*time.Second, 5*time.Millisecond)
			require.Equal(t, caller.SpanContext().TraceID(), span.SpanContext.TraceID(), "the enqueuer's trace")
			require.Equal(t, caller.SpanContext().SpanID(), span.Parent.SpanID(), "under the enqueuer's span")
			require.Equal(t, span.SpanContext.SpanID(), (<-inside).SpanID(), "the handler runs inside it")
			require.Equal(t, codes.Error, span.Status.Code)
		})
	}
}
