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

type FetchPhotos struct {
	Album int `json:"album"`
}

func (FetchPhotos) Kind() string { return "fetch-photos" }

type ResizeImage struct {
	Size string `json:"size"`
}

func (ResizeImage) Kind() string { return "resize-image" }

type PublishAlbum struct {
	ID int `json:"id"`
}

func (PublishAlbum) Kind() string { return "publish-album" }

// A workflow enqueues its steps in one transaction; each runs once the steps it names have
// ended: fetch, then both resizes, then publish. Its state comes from its steps.
func ExampleClient_EnqueueWorkflow() {
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
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[FetchPhotos]) error {
		fmt.Println("fetch album", job.Args.Album)
		return nil
	})
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[ResizeImage]) error {
		return nil
	})
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[PublishAlbum]) error {
		fmt.Println("publish album", job.Args.ID, "as step", job.Step)
		return nil
	})
	// The observer tells when a job ends; a real program would keep running instead.
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

	res, err := client.EnqueueWorkflow(ctx, hopper.Workflow{
		Name: "publish-album",
		Steps: []hopper.WorkflowStep{
			{Name: "fetch", Args: FetchPhotos{Album: 7}},
			{Name: "small", Args: ResizeImage{Size: "small"}, After: []string{"fetch"}},
			{Name: "large", Args: ResizeImage{Size: "large"}, After: []string{"fetch"}},
			{Name: "publish", Args: PublishAlbum{ID: 7}, After: []string{"small", "large"},
				OnParentFailure: hopper.ParentRun},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Workflow.State, res.Job("fetch").State, res.Job("publish").State)
	for id := ""; id != res.Job("publish").ID; {
		id = <-ended
	}
	wf, err := client.Workflow(ctx, res.Workflow.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(wf.Workflow.State, wf.Workflow.StepStates[hopper.StateCompleted], "steps completed;",
		"publish ran after", wf.Steps[3].After)
	// Output:
	// running queued waiting
	// fetch album 7
	// publish album 7 as step publish
	// completed 4 steps completed; publish ran after [small large]
}
