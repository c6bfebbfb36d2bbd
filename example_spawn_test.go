package hopper_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// SplitText splits a text into one CountWords job per line, known only as it runs; the merge
// step after it sums what they counted.
type (
	SplitText  struct{ Text string }
	MergeCount struct{}
)

func (SplitText) Kind() string  { return "split-text" }
func (MergeCount) Kind() string { return "merge-count" }

// A split step spawns one job per line with SpawnMany; the merge step after it waits for them
// too, and reads them as parents (docs/workflows.md, "Fan-out at run time").
func ExampleSpawnMany() {
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
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[SplitText]) error {
		var jobs []hopper.SpawnParams
		for i, line := range strings.Split(job.Args.Text, "\n") {
			// Named steps: a retried attempt that spawns them again gets these jobs back.
			jobs = append(jobs, hopper.SpawnParams{Step: fmt.Sprintf("line-%d", i), Args: CountWords{Text: line}})
		}
		_, err := hopper.SpawnMany(ctx, jobs)
		return err
	})
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[CountWords]) error {
		return hopper.SetResult(ctx, len(strings.Fields(job.Args.Text)))
	})
	summed := make(chan string, 1)
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[MergeCount]) error {
		parents, err := hopper.ParentResults(ctx)
		if err != nil {
			return err
		}
		sum, steps := 0, 0
		for _, p := range parents {
			if p.Step == "split" {
				continue // the split step left no count
			}
			var n int
			if err := p.Decode(&n); err != nil {
				return err
			}
			sum, steps = sum+n, steps+1
		}
		summed <- fmt.Sprintf("%d words in %d lines", sum, steps)
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

	_, err = client.EnqueueWorkflow(ctx, hopper.Workflow{Name: "count", Steps: []hopper.WorkflowStep{
		{Name: "split", Args: SplitText{Text: "one two three\nfour five\nsix"}},
		{Name: "merge", Args: MergeCount{}, After: []string{"split"}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-summed)
	// Output: 6 words in 3 lines
}
