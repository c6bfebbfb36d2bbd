package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Ended workflows (store/workflows.go): the marking of a workflow whose steps have all ended
// happens once, by the leader's pass or by a cancel, and a retry in place opens it again.
func testWorkflowsEnded(t *testing.T, opener Opener) {
	parallel(t, opener, "MarkEnded", workflowMarkEnded)
	parallel(t, opener, "MarkEndedBatches", workflowMarkEndedBatches)
	parallel(t, opener, "MarkEndedExpiredStep", workflowMarkEndedExpiredStep)
	parallel(t, opener, "MarkEndedConcurrent", workflowMarkEndedConcurrent)
	parallel(t, opener, "MarkEndedRetry", workflowMarkEndedRetry)
	parallel(t, opener, "MarkEndedRetryOtherWorkflow", workflowMarkEndedRetryOtherWorkflow)
	parallel(t, opener, "MarkEndedRacesRetry", workflowMarkEndedRacesRetry)
}

// markAll walks every open workflow once, limit at a time, and returns what it marked.
func (b *bundle) markAll(t *testing.T, limit int) []*hoppertype.WorkflowRow {
	t.Helper()
	var out []*hoppertype.WorkflowRow
	after := ""
	for {
		res, err := b.store.WorkflowMarkEnded(t.Context(), &store.WorkflowMarkParams{After: after, Limit: limit})
		require.NoError(t, err)
		out = append(out, res.Ended...)
		if res.Next == "" {
			return out
		}
		require.Greater(t, res.Next, after, "the walk moves on")
		after = res.Next
	}
}

// byID maps workflows by id, each at most once.
func byID(t *testing.T, ws []*hoppertype.WorkflowRow) map[string]*hoppertype.WorkflowRow {
	t.Helper()
	out := map[string]*hoppertype.WorkflowRow{}
	for _, w := range ws {
		require.NotContains(t, out, w.ID, "marked twice")
		out[w.ID] = w
	}
	return out
}

// A pass marks the workflows whose steps have all ended, each with the state they ended it in,
// its name and its last step's ending, and never again; a running one is left open; a
// workflow canceled whole was marked by its cancel. Reads and lists give the stored state.
func workflowMarkEnded(t *testing.T, b *bundle) {
	done := workflowParams(t, "nightly", stepSpec{name: "only"})
	b.insertWorkflow(t, done)
	b.end(t, b.step(t, done, "only"), hoppertype.StateCompleted)
	doneAt := b.clock.Now()
	b.clock.Advance(time.Second)
	bad := diamond(t, "weekly")
	b.insertWorkflow(t, bad)
	b.end(t, b.step(t, bad, "a"), hoppertype.StateCompleted)
	b.end(t, b.step(t, bad, "b"), hoppertype.StateFailed) // d canceled by its policy
	b.end(t, b.step(t, bad, "c"), hoppertype.StateCompleted)
	stopped := diamond(t, "stopped")
	b.insertWorkflow(t, stopped)
	b.cancel(t, b.step(t, stopped, "a").ID) // its children canceled by their policy
	running := diamond(t, "nightly")
	b.insertWorkflow(t, running)
	whole := diamond(t, "whole")
	b.insertWorkflow(t, whole)
	b.cancelWorkflowOK(t, whole.ID)

	marked := byID(t, b.markAll(t, 0))
	require.Len(t, marked, 3, "the running workflow is open, the one canceled whole was marked by its cancel")
	require.Equal(t, hoppertype.WorkflowCompleted, marked[done.ID].State)
	require.Equal(t, "nightly", marked[done.ID].Name)
	require.Equal(t, 1, marked[done.ID].Steps)
	sameTime(t, doneAt, marked[done.ID].FinishedAt, "its last step's ending")
	require.Equal(t, hoppertype.WorkflowFailed, marked[bad.ID].State)
	require.Equal(t, "weekly", marked[bad.ID].Name)
	require.Equal(t, hoppertype.WorkflowCanceled, marked[stopped.ID].State)
	require.Empty(t, b.markAll(t, 0), "marked once")

	require.Equal(t, hoppertype.WorkflowCanceled, b.workflow(t, whole.ID).Workflow.State)
	require.Equal(t, hoppertype.WorkflowRunning, b.workflow(t, running.ID).Workflow.State)
	w := b.workflow(t, bad.ID).Workflow
	require.Equal(t, hoppertype.WorkflowFailed, w.State)
	require.Equal(t, map[hoppertype.JobState]int{hoppertype.StateCompleted: 2, hoppertype.StateFailed: 1,
		hoppertype.StateCanceled: 1}, w.StepStates)
	require.False(t, w.FinishedAt.IsZero())

	list := func(states ...hoppertype.WorkflowState) []string {
		t.Helper()
		res, err := b.store.WorkflowList(t.Context(), &store.WorkflowListParams{States: states, Ascending: true})
		require.NoError(t, err)
		return ids2(res.Workflows)
	}
	require.Equal(t, []string{running.ID}, list(hoppertype.WorkflowRunning))
	require.Equal(t, []string{done.ID}, list(hoppertype.WorkflowCompleted))
	require.Equal(t, []string{bad.ID, stopped.ID, whole.ID}, list(hoppertype.WorkflowFailed, hoppertype.WorkflowCanceled))
	require.Equal(t, []string{done.ID, running.ID}, list(hoppertype.WorkflowCompleted, hoppertype.WorkflowRunning))

	// A workflow that ends before a pass reads as ended and is listed so, marked or not yet.
	b.cancel(t, b.step(t, running, "a").ID)
	require.Equal(t, []string{stopped.ID, running.ID, whole.ID}, list(hoppertype.WorkflowCanceled))
	require.Empty(t, list(hoppertype.WorkflowRunning))
	marked = byID(t, b.markAll(t, 0))
	require.Len(t, marked, 1)
	require.Equal(t, hoppertype.WorkflowCanceled, marked[running.ID].State)
	require.Equal(t, []string{stopped.ID, running.ID, whole.ID}, list(hoppertype.WorkflowCanceled))
}

