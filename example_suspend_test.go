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
)

// ApproveRefund waits for a person's approval before it pays.
type ApproveRefund struct {
	Order  int `json:"order"`
	Amount int `json:"amount"`
}

func (ApproveRefund) Kind() string { return "approve-refund" }

// A handler suspends its job until an external event resumes it: the first attempt checks
// the refund and parks the job with a checkpoint; Resume (from a webhook, an operator, the
// API or the CLI) sends the decision; the next attempt gets both.
func ExampleSuspend() {
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

	type checked struct {
		Risk string `json:"risk"`
	}
	type decision struct {
		Approved bool   `json:"approved"`
		By       string `json:"by"`
	}
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[ApproveRefund]) error {
		if job.ResumeData == nil {
			fmt.Printf("order %d: refund of %d checked, waiting for approval\n", job.Args.Order, job.Args.Amount)
			return hopper.Suspend(checked{Risk: "low"}, hopper.SuspendOpts{Deadline: time.Now().Add(72 * time.Hour)})
		}
		fmt.Printf("order %d: resumed with checkpoint %s and decision %s\n", job.Args.Order, job.Checkpoint, job.ResumeData)
		return nil
	})
	// The observer tells how each attempt left the job; a real program would keep running instead.
	ended := make(chan hopper.JobState, 10)
	ends := hopper.ObserverFunc(func(_ context.Context, ev hopper.JobEvent) {
		if ev.Type == hopper.JobEnded {
			ended <- ev.State
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

	res, err := client.Enqueue(ctx, ApproveRefund{Order: 42, Amount: 1500}, nil)
	if err != nil {
		log.Fatal(err)
	}
	wait := func() *hopper.JobRow { // for the attempt to end
		<-ended
		job, err := client.Get(ctx, res.Job.ID)
		if err != nil {
			log.Fatal(err)
		}
		return job
	}
	job := wait()
	fmt.Println("state:", job.State, "attempts used:", job.Attempt)

	if _, err := client.Resume(ctx, res.Job.ID, decision{Approved: true, By: "ada"}); err != nil {
		log.Fatal(err)
	}
	job = wait()
	fmt.Println("state:", job.State, "attempts used:", job.Attempt)
	// Output:
	// order 42: refund of 1500 checked, waiting for approval
	// state: suspended attempts used: 0
	// order 42: resumed with checkpoint {"risk":"low"} and decision {"approved":true,"by":"ada"}
	// state: completed attempts used: 1
}
