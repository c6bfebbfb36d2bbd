package hopper_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// ReindexDoc asks for one document to be indexed again.
type ReindexDoc struct {
	DocID int `json:"doc_id"`
}

func (ReindexDoc) Kind() string { return "reindex-doc" }

// A merge key folds enqueues into the job that waits for a worker instead of adding jobs:
// with MergeAppend the job collects every enqueue's args, and its worker, registered for
// hopper.Merged[ReindexDoc], gets them all in one attempt.
func ExampleInsertOpts_mergeKey() {
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
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[hopper.Merged[ReindexDoc]]) error {
		for _, r := range job.Args {
			fmt.Println("reindex", r.DocID)
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

	// Enqueued before the workers start, so that all three wait for one.
	opts := &hopper.InsertOpts{MergeKey: "index-eu", Merge: hopper.MergeAppend}
	var first *hopper.InsertResult
	for _, doc := range []int{7, 8, 9} {
		res, err := client.Enqueue(ctx, ReindexDoc{DocID: doc}, opts)
		if err != nil {
			log.Fatal(err)
		}
		if first == nil {
			first = res
		}
		fmt.Println("merged:", res.Merged, "same job:", res.Job.ID == first.Job.ID)
	}

	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	<-ended
	job, err := client.Get(ctx, first.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.State, string(job.Args))
	// Output:
	// merged: false same job: true
	// merged: true same job: true
	// merged: true same job: true
	// reindex 7
	// reindex 8
	// reindex 9
	// completed [{"doc_id":7},{"doc_id":8},{"doc_id":9}]
}
