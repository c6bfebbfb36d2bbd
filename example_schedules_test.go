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

// Digest is the payload of a digest job.
type Digest struct {
	List string `json:"list"`
}

// Kind names the worker that runs the job.
func (Digest) Kind() string { return "digest" }

// Declare schedules in code (Start stores them; the leader, here the only process, enqueues a
// job at each fire time) or add them at run time with AddSchedule.
func ExampleSchedule() {
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

	ran := make(chan string, 10)
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[Digest]) error {
		ran <- job.Args.List
		return nil
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers, Schedules: []hopper.Schedule{
		// Every second, so that the example ends soon; the kind comes from the args type.
		{Name: "ops-digest", Cron: "* * * * * *", Args: Digest{List: "ops"}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	fmt.Println("digest for", <-ran)

	_, err = client.AddSchedule(ctx, hopper.Schedule{Name: "nightly-report", Cron: "30 2 * * *",
		TZ: "America/New_York", Kind: "build-report", CatchUp: hopper.CatchUpLast})
	if err != nil {
		log.Fatal(err)
	}
	list, err := client.Schedules(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range list {
		fmt.Println(s.Name, s.Cron, s.TZ, s.Kind, s.Source)
	}
	// Output:
	// digest for ops
	// nightly-report 30 2 * * * America/New_York build-report api
	// ops-digest * * * * * * UTC digest code
}
