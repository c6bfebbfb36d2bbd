package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// splitParts spawns N parts (1…N) as it runs.
type splitParts struct{ N int }

func (splitParts) Kind() string { return "split-parts" }

// A remote handler spawns with hopper.Spawn as in process: the merge step after it waits for
// the spawned jobs and reads them; a bad spawn is a *hopper.ValidationError naming the field
// (docs/workflows.md, "Fan-out at run time").
func TestRemoteHandlerSpawns(t *testing.T) {
	url, client := serve(t)
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[part]) error {
		return hopper.SetResult(ctx, job.Args.N)
	})
	fields := make(chan []string, 1)
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[splitParts]) error {
		var got []string
		for _, bad := range []func() error{
			func() error { _, err := hopper.Spawn(ctx, "merge", part{N: 1}, nil); return err },
			func() error {
				_, err := hopper.SpawnMany(ctx, []hopper.SpawnParams{{Step: "a", Args: part{}},
					{Step: "b", Args: part{}, Opts: &hopper.InsertOpts{Queue: "no spaces"}}})
				return err
			},
			func() error {
				_, err := hopper.Spawn(ctx, "c", part{}, &hopper.InsertOpts{ResultTTL: time.Hour})
				return err
			},
			func() error {
				_, err := hopper.SpawnMany(ctx, []hopper.SpawnParams{{Step: "d", Args: part{}, AfterSteps: []string{"nope"}}})
				return err
			},
		} {
			var ve *hopper.ValidationError
			if err := bad(); !errors.As(err, &ve) {
				return fmt.Errorf("want a validation error, got %v", err)
			}
			got = append(got, ve.Field)
		}
		fields <- got
		if _, err := hopper.Spawn(ctx, "part-1", part{N: 1}, nil); err != nil {
			return err
		}
		var rest []hopper.SpawnParams // a chain from part-2, named by step
		for i := 2; i <= job.Args.N; i++ {
			rest = append(rest, hopper.SpawnParams{Step: fmt.Sprintf("part-%d", i), Args: part{N: i}})
			if i > 2 {
				rest[i-2].AfterSteps = []string{fmt.Sprintf("part-%d", i-1)}
			}
		}
		if _, err := hopper.SpawnMany(ctx, rest); err != nil {
			return err
		}
		return hopper.SetResult(ctx, 0)
	})
	hopper.AddWorkerFunc(ws, func(ctx context.Context, _ *hopper.Job[sumParts]) error {
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
		return hopper.SetResult(ctx, map[string]int{"sum": sum, "parents": len(parents)})
	})
	w, err := remote.New(remote.Config{URL: url, Workers: ws, Concurrency: 3})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)

	wf, err := client.EnqueueWorkflow(t.Context(), hopper.Workflow{Name: "split", Steps: []hopper.WorkflowStep{
		{Name: "split", Args: splitParts{N: 3}}, {Name: "merge", Args: sumParts{}, After: []string{"split"}},
	}})
	require.NoError(t, err)
	defer func() {
		if t.Failed() {
			for _, id := range []string{wf.Job("split").ID, wf.Job("merge").ID} {
				j, _ := client.Get(context.Background(), id)
				t.Logf("%s %s %q", j.Step, j.State, j.LastError)
			}
		}
	}()
	job := waitFor(t, client, wf.Job("merge").ID, hopper.StateCompleted)
	var got struct{ Sum, Parents int }
	require.NoError(t, json.Unmarshal(job.Result, &got))
	require.Equal(t, 6, got.Sum)
	require.Equal(t, 4, got.Parents, "the split step and its three parts")
	require.Equal(t, []string{"step", "jobs[1].queue", "result_ttl", "jobs[0].after_steps[0]"}, <-fields)
	d, err := client.Workflow(t.Context(), wf.Workflow.ID)
	require.NoError(t, err)
	after := map[string][]string{}
	for _, s := range d.Steps {
		after[s.Job.Step] = s.After
	}
	require.Equal(t, []string{"part-2"}, after["part-3"], "named by step over the wire")
}
