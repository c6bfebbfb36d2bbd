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

// ResizePhoto resizes one photo; AlbumReady reports on the album once every resize has ended.
type (
	ResizePhoto struct{ Photo int }
	AlbumReady  struct{ Album int }
)

func (ResizePhoto) Kind() string { return "resize-photo" }
func (AlbumReady) Kind() string  { return "album-ready" }

// A batch with a callback: four resizes, and a report that runs once all four have ended,
// even though one fails, and counts them with BatchCounts.
func ExampleClient_EnqueueBatch() {
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
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[ResizePhoto]) error {
		if job.Args.Photo == 3 {
			return hopper.NoRetry(errors.New("corrupt file"))
		}
		return hopper.SetResult(ctx, fmt.Sprintf("photo-%d-small.jpg", job.Args.Photo))
	})
	report := make(chan string, 1)
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[AlbumReady]) error {
		batch, err := hopper.BatchCounts(ctx)
		if err != nil {
			return err
		}
		var first string
		if err := batch.Results[0].Decode(&first); err != nil {
			return err
		}
		report <- fmt.Sprintf("album %d: %d of %d resized, %d failed; first: %s",
			job.Args.Album, batch.Completed, batch.Jobs, batch.Failed, first)
		return nil
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	b := hopper.JobBatch{Name: "resize-album", Callback: hopper.BatchJob{Args: AlbumReady{Album: 7}}}
	for photo := 1; photo <= 4; photo++ {
		b.Jobs = append(b.Jobs, hopper.BatchJob{Args: ResizePhoto{Photo: photo}})
	}
	res, err := client.EnqueueBatch(ctx, b)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-report)
	wf, err := client.Workflow(ctx, res.Workflow.ID) // a batch is a workflow
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(wf.Workflow.Name, len(wf.Steps), "steps")
	// Output:
	// album 7: 3 of 4 resized, 1 failed; first: photo-1-small.jpg
	// resize-album 5 steps
}
