// Quickstart enqueues a few thousand jobs of two kinds into a SQLite database, works them,
// and prints what happened. Run it from the repository root:
//
//	go run ./examples/quickstart
//	go run ./cmd/hopper jobs ls --state failed
//
// resize-image jobs always succeed; charge-card jobs fail one attempt in five and get three
// attempts with a short backoff, so a few of them end in the failed state (the dead-letter
// queue), where `hopper jobs show ID` shows every attempt.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// ResizeImage is the payload of a resize-image job.
type ResizeImage struct {
	ImageID int `json:"image_id"`
	Width   int `json:"width"`
}

// Kind names the worker that runs resize-image jobs.
func (ResizeImage) Kind() string { return "resize-image" }

// ChargeCard is the payload of a charge-card job.
type ChargeCard struct {
	OrderID     int `json:"order_id"`
	AmountCents int `json:"amount_cents"`
}

// Kind names the worker that runs charge-card jobs.
func (ChargeCard) Kind() string { return "charge-card" }

// InsertOpts gives every charge-card job three attempts, 50 ms then 100 ms apart.
func (ChargeCard) InsertOpts() hopper.InsertOpts {
	return hopper.InsertOpts{
		MaxAttempts: 3,
		RetryPolicy: &hopper.RetryPolicy{Base: 50 * time.Millisecond, Multiplier: 2, Cap: time.Second},
	}
}

func main() {
	db := flag.String("db", "./hopper.db", "SQLite database file (created when missing)")
	jobs := flag.Int("jobs", 2000, "number of jobs to enqueue")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *db, *jobs); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, db string, n int) (err error) {
	store, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: db})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, store.Close()) }()

	client, err := hopper.NewClient(hopper.Config{Store: store, Workers: newWorkers()})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	start := time.Now()
	runErr := enqueueAndWait(ctx, client, n, start)
	elapsed := time.Since(start)

	// Stop gracefully even after Ctrl-C: running jobs get 5 s to finish; a second Ctrl-C
	// stops at once (unfinished jobs are released back to the queue either way).
	stopCtx, cancel := hopper.ShutdownContext(5*time.Second, os.Interrupt)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return errors.Join(runErr, fmt.Errorf("stop client: %w", err))
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	// Count again after Stop so the summary includes jobs that ended during shutdown.
	t, err := countJobs(context.Background(), client, start)
	if err != nil {
		return err
	}
	printSummary(t, elapsed, db, runErr != nil)
	return nil
}

func enqueueAndWait(ctx context.Context, client *hopper.Client, n int, start time.Time) error {
	params := make([]hopper.EnqueueParams, n)
	for i := range params {
		if i%2 == 0 {
			params[i].Args = ResizeImage{ImageID: i, Width: 320}
		} else {
			params[i].Args = ChargeCard{OrderID: i, AmountCents: 100 + rand.IntN(10000)}
		}
	}
	if _, err := client.EnqueueMany(ctx, params); err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	fmt.Printf("enqueued %d jobs in %s\n", n, time.Since(start).Round(time.Millisecond))
	return waitTerminal(ctx, client, n, start)
}
