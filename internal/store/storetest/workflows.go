package storetest

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Workflows (contract 19, store/workflows.go): a workflow and its steps go in together or not
// at all; its state is derived from its steps; a cancel ends its unfinished steps and leaves
// nothing to release.
func testWorkflows(t *testing.T, opener Opener) {
	parallel(t, opener, "Insert", workflowInsert)
	parallel(t, opener, "InsertAtomic", workflowInsertAtomic)
	parallel(t, opener, "Get", workflowGet)
	parallel(t, opener, "Steps", workflowSteps)
	parallel(t, opener, "List", workflowList)
	parallel(t, opener, "ListPages", workflowListPages)
	parallel(t, opener, "Cancel", workflowCancel)
	parallel(t, opener, "CancelRefused", workflowCancelRefused)
	parallel(t, opener, "CancelRacesEndings", workflowCancelRacesEndings)
	parallel(t, opener, "State", workflowState)
	parallel(t, opener, "PlainJob", workflowPlainJob)
	parallel(t, opener, "NotCompacted", workflowNotCompacted)
	parallel(t, opener, "Expiry", workflowExpiry)
	parallel(t, opener, "Large", workflowLarge)
}

// stepSpec is a step of a test workflow: its name, its parents' names, options for its job.
type stepSpec struct {
	name  string
	after []string
	opts  []option
}

// workflowParams builds a workflow of the steps, each in its own queue (the workflow's id
// and the step's name) unless its options say otherwise, parents first as given.
func workflowParams(t *testing.T, name string, steps ...stepSpec) *store.WorkflowInsertParams {
	t.Helper()
	p := &store.WorkflowInsertParams{ID: newID(t), Name: name}
	byName := map[string]string{}
	for _, s := range steps {
		sp := params(t, append([]option{inQueue(p.ID + "-" + s.name)}, s.opts...)...)
		sp.WorkflowID, sp.Step = p.ID, s.name
		for _, a := range s.after {
			require.Contains(t, byName, a, "test steps come parents first")
			sp.After = append(sp.After, byName[a])
		}
		byName[s.name] = sp.ID
		p.Steps = append(p.Steps, sp)
	}
	return p
}

// diamond is a → (b, c) → d.
func diamond(t *testing.T, name string) *store.WorkflowInsertParams {
	t.Helper()
	return workflowParams(t, name, stepSpec{name: "a"}, stepSpec{name: "b", after: []string{"a"}},
		stepSpec{name: "c", after: []string{"a"}}, stepSpec{name: "d", after: []string{"b", "c"}})
}

func (b *bundle) insertWorkflow(t *testing.T, p *store.WorkflowInsertParams) *store.WorkflowInsertResult {
	t.Helper()
	res, err := b.store.WorkflowInsert(t.Context(), p)
	require.NoError(t, err)
	require.Len(t, res.Jobs, len(p.Steps))
	return res
}

func (b *bundle) workflow(t *testing.T, id string) *store.WorkflowDetail {
	t.Helper()
	d, err := b.store.WorkflowGet(t.Context(), id)
	require.NoError(t, err)
	return d
}

// step returns the job of the workflow's step name, as it stands.
func (b *bundle) step(t *testing.T, p *store.WorkflowInsertParams, name string) *hoppertype.JobRow {
	t.Helper()
	for _, s := range p.Steps {
		if s.Step == name {
			return b.get(t, s.ID)
		}
	}
	t.Fatalf("no step %q", name)
	return nil
}

func (b *bundle) cancelWorkflow(t *testing.T, id string) (*store.WorkflowCancelResult, error) {
	t.Helper()
	return b.store.WorkflowCancel(t.Context(), &store.WorkflowCancelParams{ID: id, Actor: hoppertype.ActorOperator,
		Reason: "release canceled", ExpiresAt: b.clock.Now().Add(time.Hour)})
}

