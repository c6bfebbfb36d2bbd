package cli

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// otlpEndpointVars are the variables that turn serve's trace export on: the standard
// OpenTelemetry ones, which the exporter reads itself (with OTEL_EXPORTER_OTLP_HEADERS,
// OTEL_EXPORTER_OTLP_TIMEOUT and the others).
var otlpEndpointVars = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}

// otlpTracing returns the tracer provider of serve: one that exports spans with OTLP over
// HTTP (protobuf) in batches, when one of otlpEndpointVars is set; nil otherwise (the global
// provider, which records nothing). shutdown flushes the spans not yet exported.
func otlpTracing(ctx context.Context, lookup func(string) (string, bool)) (_ trace.TracerProvider, shutdown func(context.Context) error, _ error) {
	configured := false
	for _, v := range otlpEndpointVars {
		if s, ok := lookup(v); ok && s != "" {
			configured = true
		}
	}
	if !configured {
		return nil, func(context.Context) error { return nil }, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// service.name is hopper unless OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "hopper")),
		resource.WithFromEnv(), resource.WithHost(), resource.WithProcessPID())
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}
