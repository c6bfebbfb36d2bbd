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

// CountWords counts the words of one part of a text; SumCounts adds up the counts.
type (
	CountWords struct{ Text string }
	SumCounts  struct{}
)

func (CountWords) Kind() string { return "count-words" }
func (SumCounts) Kind() string  { return "sum-counts" }

// A fan-out of three jobs, then a fan-in that sums their results: it reads them with
// ParentResults as it runs.
func ExampleParentResults() {
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
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[CountWords]) error {
		words := 0
		for i, r := range job.Args.Text {
			if r != ' ' && (i == 0 || job.Args.Text[i-1] == ' ') {
				words++
			}
		}
		return hopper.SetResult(ctx, words)
	})
	summed := make(chan int, 1)
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[SumCounts]) error {
		parents, err := hopper.ParentResults(ctx)
		if err != nil {
			return err
		}
		sum := 0
		for _, p := range parents {
			var n int
			if err := p.Decode(&n); err != nil {
				return err
			}
			sum += n
		}
		summed <- sum
		return hopper.SetResult(ctx, sum)
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: workers})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	var parts []string
	for _, text := range []string{"one two three", "four five", "six"} {
		res, err := client.Enqueue(ctx, CountWords{Text: text}, nil)
		if err != nil {
			log.Fatal(err)
		}
		parts = append(parts, res.Job.ID)
	}
	if _, err := client.Enqueue(ctx, SumCounts{}, &hopper.InsertOpts{After: parts}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("words:", <-summed)
	// Output: words: 6
}