// The steps go in as one: each carries the workflow's id and its step name, the first is due
// and the others wait; the workflow runs.
func workflowInsert(t *testing.T, b *bundle) {
	p := diamond(t, "release")
	res := b.insertWorkflow(t, p)
	for i, j := range res.Jobs {
		require.Equal(t, p.Steps[i].ID, j.ID)
		require.Equal(t, p.ID, j.WorkflowID)
		require.Equal(t, p.Steps[i].Step, j.Step)
		got := b.get(t, j.ID)
		require.Equal(t, p.ID, got.WorkflowID)
		require.Equal(t, p.Steps[i].Step, got.Step)
	}
	require.Equal(t, hoppertype.StateQueued, res.Jobs[0].State)
	for _, j := range res.Jobs[1:] {
		require.Equal(t, hoppertype.StateWaiting, j.State)
	}
	w := res.Workflow
	require.Equal(t, p.ID, w.ID)
	require.Equal(t, "release", w.Name)
	require.Equal(t, 4, w.Steps)
	require.Equal(t, hoppertype.WorkflowRunning, w.State)
	require.Equal(t, map[hoppertype.JobState]int{hoppertype.StateQueued: 1, hoppertype.StateWaiting: 3}, w.StepStates)
	sameTime(t, b.clock.Now(), w.CreatedAt, "created")
	require.True(t, w.StartedAt.IsZero())
	require.True(t, w.FinishedAt.IsZero())
	// The dependencies are the jobs' own: a's ending releases b and c, theirs d.
	b.end(t, res.Jobs[0], hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.step(t, p, "b").State)
	require.Equal(t, hoppertype.StateQueued, b.step(t, p, "c").State)
	require.Equal(t, hoppertype.StateWaiting, b.step(t, p, "d").State)
}

// A workflow that fails anywhere in its insert leaves nothing behind: neither its row nor any
// step, even those inserted before the failure in the same transaction.
func workflowInsertAtomic(t *testing.T, b *bundle) {
	p := diamond(t, "broken")
	p.Steps[3].After = append(p.Steps[3].After, newID(t)) // d also names a job that does not exist
	_, err := b.store.WorkflowInsert(t.Context(), p)
	require.ErrorIs(t, err, hoppertype.ErrInvalid)
	var pe *store.ParentError
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, 3, pe.Item)
	for _, s := range p.Steps {
		_, err := b.store.JobGet(t.Context(), s.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "step %s", s.Step)
	}
	_, err = b.store.WorkflowGet(t.Context(), p.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	list, err := b.store.WorkflowList(t.Context(), &store.WorkflowListParams{})
	require.NoError(t, err)
	require.Empty(t, list.Workflows)

	// A workflow id used twice: the second insert fails whole, the first stays as it was.
	first := diamond(t, "first")
	b.insertWorkflow(t, first)
	again := diamond(t, "again")
	again.ID = first.ID
	for _, s := range again.Steps {
		s.WorkflowID = first.ID
	}
	_, err = b.store.WorkflowInsert(t.Context(), again)
	require.Error(t, err)
	for _, s := range again.Steps {
		_, err := b.store.JobGet(t.Context(), s.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "step %s of the refused insert", s.Step)
	}
	d := b.workflow(t, first.ID)
	require.Equal(t, "first", d.Workflow.Name)
	require.Len(t, d.Steps, 4)

	// What the store cannot keep is refused before anything is written.
	for name, mutate := range map[string]func(p *store.WorkflowInsertParams){
		"no steps":      func(p *store.WorkflowInsertParams) { p.Steps = nil },
		"repeated name": func(p *store.WorkflowInsertParams) { p.Steps[1].Step = "a" },
		"other id":      func(p *store.WorkflowInsertParams) { p.Steps[2].WorkflowID = newID(t) },
		"idempotency":   func(p *store.WorkflowInsertParams) { p.Steps[0].IdempotencyKey = "k" },
		"parent later":  func(p *store.WorkflowInsertParams) { p.Steps[0].After = []string{p.Steps[1].ID} },
	} {
		bad := diamond(t, "bad")
		mutate(bad)
		_, err := b.store.WorkflowInsert(t.Context(), bad)
		require.ErrorIs(t, err, hoppertype.ErrInvalid, name)
		_, err = b.store.WorkflowGet(t.Context(), bad.ID)
		require.ErrorIs(t, err, store.ErrNotFound, name)
	}
}

