package hopper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// split spawns N addends as steps chunk-0… (N known only as it runs), then completes with 0.
type split struct {
	N int `json:"n"`
}

func (split) Kind() string { return "split" }

// spawnErrors records what the split handler's bad spawns returned, by case.
type spawnErrors map[string]string

func splitWorkers(t *testing.T, seen chan<- spawnErrors) *Workers {
	ws := fanInWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[split]) error {
		errs := spawnErrors{}
		field := func(name string, err error) {
			var ve *ValidationError
			if errors.As(err, &ve) {
				errs[name] = ve.Field
			} else {
				errs[name] = fmt.Sprint(err)
			}
		}
		_, err := Spawn(ctx, "bad-queue", addend{N: 1}, &InsertOpts{Queue: "no spaces"})
		field("queue", err)
		_, err = SpawnMany(ctx, []SpawnParams{{Step: "x", Args: addend{}}, {Step: "y", Args: addend{}, Opts: &InsertOpts{MergeKey: "k"}}})
		field("merge", err)
		_, err = Spawn(ctx, "merge", addend{N: 1}, nil) // the step that waits for this one
		field("cycle", err)
		_, err = Spawn(ctx, "bad name", addend{N: 1}, nil)
		field("step", err)
		_, err = SpawnMany(ctx, []SpawnParams{{Step: "x", Args: addend{}, AfterSteps: []string{"y"}}, {Step: "y", Args: addend{}}})
		field("later", err)
		jobs := make([]SpawnParams, job.Args.N)
		for i := range jobs {
			jobs[i] = SpawnParams{Step: fmt.Sprintf("chunk-%d", i), Args: addend{N: i + 1}}
			if i > 0 { // a chain, named by step: the ids are not known before the call
				jobs[i].AfterSteps = []string{fmt.Sprintf("chunk-%d", i-1)}
			}
		}
		res, err := SpawnMany(ctx, jobs)
		if err != nil {
			return err
		}
		again, err := SpawnMany(ctx, jobs) // as a retried attempt would
		if err != nil {
			return err
		}
		for i := range res {
			if !again[i].Existing || again[i].Job.ID != res[i].Job.ID || res[i].Existing {
				return fmt.Errorf("spawn %d: not idempotent", i)
			}
		}
		seen <- errs
		return SetResult(ctx, 0)
	})
	return ws
}

// A step spawns chunks it counts as it runs; the merge step after it runs once they have all
// ended and reads their results (docs/workflows.md, "Fan-out at run time"). Bad spawns are
// *ValidationErrors naming their field, and spawn nothing.
func TestSpawnSplitMerge(t *testing.T) {
	t.Parallel()
	seen := make(chan spawnErrors, 1)
	b := setup(t, splitWorkers(t, seen), nil)
	ctx := t.Context()
	wf, err := b.client.EnqueueWorkflow(ctx, Workflow{Name: "split-merge", Steps: []WorkflowStep{
		{Name: "split", Args: split{N: 4}},
		{Name: "merge", Args: total{}, After: []string{"split"}},
	}})
	require.NoError(t, err)
	done := b.waitFor(t, wf.Job("merge").ID, StateCompleted, StateFailed, StateCanceled)
	require.Equal(t, StateCompleted, done.State, done.LastError)
	var got totalResult
	require.NoError(t, json.Unmarshal(done.Result, &got))
	require.Equal(t, 1+2+3+4, got.Sum)
	require.Len(t, got.Order, 5, "the split step and its four chunks")

	require.Equal(t, spawnErrors{"queue": "queue", "merge": "jobs[1].merge_key", "cycle": "step", "step": "step",
		"later": "jobs[0].after_steps[0]"}, <-seen)
	d, err := b.client.Workflow(ctx, wf.Workflow.ID)
	require.NoError(t, err)
	require.Len(t, d.Steps, 6, "split, merge and four chunks: nothing of the bad spawns")
	after := map[string][]string{}
	for _, s := range d.Steps {
		after[s.Job.Step] = s.After
	}
	require.Empty(t, after["chunk-0"])
	for i := 1; i < 4; i++ {
		require.Equal(t, []string{fmt.Sprintf("chunk-%d", i-1)}, after[fmt.Sprintf("chunk-%d", i)], "named by step")
	}
	require.Equal(t, WorkflowCompleted, d.Workflow.State)
}

// Spawn outside a handler says so.
func TestSpawnOutsideAHandler(t *testing.T) {
	t.Parallel()
	_, err := Spawn(t.Context(), "", addend{}, nil)
	require.ErrorIs(t, err, ErrNotInHandler)
	_, err = SpawnMany(t.Context(), nil)
	require.ErrorIs(t, err, ErrNotInHandler)
}
