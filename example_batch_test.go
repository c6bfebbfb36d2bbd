package hopper_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// IndexDoc asks for one document of a tenant's search index to be indexed.
type IndexDoc struct {
	DocID int `json:"doc_id"`
}

func (IndexDoc) Kind() string { return "index-doc" }

// A batch worker gets a group's queued jobs in one call (one bulk request for the tenant's
// index, say) and says how each one ended: a job that fails is retried alone, the others
// complete.
func ExampleAddBatchWorker() {
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
	hopper.AddBatchWorkerFunc(workers, hopper.BatchOpts{MaxJobs: 10}, func(ctx context.Context, b *hopper.Batch[IndexDoc]) error {
		fmt.Printf("one call for %d jobs of group %s\n", len(b.Jobs), b.Jobs[0].GroupKey)
		for i, job := range b.Jobs {
			if job.Args.DocID == 2 {
				b.Fail(i, hopper.NoRetry(errors.New("document too large")))
			}
		}
		return nil
	})
	ended := make(chan hopper.JobEvent, 10)
	ends := hopper.ObserverFunc(func(_ context.Context, ev hopper.JobEvent) {
		if ev.Type == hopper.JobEnded && ev.State.Terminal() {
			ended <- ev
		}
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers, Observers: []hopper.Observer{ends}})
	if err != nil {
		log.Fatal(err)
	}
	// Enqueued before the workers start, so that one claim finds the whole group.
	var jobs []hopper.EnqueueParams
	for _, doc := range []int{1, 2, 3} {
		jobs = append(jobs, hopper.EnqueueParams{Args: IndexDoc{DocID: doc}, Opts: &hopper.InsertOpts{GroupKey: "tenant-42"}})
	}
	if _, err := client.EnqueueMany(ctx, jobs); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	states := map[hopper.JobState]int{}
	for range jobs {
		states[(<-ended).State]++
	}
	fmt.Println("completed:", states[hopper.StateCompleted], "failed:", states[hopper.StateFailed])
	// Output:
	// one call for 3 jobs of group tenant-42
	// completed: 2 failed: 1
}
