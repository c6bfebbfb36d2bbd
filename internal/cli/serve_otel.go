package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

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
// provider, which records nothing). shutdown exports the spans not yet exported, within
// flushTimeout, and logs a failure.
func otlpTracing(ctx context.Context, lookup func(string) (string, bool)) (_ trace.TracerProvider, shutdown func(*slog.Logger), _ error) {
	configured := false
	for _, v := range otlpEndpointVars {
		if s, ok := lookup(v); ok && s != "" {
			configured = true
		}
	}
	if !configured {
		return nil, func(*slog.Logger) {}, nil
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
	return tp, func(log *slog.Logger) {
		// Real time: this bounds the export of the last spans at exit.
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		if err := tp.Shutdown(ctx); err != nil {
			log.Warn("export the last traces", "err", err)
		}
	}, nil
}

// flushTimeout bounds the export of the last spans when serve exits.
const flushTimeout = 5 * time.Second
