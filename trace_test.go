package hopper

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/jobtrace"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// tracing is an SDK tracer provider whose spans are kept in memory.
func tracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	return tp, exp
}

// waitSpan waits for the ended span named name.
func waitSpan(t *testing.T, exp *tracetest.InMemoryExporter, name string) tracetest.SpanStub {
	t.Helper()
	var got tracetest.SpanStub
	require.Eventually(t, func() bool {
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				got = s
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "no span %q", name)
	return got
}

// An enqueue records its caller's span in the job's traceparent header, and the attempt runs
// in a span of the same trace whose parent is the enqueuer's span: one trace from the request
// that enqueued to the work it caused, however long the job waited.
func TestAttemptSpanContinuesTheEnqueuersTrace(t *testing.T) {
	t.Parallel()
	tp, exp := tracing(t)
	ws := NewWorkers()
	var handlerSpan trace.SpanContext
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[observed]) error {
		handlerSpan = trace.SpanContextFromContext(ctx)
		return errors.New("handler failed")
	})
	b := setup(t, ws, func(c *Config) { c.TracerProvider = tp })

	ctx, caller := tp.Tracer("app").Start(t.Context(), "checkout")
	res, err := b.client.Enqueue(ctx, observed{}, &InsertOpts{MaxAttempts: 1, Queue: "default"})
	caller.End()
	require.NoError(t, err)
	traceID := caller.SpanContext().TraceID()
	require.Equal(t, traceID.String(), jobtrace.TraceID(res.Job.Headers), "the job carries the caller's trace")
	stored, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, res.Job.Headers[jobtrace.TraceParent], stored.Headers[jobtrace.TraceParent], "and keeps it")

	span := waitSpan(t, exp, "process observed")
	require.Equal(t, traceID, span.SpanContext.TraceID())
	require.Equal(t, caller.SpanContext().SpanID(), span.Parent.SpanID(), "the enqueuer's span is its parent")
	require.Equal(t, trace.SpanKindConsumer, span.SpanKind)
	require.Equal(t, codes.Error, span.Status.Code, "a failed attempt's span says so")
	require.Equal(t, span.SpanContext.SpanID(), handlerSpan.SpanID(), "the handler runs inside the span")
	b.waitFor(t, res.Job.ID, StateFailed)
}

// A caller's own traceparent header wins; an enqueue outside any span adds none.
func TestEnqueueKeepsACallersTraceparent(t *testing.T) {
	t.Parallel()
	tp, _ := tracing(t)
	b := setup(t, nil, func(c *Config) { c.TracerProvider = tp })
	const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx, span := tp.Tracer("app").Start(t.Context(), "caller")
	defer span.End()
	res, err := b.client.Enqueue(ctx, observed{}, &InsertOpts{Headers: map[string]string{jobtrace.TraceParent: own}})
	require.NoError(t, err)
	require.Equal(t, own, res.Job.Headers[jobtrace.TraceParent])

	res, err = b.client.Enqueue(context.Background(), observed{}, nil)
	require.NoError(t, err)
	require.NotContains(t, res.Job.Headers, jobtrace.TraceParent)
}
