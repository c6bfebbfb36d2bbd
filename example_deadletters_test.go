package hopper_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// Refund is the payload of a refund job.
type Refund struct {
	OrderID int `json:"order_id"`
}

// Kind names the worker that runs the job.
func (Refund) Kind() string { return "refund" }

// A job that fails for good lands in the dead-letter queue, and the on-dead-letter hook hears
// of it. Once the cause is fixed, a replay runs the same work again as a new job with lineage,
// and the audit log says who replayed what.
func ExampleClient_Replay() {
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

	fixed := make(chan struct{})
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[Refund]) error {
		select {
		case <-fixed:
			return nil
		default:
			return hopper.NoRetry(errors.New("payment provider rejected the refund"))
		}
	})
	dead := make(chan string, 1)
	// The observer tells when an attempt ends the job; a real program would keep running instead.
	ended := make(chan string, 10)
	ends := hopper.ObserverFunc(func(_ context.Context, ev hopper.JobEvent) {
		if ev.Type == hopper.JobEnded && ev.State.Terminal() {
			ended <- ev.JobID
		}
	})
	client, err := hopper.NewClient(hopper.Config{
		Store: st, Workers: workers, Observers: []hopper.Observer{ends},
		DeadLetterRetention: 30 * 24 * time.Hour, // keep dead letters a month
		OnDeadLetter: func(ctx context.Context, job *hopper.JobRow) {
			dead <- job.ID // page someone; this cannot change the dead letter
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	res, err := client.Enqueue(ctx, Refund{OrderID: 42}, nil)
	if err != nil {
		log.Fatal(err)
	}
	id := <-dead
	stats, err := client.DeadLetterStats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("dead letters:", stats.Count, "- the hook saw our job:", id == res.Job.ID)

	close(fixed)
	replay, err := client.Replay(ctx, id, "alice")
	if err != nil {
		log.Fatal(err)
	}
	for jobID := range ended { // the original's end came first
		if jobID == replay.ID {
			break
		}
	}
	if replay, err = client.Get(ctx, replay.ID); err != nil {
		log.Fatal(err)
	}
	fmt.Println("replay", replay.ReplayCount, "of the original:", replay.OriginalID == id, "-", replay.State)
	audit, err := client.Replays(ctx, &hopper.ReplayListParams{OriginalID: id})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("replayed by", audit.Replays[0].ReplayedBy)

	// The replayed dead letter has been dealt with: no longer listed nor counted, unless asked.
	if stats, err = client.DeadLetterStats(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("dead letters:", stats.Count, "- replayed:", stats.Replayed)
	all, err := client.DeadLetters(ctx, &hopper.DeadLetterParams{IncludeReplayed: true})
	if err != nil {
		log.Fatal(err)
	}
	d := all.DeadLetters[0]
	fmt.Println("with the replayed:", len(all.DeadLetters), "- replayed", d.Replays, "time(s), as our replay:", d.LastReplayID == replay.ID)
	// Output:
	// dead letters: 1 - the hook saw our job: true
	// replay 1 of the original: true - completed
	// replayed by alice
	// dead letters: 0 - replayed: 1
	// with the replayed: 1 - replayed 1 time(s), as our replay: true
}

// Completed jobs are kept for their result TTL: the job's own, else its worker's, else the
// client's (24 h by default). After it, Get reports ErrNotFound and the leader deletes them.
func ExampleInsertOpts_resultTTL() {
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
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[Refund]) error {
		return hopper.SetResult(ctx, map[string]int{"refunded": job.Args.OrderID})
	})
	// The observer tells when an attempt ends the job; a real program would keep running instead.
	ended := make(chan string, 10)
	ends := hopper.ObserverFunc(func(_ context.Context, ev hopper.JobEvent) {
		if ev.Type == hopper.JobEnded && ev.State.Terminal() {
			ended <- ev.JobID
		}
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers, ResultTTL: time.Hour,
		Observers: []hopper.Observer{ends}})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	res, err := client.Enqueue(ctx, Refund{OrderID: 7}, &hopper.InsertOpts{ResultTTL: 10 * time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	<-ended
	job, err := client.Get(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(job.Result), "kept for", job.ExpiresAt.Sub(job.FinishedAt).Round(time.Minute))
	// Output:
	// {"refunded":7} kept for 10m0s
}
