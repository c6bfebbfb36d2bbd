package hopper_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// Thumbnail is the payload of a thumbnail job.
type Thumbnail struct {
	Image string `json:"image"`
}

// Kind names the worker that runs the job.
func (Thumbnail) Kind() string { return "thumbnail" }

// jobCounts counts jobs by queue and kind and what happened to them: a stand-in for the
// counters of a metrics library.
type jobCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *jobCounts) ObserveJob(_ context.Context, ev hopper.JobEvent) {
	what := string(ev.Type)
	if ev.Type == hopper.JobEnded {
		what = string(ev.State) // completed, failed, or scheduled for a retry
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[ev.Queue+"/"+ev.Kind+" "+what]++
}

// An Observer hears of every job a client enqueues, every attempt it starts and every outcome
// it writes, with the job's queue and kind, how long it waited and how long it ran: the hook
// for your own metrics, without Hopper depending on a metrics library.
func ExampleObserver() {
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

	done := make(chan struct{})
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[Thumbnail]) error {
		defer close(done)
		return nil
	})
	counts := &jobCounts{n: map[string]int{}}
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers,
		Observers: []hopper.Observer{counts}})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := client.Enqueue(ctx, Thumbnail{Image: "cat.png"}, nil); err != nil {
		log.Fatal(err)
	}
	<-done
	stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil { // writes the last outcomes
		log.Fatal(err)
	}
	for _, k := range []string{"default/thumbnail enqueued", "default/thumbnail started", "default/thumbnail completed"} {
		fmt.Println(k, counts.n[k])
	}
	// Output:
	// default/thumbnail enqueued 1
	// default/thumbnail started 1
	// default/thumbnail completed 1
}
