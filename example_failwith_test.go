package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// ImportParts imports a file in parts; ChargeCard charges a card.
type (
	ImportParts struct{ Parts int }
	ChargeCard  struct{ Cents int }
)

func (ImportParts) Kind() string { return "import-parts" }
func (ChargeCard) Kind() string  { return "charge-card" }

// A worker that did part of the work fails with a checkpoint, and the next attempt continues
// from there; a declined card is a business error: the job fails at once, with its code.
func ExampleFailWithCheckpoint() {
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

	type progress struct{ Done int }
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[ImportParts]) error {
		var p progress
		if job.Checkpoint != nil {
			if err := json.Unmarshal(job.Checkpoint, &p); err != nil {
				return hopper.NoRetry(err)
			}
		}
		fmt.Printf("attempt %d starts at part %d\n", job.Attempt, p.Done+1)
		if job.Attempt == 1 { // parts 1–3 go well, part 4 fails: retry at once, from part 4
			return hopper.FailWithCheckpoint(hopper.RetryAfter(0, errors.New("part 4: timeout")), progress{Done: 3})
		}
		return nil
	})
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[ChargeCard]) error {
		return hopper.BusinessError{Code: "card_declined", Message: "insufficient funds"}
	})
	ended := make(chan string, 10)
	ends := hopper.ObserverFunc(func(_ context.Context, ev hopper.JobEvent) {
		if ev.Type == hopper.JobEnded && ev.State != hopper.StateScheduled {
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

	for _, args := range []hopper.JobArgs{ImportParts{Parts: 10}, ChargeCard{Cents: 1500}} {
		if _, err := client.Enqueue(ctx, args, nil); err != nil {
			log.Fatal(err)
		}
		job, err := client.Get(ctx, <-ended)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: %s after %d attempt(s), error code %q\n", job.Kind, job.State, job.Attempt, job.LastErrorCode)
	}
	// Output:
	// attempt 1 starts at part 1
	// attempt 2 starts at part 4
	// import-parts: completed after 2 attempt(s), error code ""
	// charge-card: failed after 1 attempt(s), error code "card_declined"
}
