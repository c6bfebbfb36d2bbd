package hopper_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Invoice is the payload of an invoice job.
type Invoice struct {
	Number int `json:"number"`
}

// Kind names the worker that runs the job.
func (Invoice) Kind() string { return "invoice" }

// An enqueue records the caller's trace context in the job (its traceparent header), and the
// attempt runs in a span of that trace, however long the job waited and whichever process ran
// it. Here the spans go to an in-memory exporter; a program would use an OTLP exporter.
func ExampleConfig_tracerProvider() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hopper-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(dir, "hopper.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(ctx)

	done := make(chan struct{})
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[Invoice]) error {
		defer close(done)
		return nil // ctx carries the attempt's span: the handler's own spans nest under it
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers, TracerProvider: tp})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	reqCtx, request := tp.Tracer("shop").Start(ctx, "POST /checkout")
	res, err := client.Enqueue(reqCtx, Invoice{Number: 42}, nil)
	request.End()
	if err != nil {
		log.Fatal(err)
	}
	<-done
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("the job carries a traceparent:", res.Job.Headers["traceparent"] != "")
	for _, s := range spans.GetSpans() {
		if s.Name == "process invoice" {
			fmt.Println("its attempt is in the request's trace:", s.SpanContext.TraceID() == request.SpanContext().TraceID())
			fmt.Println("under the request's span:", s.Parent.SpanID() == request.SpanContext().SpanID())
		}
	}
	// Output:
	// the job carries a traceparent: true
	// its attempt is in the request's trace: true
	// under the request's span: true
}
