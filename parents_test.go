package hopper

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// addend completes with N as its result, or fails for good when N is negative.
type addend struct {
	N int `json:"n"`
}

func (addend) Kind() string { return "addend" }

// total sums the results of its parents.
type total struct{}

func (total) Kind() string { return "total" }

// totalResult is what a total job stores: the sum of its completed parents, their ids in the
// order it read them, and the errors of those that failed.
type totalResult struct {
	Sum    int      `json:"sum"`
	Order  []string `json:"order"`
	Errors []string `json:"errors"`
}

// sumParents is total's handler: it reads its parents' results and stores their sum.
func sumParents(ctx context.Context, _ *Job[total]) error {
	parents, err := ParentResults(ctx)
	if err != nil {
		return err
	}
	out := totalResult{Order: []string{}, Errors: []string{}}
	for _, p := range parents {
		out.Order = append(out.Order, p.ID)
		if p.Outcome != ParentCompleted {
			out.Errors = append(out.Errors, p.Error)
			continue
		}
		var n int
		if err := p.Decode(&n); err != nil {
			return err
		}
		out.Sum += n
	}
	return SetResult(ctx, out)
}

func fanInWorkers() *Workers {
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[addend]) error {
		if job.Args.N < 0 {
			return NoRetry(errors.New("negative"))
		}
		return SetResult(ctx, job.Args.N)
	})
	AddWorkerFunc(ws, sumParents)
	return ws
}

// A fan-in step reads its parents' results in the order it named them, a failed parent's
// error with them, read from the store as it runs (contract 19).
func TestParentResultsFanIn(t *testing.T) {
	t.Parallel()
	b := setup(t, fanInWorkers(), nil)
	ctx := t.Context()
	var ids []string
	for _, n := range []int{3, 4, -1, 5} {
		res, err := b.client.Enqueue(ctx, addend{N: n}, nil)
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	named := []string{ids[3], ids[0], ids[2], ids[1]} // not the order they were made in
	child, err := b.client.Enqueue(ctx, total{}, &InsertOpts{After: named, OnParentFailure: ParentRun})
	require.NoError(t, err)
	done := b.waitFor(t, child.Job.ID, StateCompleted, StateFailed)
	require.Equal(t, StateCompleted, done.State, done.LastError)
	var got totalResult
	require.NoError(t, json.Unmarshal(done.Result, &got))
	failed, err := b.client.Get(ctx, ids[2])
	require.NoError(t, err)
	require.NotEmpty(t, failed.LastError)
	require.Equal(t, totalResult{Sum: 12, Order: named, Errors: []string{failed.LastError}}, got)
}

// ParentResults outside a handler says so; in a job without parents it returns none.
func TestParentResultsOutsideAHandlerAndWithoutParents(t *testing.T) {
	t.Parallel()
	_, err := ParentResults(t.Context())
	require.ErrorIs(t, err, ErrNotInHandler)
	b := setup(t, fanInWorkers(), nil)
	res, err := b.client.Enqueue(t.Context(), total{}, nil)
	require.NoError(t, err)
	done := b.waitFor(t, res.Job.ID, StateCompleted, StateFailed)
	require.Equal(t, StateCompleted, done.State, done.LastError)
	require.JSONEq(t, `{"sum":0,"order":[],"errors":[]}`, string(done.Result))
}

// Client.Parents lists a job's parents in the order it named them, in any state of the job,
// with their states and how each ended for it (nothing while it runs), and no results; a job
// without parents has none, an unknown one is ErrNotFound.
func TestClientParents(t *testing.T) {
	t.Parallel()
	b := setup(t, fanInWorkers(), nil)
	ctx := t.Context()
	done, err := b.client.Enqueue(ctx, addend{N: 3}, nil)
	require.NoError(t, err)
	b.waitFor(t, done.Job.ID, StateCompleted)
	later, err := b.client.Enqueue(ctx, addend{N: 4}, &InsertOpts{Delay: time.Hour})
	require.NoError(t, err)
	child, err := b.client.Enqueue(ctx, total{}, &InsertOpts{After: []string{later.Job.ID, done.Job.ID}})
	require.NoError(t, err)

	got, err := b.client.Parents(ctx, child.Job.ID)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, later.Job.ID, got[0].ID)
	require.Equal(t, StateScheduled, got[0].State)
	require.Empty(t, got[0].Outcome, "it has not ended")
	require.Equal(t, done.Job.ID, got[1].ID)
	require.Equal(t, ParentCompleted, got[1].Outcome)
	require.Equal(t, "addend", got[1].Kind)
	require.Nil(t, got[1].Result, "no results are read")

	none, err := b.client.Parents(ctx, done.Job.ID)
	require.NoError(t, err)
	require.Empty(t, none)
	_, err = b.client.Parents(ctx, "0190f0e4-0000-7000-8000-000000000000")
	require.ErrorIs(t, err, ErrNotFound)
}
