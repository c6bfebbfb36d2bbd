// Package jobtrace carries OpenTelemetry trace context through jobs: an enqueue records its
// caller's span context in the job's headers (W3C traceparent and tracestate), and each
// attempt runs in a span whose parent is that context, so the attempt joins the enqueuer's
// trace. It uses the OpenTelemetry API only: what is recorded, and where it goes, is the
// application's tracer provider's business (nothing, without one).
package jobtrace

import (
	"context"
	"net/http"

	"github.com/hopperjobs/hopper/hoppertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Header names of the W3C trace context, as jobs carry them.
const (
	TraceParent = "traceparent"
	TraceState  = "tracestate"
)

// ScopeName is the instrumentation scope of Hopper's spans.
const ScopeName = "github.com/hopperjobs/hopper"

// w3c is the propagator of the headers: always W3C trace context, whatever the application's
// global propagator is, so that a job enqueued in one process is traced in any other.
var w3c propagation.TraceContext

// Inject returns headers with the trace context of ctx's span added, when ctx has a valid
// span and headers carry no traceparent yet (a caller's own wins). headers itself is never
// changed: a new map is returned when something is added.
func Inject(ctx context.Context, headers map[string]string) map[string]string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return headers
	}
	if _, ok := headers[TraceParent]; ok {
		return headers
	}
	out := make(map[string]string, len(headers)+2)
	for k, v := range headers {
		out[k] = v
	}
	w3c.Inject(ctx, propagation.MapCarrier(out))
	return out
}

// Extract returns ctx with the remote span context that headers carry, if any.
func Extract(ctx context.Context, headers map[string]string) context.Context {
	if _, ok := headers[TraceParent]; !ok {
		return ctx
	}
	return w3c.Extract(ctx, propagation.MapCarrier(headers))
}

// FromHTTP returns ctx with the trace context of an HTTP request's headers (traceparent),
// unless ctx has a span already (a tracing middleware's, which continues it).
func FromHTTP(ctx context.Context, h http.Header) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() || h.Get(TraceParent) == "" {
		return ctx
	}
	return w3c.Extract(ctx, propagation.HeaderCarrier(h))
}

// consumer is the start option of every attempt's span, made once: a span that records
// nothing (no tracer provider set) costs no allocation for its options.
var consumer = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}

// Start starts the span of one attempt of row, a consumer span named "process <kind>" whose
// parent is the trace context the job carries (its enqueuer's), or ctx's span when it carries
// none. Its attributes are set only when it records. End it with End.
func Start(ctx context.Context, tracer trace.Tracer, row *hoppertype.JobRow) (context.Context, trace.Span) {
	ctx, span := tracer.Start(Extract(ctx, row.Headers), "process "+row.Kind, consumer...)
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("messaging.system", "hopper"),
			attribute.String("messaging.operation.type", "process"),
			attribute.String("messaging.destination.name", row.Queue),
			attribute.String("messaging.message.id", row.ID),
			attribute.String("hopper.job.kind", row.Kind),
			attribute.Int("hopper.job.attempt", row.Attempt),
		)
	}
	return ctx, span
}

// End ends an attempt's span with its outcome: an error status when the attempt failed.
func End(span trace.Span, outcome hoppertype.Outcome, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(attribute.String("hopper.job.outcome", string(outcome)))
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// TraceID returns the trace id a job's traceparent header names, "" when it has none that
// parses.
func TraceID(headers map[string]string) string {
	sc := trace.SpanContextFromContext(Extract(context.Background(), headers))
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
