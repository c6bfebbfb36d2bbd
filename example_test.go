package hopper_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// SendInvoice is the payload of a send-invoice job. It is stored as JSON.
type SendInvoice struct {
	InvoiceID int `json:"invoice_id"`
}

// Kind names the worker that runs the job.
func (SendInvoice) Kind() string { return "send-invoice" }

// A worker is a function of the job's args type. An error fails the attempt, and the job is
// retried: here after 10 ms instead of the backoff policy's delay.
func ExampleAddWorkerFunc() {
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

	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[SendInvoice]) error {
		fmt.Printf("invoice %d, attempt %d of %d\n", job.Args.InvoiceID, job.Attempt, job.MaxAttempts)
		if job.Attempt == 1 {
			return hopper.RetryAfter(10*time.Millisecond, errors.New("mail server busy"))
		}
		return nil
	})
	// The observer tells when an attempt ends the job; a real program would keep running instead.
	ended := make(chan string, 10)
	ends := hopper.ObserverFunc(func(_ context.Context, ev hopper.JobEvent) {
		if ev.Type == hopper.JobEnded && ev.State.Terminal() {
			ended <- ev.JobID
		}
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers, Observers: []hopper.Observer{ends}})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	res, err := client.Enqueue(ctx, SendInvoice{InvoiceID: 7}, &hopper.InsertOpts{MaxAttempts: 3})
	if err != nil {
		log.Fatal(err)
	}
	<-ended
	job, err := client.Get(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State, "after", job.Attempt, "attempts")
	// Output:
	// invoice 7, attempt 1 of 3
	// invoice 7, attempt 2 of 3
	// completed after 2 attempts
}

// Open a store, start a client, enqueue a job and wait for it to end.
func ExampleClient_Enqueue() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hopper-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[SendInvoice]) error {
		return nil // an error would retry the job with backoff
	})
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: filepath.Join(dir, "hopper.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close() // after Stop
	// The observer tells when an attempt ends the job; a real program would keep running instead.
	ended := make(chan string, 10)
	ends := hopper.ObserverFunc(func(_ context.Context, ev hopper.JobEvent) {
		if ev.Type == hopper.JobEnded && ev.State.Terminal() {
			ended <- ev.JobID
		}
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers, Observers: []hopper.Observer{ends}})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	res, err := client.Enqueue(ctx, SendInvoice{InvoiceID: 42}, &hopper.InsertOpts{
		MaxAttempts: 5,
		Timeout:     30 * time.Second,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Job.State, res.Job.MaxAttempts, res.Job.Timeout)

	<-ended
	job, err := client.Get(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State)
	// Output:
	// queued 5 30s
	// completed
}

// Fleet-wide caps bound the jobs of a queue or a kind that run at once across every process
// sharing the store. MaxRunning 0 removes a cap.
func ExampleClient_SetLimit() {
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
	client, err := hopper.NewClient(hopper.Config{Store: st}) // caps need no workers here
	if err != nil {
		log.Fatal(err)
	}

	for _, l := range []hopper.Limit{
		{Queue: "emails", MaxRunning: 20},
		{Kind: "render-pdf", MaxRunning: 2},
		{Kind: "send-invoice", MaxRunning: 5},
		{Kind: "send-invoice", MaxRunning: 0}, // removes the cap again
	} {
		if err := client.SetLimit(ctx, l); err != nil {
			log.Fatal(err)
		}
	}
	limits, err := client.Limits(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, l := range limits {
		fmt.Printf("queue=%q kind=%q max_running=%d\n", l.Queue, l.Kind, l.MaxRunning)
	}
	// Output:
	// queue="emails" kind="" max_running=20
	// queue="" kind="render-pdf" max_running=2
}

// A process that stops on SIGINT or SIGTERM: the first signal starts a graceful stop that
// gives running jobs up to 30 s, a second one makes it hard.
func ExampleShutdownContext() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: "hopper.db"})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[SendInvoice]) error {
		return nil
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}

	<-ctx.Done() // the first signal
	stopCtx, cancel := hopper.ShutdownContext(30*time.Second, os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		log.Printf("stop: %v", err)
	}
}