// A pass reads the steps the reads read: a step expired and not swept yet does not count, so
// the state it marks is the state the workflow read as before.
func workflowMarkEndedExpiredStep(t *testing.T, b *bundle) {
	p := workflowParams(t, "expiring", stepSpec{name: "a"}, stepSpec{name: "b"})
	b.insertWorkflow(t, p)
	a := b.claimOne(t, p.Steps[0].Queue)
	f := finishing(a, hoppertype.StateFailed)
	f.ExpiresAt = b.clock.Now().Add(time.Minute)
	require.NoError(t, b.finish(t, f))
	b.clock.Advance(time.Second)
	b.end(t, b.step(t, p, "b"), hoppertype.StateCompleted)
	bEnded := b.clock.Now()
	b.clock.Advance(2 * time.Minute) // a has expired, not swept
	require.Equal(t, hoppertype.WorkflowCompleted, b.workflow(t, p.ID).Workflow.State, "read over its live step")

	marked := byID(t, b.markAll(t, 0))
	require.Equal(t, hoppertype.WorkflowCompleted, marked[p.ID].State, "marked as it read")
	sameTime(t, bEnded, marked[p.ID].FinishedAt, "its last live step's ending")
	w := b.workflow(t, p.ID).Workflow
	require.Equal(t, hoppertype.WorkflowCompleted, w.State)
	sameTime(t, bEnded, w.FinishedAt, "its stored ending")
}

func ids2(ws []*hoppertype.WorkflowRow) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.ID)
	}
	return out
}