// Get returns the workflow and its steps in insert order, each with the names of the steps it
// runs after; an unknown id is ErrNotFound.
func workflowGet(t *testing.T, b *bundle) {
	p := diamond(t, "release")
	b.insertWorkflow(t, p)
	d := b.workflow(t, p.ID)
	require.Equal(t, p.ID, d.Workflow.ID)
	require.Len(t, d.Steps, 4)
	want := map[string][]string{"a": nil, "b": {"a"}, "c": {"a"}, "d": {"b", "c"}}
	for i, s := range d.Steps {
		require.Equal(t, p.Steps[i].ID, s.Job.ID)
		require.Equal(t, p.Steps[i].Step, s.Job.Step)
		require.Equal(t, want[s.Job.Step], s.After, "step %s", s.Job.Step)
	}
	_, err := b.store.WorkflowGet(t.Context(), newID(t))
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Steps pages a workflow's steps in insert order, each with the names it runs after, filtered
// by state and by a part of the name, with the workflow and its counts; an unknown workflow is
// ErrNotFound, a made-up cursor ErrInvalidCursor.
func workflowSteps(t *testing.T, b *bundle) {
	p := workflowParams(t, "fan", stepSpec{name: "a"}, stepSpec{name: "b", after: []string{"a"}},
		stepSpec{name: "c", after: []string{"a"}}, stepSpec{name: "d", after: []string{"b", "c"}},
		stepSpec{name: "leaf-1", after: []string{"a"}}, stepSpec{name: "leaf-2", after: []string{"a", "d"}},
		stepSpec{name: "leaf-3"})
	b.insertWorkflow(t, p)
	b.end(t, b.step(t, p, "a"), hoppertype.StateCompleted)
	want := map[string][]string{"a": nil, "b": {"a"}, "c": {"a"}, "d": {"b", "c"}, "leaf-1": {"a"}, "leaf-2": {"a", "d"}, "leaf-3": nil}
	pages := func(q store.WorkflowStepsParams) ([]string, int) {
		t.Helper()
		q.ID = p.ID
		var names []string
		n := 0
		for {
			res, err := b.store.WorkflowSteps(t.Context(), &q)
			require.NoError(t, err)
			require.Equal(t, p.ID, res.Workflow.ID)
			require.Equal(t, 7, res.Workflow.Steps)
			require.Equal(t, map[hoppertype.JobState]int{hoppertype.StateCompleted: 1, hoppertype.StateQueued: 4,
				hoppertype.StateWaiting: 2}, res.Workflow.StepStates)
			require.LessOrEqual(t, len(res.Steps), store.PageLimit(q.Limit))
			n++
			for _, st := range res.Steps {
				names = append(names, st.Job.Step)
				require.Equal(t, want[st.Job.Step], st.After, "step %s", st.Job.Step)
				require.Equal(t, p.ID, st.Job.WorkflowID)
			}
			if res.NextCursor == "" {
				return names, n
			}
			q.Cursor = res.NextCursor
		}
	}
	all := []string{"a", "b", "c", "d", "leaf-1", "leaf-2", "leaf-3"}
	got, n := pages(store.WorkflowStepsParams{})
	require.Equal(t, all, got, "insert order")
	require.Equal(t, 1, n)
	got, n = pages(store.WorkflowStepsParams{Limit: 3})
	require.Equal(t, all, got)
	require.Equal(t, 3, n)
	got, _ = pages(store.WorkflowStepsParams{States: []hoppertype.JobState{hoppertype.StateWaiting}})
	require.Equal(t, []string{"d", "leaf-2"}, got)
	got, _ = pages(store.WorkflowStepsParams{States: []hoppertype.JobState{hoppertype.StateCompleted, hoppertype.StateWaiting}, Limit: 1})
	require.Equal(t, []string{"a", "d", "leaf-2"}, got)
	got, _ = pages(store.WorkflowStepsParams{StepContains: "leaf", Limit: 2})
	require.Equal(t, []string{"leaf-1", "leaf-2", "leaf-3"}, got)
	got, _ = pages(store.WorkflowStepsParams{StepContains: "af-", States: []hoppertype.JobState{hoppertype.StateQueued}})
	require.Equal(t, []string{"leaf-1", "leaf-3"}, got)
	got, _ = pages(store.WorkflowStepsParams{StepContains: "%"})
	require.Empty(t, got, "the name's part is text, not a pattern")

	_, err := b.store.WorkflowSteps(t.Context(), &store.WorkflowStepsParams{ID: newID(t)})
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.store.WorkflowSteps(t.Context(), &store.WorkflowStepsParams{ID: p.ID, Cursor: "not-a-cursor"})
	require.ErrorIs(t, err, store.ErrInvalidCursor)
}

// List filters by name and by derived state.
func workflowList(t *testing.T, b *bundle) {
	running := diamond(t, "nightly")
	b.insertWorkflow(t, running)
	done := workflowParams(t, "nightly", stepSpec{name: "only"})
	b.insertWorkflow(t, done)
	b.end(t, b.step(t, done, "only"), hoppertype.StateCompleted)
	failed := workflowParams(t, "weekly", stepSpec{name: "x"}, stepSpec{name: "y", after: []string{"x"}})
	b.insertWorkflow(t, failed)
	b.end(t, b.step(t, failed, "x"), hoppertype.StateFailed)

	list := func(p store.WorkflowListParams) []string {
		t.Helper()
		res, err := b.store.WorkflowList(t.Context(), &p)
		require.NoError(t, err)
		var out []string
		for _, w := range res.Workflows {
			out = append(out, w.ID)
		}
		return out
	}
	require.Equal(t, []string{failed.ID, done.ID, running.ID}, list(store.WorkflowListParams{}), "newest first")
	require.Equal(t, []string{running.ID, done.ID, failed.ID}, list(store.WorkflowListParams{Ascending: true}))
	require.Equal(t, []string{done.ID, running.ID}, list(store.WorkflowListParams{Name: "nightly"}))
	require.Equal(t, []string{running.ID}, list(store.WorkflowListParams{States: []hoppertype.WorkflowState{hoppertype.WorkflowRunning}}))
	require.Equal(t, []string{failed.ID, done.ID}, list(store.WorkflowListParams{
		States: []hoppertype.WorkflowState{hoppertype.WorkflowCompleted, hoppertype.WorkflowFailed}}))
	require.Equal(t, []string{done.ID}, list(store.WorkflowListParams{Name: "nightly",
		States: []hoppertype.WorkflowState{hoppertype.WorkflowCompleted}}))
	require.Empty(t, list(store.WorkflowListParams{Name: "monthly"}))
	require.Empty(t, list(store.WorkflowListParams{States: []hoppertype.WorkflowState{hoppertype.WorkflowCanceled}}))

	res, err := b.store.WorkflowList(t.Context(), &store.WorkflowListParams{Name: "weekly"})
	require.NoError(t, err)
	require.Len(t, res.Workflows, 1)
	w := res.Workflows[0]
	require.Equal(t, "weekly", w.Name)
	require.Equal(t, 2, w.Steps)
	require.Equal(t, hoppertype.WorkflowFailed, w.State)
	require.Equal(t, map[hoppertype.JobState]int{hoppertype.StateFailed: 1, hoppertype.StateCanceled: 1}, w.StepStates)

	_, err = b.store.WorkflowList(t.Context(), &store.WorkflowListParams{Cursor: "not-a-cursor"})
	require.ErrorIs(t, err, store.ErrInvalidCursor)
}

// Paging visits every workflow once, with or without a state filter, both ways.
func workflowListPages(t *testing.T, b *bundle) {
	var all, doneIDs []string
	for i := range 7 {
		p := workflowParams(t, "batch", stepSpec{name: "one"}, stepSpec{name: "two", after: []string{"one"}})
		b.insertWorkflow(t, p)
		all = append(all, p.ID)
		if i%2 == 0 {
			b.cancelWorkflowOK(t, p.ID)
			doneIDs = append(doneIDs, p.ID)
		}
	}
	pages := func(p store.WorkflowListParams) ([]string, int) {
		t.Helper()
		var out []string
		n := 0
		for {
			res, err := b.store.WorkflowList(t.Context(), &p)
			require.NoError(t, err)
			require.LessOrEqual(t, len(res.Workflows), p.Limit)
			n++
			for _, w := range res.Workflows {
				out = append(out, w.ID)
			}
			if res.NextCursor == "" {
				return out, n
			}
			require.NotEmpty(t, res.Workflows)
			p.Cursor = res.NextCursor
		}
	}
	got, n := pages(store.WorkflowListParams{Limit: 2, Ascending: true})
	require.Equal(t, all, got)
	require.Equal(t, 4, n)
	got, _ = pages(store.WorkflowListParams{Limit: 3})
	require.Equal(t, reversed(all), got)
	got, n = pages(store.WorkflowListParams{Limit: 1, Ascending: true,
		States: []hoppertype.WorkflowState{hoppertype.WorkflowCanceled}})
	require.Equal(t, doneIDs, got)
	require.Equal(t, len(doneIDs), n)
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func (b *bundle) cancelWorkflowOK(t *testing.T, id string) *store.WorkflowCancelResult {
	t.Helper()
	res, err := b.cancelWorkflow(t, id)
	require.NoError(t, err)
	return res
}

// A cancel ends every unfinished step in one go (a running one's lease is void), leaves the
// ended ones as they were, and releases nothing: the workflow's waiting steps end canceled,
// not queued. A child outside the workflow follows its own policy.
func workflowCancel(t *testing.T, b *bundle) {
	p := workflowParams(t, "release", stepSpec{name: "a"}, stepSpec{name: "b", after: []string{"a"}},
		stepSpec{name: "c", after: []string{"a"}},
		stepSpec{name: "d", after: []string{"b", "c"}, opts: []option{onFailure(hoppertype.ParentRun)}},
		stepSpec{name: "late", opts: []option{withRunAt(b.clock.Now().Add(time.Hour))}})
	b.insertWorkflow(t, p)
	a := b.step(t, p, "a")
	b.end(t, a, hoppertype.StateCompleted)
	running := b.claimOne(t, b.step(t, p, "b").Queue) // b runs, c is queued, d waits, late is scheduled
	outside := b.insert(t, inQueue("outside"), after(b.step(t, p, "c").ID), onFailure(hoppertype.ParentRun))
	b.clock.Advance(time.Minute)

	res := b.cancelWorkflowOK(t, p.ID)
	require.ElementsMatch(t, []string{p.Steps[1].ID, p.Steps[2].ID, p.Steps[3].ID, p.Steps[4].ID}, ids(res.Canceled))
	require.Equal(t, []string{running.ID}, res.WereRunning)
	for _, j := range res.Canceled {
		require.Equal(t, hoppertype.StateCanceled, j.State)
		got := b.get(t, j.ID)
		require.Equal(t, hoppertype.StateCanceled, got.State, "step %s", got.Step)
		sameTime(t, b.clock.Now(), got.FinishedAt, "finished")
		sameTime(t, b.clock.Now().Add(time.Hour), got.ExpiresAt, "kept for the given retention")
		ev := b.lastEvent(t, j.ID)
		require.Equal(t, hoppertype.StateCanceled, ev.To)
		require.Equal(t, hoppertype.ActorOperator, ev.Actor)
		require.Equal(t, "release canceled", ev.Reason, "step %s", got.Step)
	}
	require.Equal(t, hoppertype.StateRunning, b.lastEvent(t, running.ID).From)
	require.Equal(t, hoppertype.StateWaiting, b.lastEvent(t, p.Steps[3].ID).From, "d was canceled, not released")
	require.Zero(t, b.moves(t, p.Steps[3].ID, hoppertype.StateWaiting, hoppertype.StateQueued))
	require.Equal(t, hoppertype.StateCompleted, b.get(t, a.ID).State, "an ended step is left alone")
	require.Equal(t, 1, b.moves(t, a.ID, hoppertype.StateRunning, hoppertype.StateCompleted))

	// The running step's worker can no longer end it.
	require.ErrorIs(t, b.finish(t, finishing(running, hoppertype.StateCompleted)), store.ErrLeaseLost)
	// Nothing of the workflow can be claimed, now or later.
	b.clock.Advance(2 * time.Hour)
	b.promote(t)
	for _, s := range p.Steps {
		require.Empty(t, b.claim(t, s.Queue, 10), "step %s", s.Step)
	}
	// The child outside the workflow ran through its parent's cancel: its policy is run.
	require.Equal(t, hoppertype.StateQueued, b.get(t, outside.ID).State)

	w := res.Workflow
	require.Equal(t, hoppertype.WorkflowCanceled, w.State)
	require.Equal(t, map[hoppertype.JobState]int{hoppertype.StateCompleted: 1, hoppertype.StateCanceled: 4}, w.StepStates)
}

// A cancel of a workflow whose steps have all ended is refused and changes nothing; an
// unknown workflow is not found.
func workflowCancelRefused(t *testing.T, b *bundle) {
	p := workflowParams(t, "short", stepSpec{name: "only"})
	b.insertWorkflow(t, p)
	only := b.step(t, p, "only")
	b.end(t, only, hoppertype.StateCompleted)
	_, err := b.cancelWorkflow(t, p.ID)
	require.ErrorIs(t, err, store.ErrInvalidTransition)
	require.Equal(t, hoppertype.StateCompleted, b.get(t, only.ID).State)
	require.Equal(t, hoppertype.WorkflowCompleted, b.workflow(t, p.ID).Workflow.State)
	_, err = b.cancelWorkflow(t, newID(t))
	require.ErrorIs(t, err, store.ErrNotFound)

	twice := diamond(t, "twice")
	b.insertWorkflow(t, twice)
	b.cancelWorkflowOK(t, twice.ID)
	_, err = b.cancelWorkflow(t, twice.ID)
	require.ErrorIs(t, err, store.ErrInvalidTransition)
}

// A cancel racing the endings of running steps (PostgreSQL: on other connections, each ending
// releasing the step after them) ends the workflow either way, without a deadlock: each step
// ends completed if its ending came first and canceled if the cancel did (its ending then
// refused), and the step after them, never claimed, ends canceled.
func workflowCancelRacesEndings(t *testing.T, b *bundle) {
	const n = 6
	for round := range 5 {
		steps := make([]stepSpec, 0, n+1)
		var names []string
		for i := range n {
			name := "s" + strconv.Itoa(i)
			steps, names = append(steps, stepSpec{name: name}), append(names, name)
		}
		p := workflowParams(t, "race", append(steps, stepSpec{name: "join", after: names,
			opts: []option{onFailure(hoppertype.ParentRun)}})...)
		b.insertWorkflow(t, p)
		running := make([]*hoppertype.JobRow, n)
		for i := range n {
			running[i] = b.claimOne(t, p.Steps[i].Queue)
		}
		var wg sync.WaitGroup
		finishErrs := make([]error, n)
		var cancelErr error
		for i, j := range running {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := b.store.JobFinishMany(t.Context(), []*store.FinishParams{finishing(j, hoppertype.StateCompleted)})
				if err == nil {
					err = res[0]
				}
				finishErrs[i] = err
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, cancelErr = b.cancelWorkflow(t, p.ID)
		}()
		wg.Wait()
		require.NoError(t, cancelErr, "round %d: join had not ended, so the cancel has work", round)
		for i, j := range running {
			got := b.get(t, j.ID).State
			if finishErrs[i] == nil {
				require.Equal(t, hoppertype.StateCompleted, got, "round %d step %d", round, i)
			} else {
				require.ErrorIs(t, finishErrs[i], store.ErrLeaseLost, "round %d step %d", round, i)
				require.Equal(t, hoppertype.StateCanceled, got, "round %d step %d", round, i)
			}
		}
		require.Equal(t, hoppertype.StateCanceled, b.step(t, p, "join").State, "round %d", round)
		require.Empty(t, b.claim(t, p.Steps[n].Queue, 1), "round %d", round)
		require.Equal(t, hoppertype.WorkflowCanceled, b.workflow(t, p.ID).Workflow.State)
	}
}

// The state follows the steps: running while one has not ended; then failed if one failed
// (whatever was canceled), canceled if one was canceled, else completed. Started and finished
// times are the first start and the last ending.
func workflowState(t *testing.T, b *bundle) {
	state := func(p *store.WorkflowInsertParams) *hoppertype.WorkflowRow {
		t.Helper()
		return b.workflow(t, p.ID).Workflow
	}
	ok := diamond(t, "ok")
	b.insertWorkflow(t, ok)
	b.clock.Advance(time.Second)
	start := b.clock.Now()
	for i, name := range []string{"a", "b", "c", "d"} {
		require.Equal(t, hoppertype.WorkflowRunning, state(ok).State, "before %s", name)
		b.end(t, b.step(t, ok, name), hoppertype.StateCompleted)
		if i == 0 {
			sameTime(t, start, state(ok).StartedAt, "started with its first step")
		}
		b.clock.Advance(time.Second)
	}
	w := state(ok)
	require.Equal(t, hoppertype.WorkflowCompleted, w.State)
	require.Equal(t, map[hoppertype.JobState]int{hoppertype.StateCompleted: 4}, w.StepStates)
	sameTime(t, start, w.StartedAt, "started")
	sameTime(t, b.clock.Now().Add(-time.Second), w.FinishedAt, "finished with its last step")

	// b fails: d (policy cancel) is canceled by it, c still runs: running, then failed.
	bad := diamond(t, "bad")
	b.insertWorkflow(t, bad)
	b.end(t, b.step(t, bad, "a"), hoppertype.StateCompleted)
	b.end(t, b.step(t, bad, "b"), hoppertype.StateFailed)
	require.Equal(t, hoppertype.StateCanceled, b.step(t, bad, "d").State)
	require.Equal(t, hoppertype.WorkflowRunning, state(bad).State, "c has not ended")
	b.cancel(t, b.step(t, bad, "c").ID)
	require.Equal(t, hoppertype.WorkflowFailed, state(bad).State, "a failure is not hidden by a cancel")

	// A step canceled by hand: its children follow their policies, the workflow is canceled.
	stopped := diamond(t, "stopped")
	b.insertWorkflow(t, stopped)
	b.cancel(t, b.step(t, stopped, "a").ID)
	w = state(stopped)
	require.Equal(t, hoppertype.WorkflowCanceled, w.State)
	require.Equal(t, map[hoppertype.JobState]int{hoppertype.StateCanceled: 4}, w.StepStates)
	require.True(t, w.StartedAt.IsZero(), "no step ran")
	sameTime(t, b.clock.Now(), w.FinishedAt, "finished")
}

// A job enqueued on its own belongs to no workflow, and its ending touches none.
func workflowPlainJob(t *testing.T, b *bundle) {
	p := diamond(t, "beside")
	b.insertWorkflow(t, p)
	job := b.insert(t)
	require.Empty(t, job.WorkflowID)
	require.Empty(t, job.Step)
	got := b.get(t, job.ID)
	require.Empty(t, got.WorkflowID)
	require.Empty(t, got.Step)
	claimed := b.claimOne(t, job.Queue)
	require.Empty(t, claimed.WorkflowID)
	require.NoError(t, b.finish(t, finishing(claimed, hoppertype.StateCompleted)))
	d := b.workflow(t, p.ID)
	require.Len(t, d.Steps, 4)
	require.Equal(t, map[hoppertype.JobState]int{hoppertype.StateQueued: 1, hoppertype.StateWaiting: 3}, d.Workflow.StepStates)
}

// Compaction leaves a workflow's steps alone: compacting one would take it out of its
// workflow.
func workflowNotCompacted(t *testing.T, b *bundle) {
	grouped := []option{withGroup("g"), withKind("digest"), inQueue("shared")}
	p := workflowParams(t, "grouped", stepSpec{name: "one", opts: grouped}, stepSpec{name: "two", opts: grouped})
	b.insertWorkflow(t, p)
	plain := b.insert(t, withGroup("g"), withKind("digest"), inQueue("shared"))
	res := b.compact(t, "digest", hoppertype.MergeKeep, 0)
	require.Empty(t, res.Groups, "one plain job is no group to compact")
	for _, s := range p.Steps {
		require.Equal(t, hoppertype.StateQueued, b.get(t, s.ID).State)
	}
	require.Equal(t, hoppertype.StateQueued, b.get(t, plain.ID).State)
}

// A workflow whose steps have expired is gone for readers, and its row goes with its last
// step when the sweep deletes it.
func workflowExpiry(t *testing.T, b *bundle) {
	p := workflowParams(t, "brief", stepSpec{name: "only"})
	b.insertWorkflow(t, p)
	job := b.claimOne(t, p.Steps[0].Queue)
	b.finishExpiring(t, job, hoppertype.StateCompleted, time.Minute)
	kept := diamond(t, "kept")
	b.insertWorkflow(t, kept)
	require.Equal(t, hoppertype.WorkflowCompleted, b.workflow(t, p.ID).Workflow.State)

	b.clock.Advance(2 * time.Minute)
	_, err := b.store.WorkflowGet(t.Context(), p.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "expired, not yet swept")
	res, err := b.store.WorkflowList(t.Context(), &store.WorkflowListParams{})
	require.NoError(t, err)
	require.Len(t, res.Workflows, 1)
	require.Equal(t, kept.ID, res.Workflows[0].ID)
	require.Equal(t, 1, b.sweep(t, 500))
	_, err = b.store.WorkflowGet(t.Context(), p.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	// Its row went with its last step: its id is free again.
	again := workflowParams(t, "brief", stepSpec{name: "only"})
	again.ID = p.ID
	again.Steps[0].WorkflowID = p.ID
	b.insertWorkflow(t, again)
	require.Len(t, b.workflow(t, kept.ID).Steps, 4)
}

// A workflow of 100,000 steps (a root, the rest after it, a last step after all of those: a
// fan-in of 99,998 parents) goes in as one and runs to its end, the last step released once,
// by the last of its parents.
func workflowLarge(t *testing.T, b *bundle) {
	if testing.Short() {
		t.Skip("100,000 jobs")
	}
	// Under the race detector (make test) 1,000 steps: the SQLite driver runs ~50 times
	// slower there. Full size: go test -run 'TestConformance/Workflow/Large$' (docs/development.md).
	n := 100_000
	if raceDetector {
		n = 1_000
	}
	batch := min(1_000, n/10)
	queue := "large-" + newID(t)
	p := &store.WorkflowInsertParams{ID: newID(t), Name: "large"}
	root := params(t, inQueue("root-"+queue))
	root.WorkflowID, root.Step = p.ID, "root"
	p.Steps = append(p.Steps, root)
	middle := make([]string, 0, n-2)
	for i := range n - 2 {
		sp := params(t, inQueue(queue))
		sp.WorkflowID, sp.Step, sp.After = p.ID, fmt.Sprintf("part-%d", i), []string{root.ID}
		p.Steps, middle = append(p.Steps, sp), append(middle, sp.ID)
	}
	last := params(t, inQueue("last-"+queue))
	last.WorkflowID, last.Step, last.After = p.ID, "last", middle
	p.Steps = append(p.Steps, last)
	b.insertWorkflow(t, p)

	b.end(t, b.get(t, root.ID), hoppertype.StateCompleted)
	for done := 0; done < n-2; {
		jobs := b.claim(t, queue, batch)
		require.NotEmpty(t, jobs, "after %d of %d", done, n-2)
		b.completeBatch(t, jobs)
		done += len(jobs)
		if done < n-2 {
			require.Equal(t, hoppertype.StateWaiting, b.get(t, last.ID).State, "after %d endings", done)
		}
	}
	require.Equal(t, hoppertype.StateQueued, b.get(t, last.ID).State)
	require.Equal(t, 1, b.moves(t, last.ID, hoppertype.StateWaiting, hoppertype.StateQueued))
	b.end(t, b.get(t, last.ID), hoppertype.StateCompleted)
	w := b.workflow(t, p.ID).Workflow
	require.Equal(t, hoppertype.WorkflowCompleted, w.State)
	require.Equal(t, n, w.Steps)
	require.Equal(t, map[hoppertype.JobState]int{hoppertype.StateCompleted: n}, w.StepStates)
}