// A pass checks at most its limit of open workflows, oldest first, and says where the next
// goes on; the walk reaches every workflow, ended ones among running ones, and marks each once.
// Paging a listing by state visits each marked workflow once.
func workflowMarkEndedBatches(t *testing.T, b *bundle) {
	var ended []string
	for i := range 9 {
		p := workflowParams(t, "batch", stepSpec{name: "one"})
		b.insertWorkflow(t, p)
		if i%3 != 1 {
			b.end(t, b.step(t, p, "one"), hoppertype.StateCompleted)
			ended = append(ended, p.ID)
		}
	}
	res, err := b.store.WorkflowMarkEnded(t.Context(), &store.WorkflowMarkParams{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, ended[:1], ids2(res.Ended), "the oldest two: one ended, one running")
	require.NotEmpty(t, res.Next)
	marked := append(res.Ended, b.markAllFrom(t, res.Next, 2)...)
	require.Equal(t, ended, ids2(marked), "oldest first, each once")
	require.Empty(t, b.markAll(t, 2))

	var got []string
	p := store.WorkflowListParams{Limit: 2, States: []hoppertype.WorkflowState{hoppertype.WorkflowCompleted}, Ascending: true}
	for {
		page, err := b.store.WorkflowList(t.Context(), &p)
		require.NoError(t, err)
		got = append(got, ids2(page.Workflows)...)
		if page.NextCursor == "" {
			break
		}
		p.Cursor = page.NextCursor
	}
	require.Equal(t, ended, got)
}

// markAllFrom walks the open workflows after after, limit at a time, to the newest.
func (b *bundle) markAllFrom(t *testing.T, after string, limit int) []*hoppertype.WorkflowRow {
	t.Helper()
	var out []*hoppertype.WorkflowRow
	for after != "" {
		res, err := b.store.WorkflowMarkEnded(t.Context(), &store.WorkflowMarkParams{After: after, Limit: limit})
		require.NoError(t, err)
		out, after = append(out, res.Ended...), res.Next
	}
	return out
}

// Passes running at the same time (two leaders for a moment; PostgreSQL: on other
// connections) mark each ended workflow exactly once between them.
func workflowMarkEndedConcurrent(t *testing.T, b *bundle) {
	const n, passes = 30, 4
	want := map[string]bool{}
	for range n {
		p := workflowParams(t, "fan", stepSpec{name: "one"}, stepSpec{name: "two"})
		b.insertWorkflow(t, p)
		b.end(t, b.step(t, p, "one"), hoppertype.StateCompleted)
		b.end(t, b.step(t, p, "two"), hoppertype.StateFailed)
		want[p.ID] = true
	}
	var mu sync.Mutex
	var all []*hoppertype.WorkflowRow
	var wg sync.WaitGroup
	for range passes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 { // each walks the open workflows three times, 4 at a time
				after := ""
				for {
					res, err := b.store.WorkflowMarkEnded(t.Context(), &store.WorkflowMarkParams{After: after, Limit: 4})
					if !assertNoError(t, err) {
						return
					}
					mu.Lock()
					all = append(all, res.Ended...)
					mu.Unlock()
					if after = res.Next; after == "" {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	all = append(all, b.markAll(t, 0)...) // what the passes skipped (held by another) is left for a later one
	marked := byID(t, all)
	require.Len(t, marked, n)
	for id, w := range marked {
		require.True(t, want[id])
		require.Equal(t, hoppertype.WorkflowFailed, w.State)
	}
}

// assertNoError reports err from a goroutine other than the test's.
func assertNoError(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("unexpected error: %v", err)
		return false
	}
	return true
}

// A step of a workflow marked failed, retried in place, opens the workflow again: it runs
// (its canceled children re-armed), is listed as running, no pass marks it while the step
// runs, and once its steps end again it is marked again, with its new state.
func workflowMarkEndedRetry(t *testing.T, b *bundle) {
	p := workflowParams(t, "retried", stepSpec{name: "x"}, stepSpec{name: "y", after: []string{"x"}})
	b.insertWorkflow(t, p)
	x := b.step(t, p, "x")
	b.end(t, x, hoppertype.StateFailed)
	require.Equal(t, hoppertype.StateCanceled, b.step(t, p, "y").State)
	marked := byID(t, b.markAll(t, 0))
	require.Equal(t, hoppertype.WorkflowFailed, marked[p.ID].State)

	b.retryInPlace(t, x.ID)
	require.Equal(t, hoppertype.StateWaiting, b.step(t, p, "y").State, "re-armed")
	w := b.workflow(t, p.ID).Workflow
	require.Equal(t, hoppertype.WorkflowRunning, w.State)
	require.True(t, w.FinishedAt.IsZero())
	res, err := b.store.WorkflowList(t.Context(), &store.WorkflowListParams{States: []hoppertype.WorkflowState{hoppertype.WorkflowRunning}})
	require.NoError(t, err)
	require.Equal(t, []string{p.ID}, ids2(res.Workflows))
	res, err = b.store.WorkflowList(t.Context(), &store.WorkflowListParams{States: []hoppertype.WorkflowState{hoppertype.WorkflowFailed}})
	require.NoError(t, err)
	require.Empty(t, res.Workflows)
	require.Empty(t, b.markAll(t, 0), "running again")

	b.end(t, b.step(t, p, "x"), hoppertype.StateCompleted)
	b.end(t, b.step(t, p, "y"), hoppertype.StateCompleted)
	marked = byID(t, b.markAll(t, 0))
	require.Equal(t, hoppertype.WorkflowCompleted, marked[p.ID].State, "marked again, completed")
	require.Equal(t, hoppertype.WorkflowCompleted, b.workflow(t, p.ID).Workflow.State)
}

// A step whose parent is a step of another workflow (named in its After), canceled by that
// parent's failure, is re-armed by the parent's retry in place: its workflow, marked ended,
// opens again too, and is marked again once its steps end again.
func workflowMarkEndedRetryOtherWorkflow(t *testing.T, b *bundle) {
	up := workflowParams(t, "upstream", stepSpec{name: "x"})
	b.insertWorkflow(t, up)
	x := b.step(t, up, "x")
	down := workflowParams(t, "downstream", stepSpec{name: "y"})
	down.Steps[0].After = []string{x.ID} // outside its workflow
	b.insertWorkflow(t, down)
	b.end(t, x, hoppertype.StateFailed)
	require.Equal(t, hoppertype.StateCanceled, b.step(t, down, "y").State)
	marked := byID(t, b.markAll(t, 0))
	require.Equal(t, hoppertype.WorkflowFailed, marked[up.ID].State)
	require.Equal(t, hoppertype.WorkflowCanceled, marked[down.ID].State)

	b.retryInPlace(t, x.ID)
	require.Equal(t, hoppertype.StateWaiting, b.step(t, down, "y").State, "re-armed")
	require.Equal(t, hoppertype.WorkflowRunning, b.workflow(t, up.ID).Workflow.State)
	w := b.workflow(t, down.ID).Workflow
	require.Equal(t, hoppertype.WorkflowRunning, w.State, "the re-armed step's workflow is open again")
	require.True(t, w.FinishedAt.IsZero())
	res, err := b.store.WorkflowList(t.Context(), &store.WorkflowListParams{States: []hoppertype.WorkflowState{hoppertype.WorkflowCanceled}})
	require.NoError(t, err)
	require.NotContains(t, ids2(res.Workflows), down.ID)
	require.Empty(t, b.markAll(t, 0), "both run again")

	b.end(t, b.step(t, up, "x"), hoppertype.StateCompleted)
	b.end(t, b.step(t, down, "y"), hoppertype.StateCompleted)
	marked = byID(t, b.markAll(t, 0))
	require.Equal(t, hoppertype.WorkflowCompleted, marked[up.ID].State)
	require.Equal(t, hoppertype.WorkflowCompleted, marked[down.ID].State, "marked again, completed")
}

// A retry in place racing a pass (PostgreSQL: on another connection) never leaves a workflow
// marked ended while its retried step runs: the pass either marks it before the retry, which
// opens it again, or sees the step run again.
func workflowMarkEndedRacesRetry(t *testing.T, b *bundle) {
	for round := range 10 {
		p := workflowParams(t, "race", stepSpec{name: "x"})
		b.insertWorkflow(t, p)
		x := b.step(t, p, "x")
		b.end(t, x, hoppertype.StateFailed)
		var wg sync.WaitGroup
		var retryErr, markErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, retryErr = b.retry(t, store.RetryParams{ID: x.ID})
		}()
		go func() {
			defer wg.Done()
			_, markErr = b.store.WorkflowMarkEnded(t.Context(), &store.WorkflowMarkParams{})
		}()
		wg.Wait()
		require.NoError(t, retryErr, "round %d", round)
		require.NoError(t, markErr, "round %d", round)
		require.Equal(t, hoppertype.WorkflowRunning, b.workflow(t, p.ID).Workflow.State, "round %d", round)
		require.Empty(t, b.markAll(t, 0), "round %d", round)
		b.end(t, b.step(t, p, "x"), hoppertype.StateCompleted)
		marked := byID(t, b.markAll(t, 0))
		require.Equal(t, hoppertype.WorkflowCompleted, marked[p.ID].State, "round %d", round)
	}
}
