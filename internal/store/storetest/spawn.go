package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Fan-out at run time (store/spawn.go): a running step adds jobs to its workflow, and the
// jobs that wait for it wait for those too.
func testSpawn(t *testing.T, opener Opener) {
	parallel(t, opener, "ChildWaitsForSpawned", spawnChildWaits)
	parallel(t, opener, "SpawnedFails", spawnSpawnedFails)
	parallel(t, opener, "SpawnedFailsRun", spawnSpawnedFailsRun)
	parallel(t, opener, "StaleToken", spawnStaleToken)
	parallel(t, opener, "RetryIdempotent", spawnRetryIdempotent)
	parallel(t, opener, "Atomic", spawnAtomic)
	parallel(t, opener, "NoCycle", spawnNoCycle)
	parallel(t, opener, "OutsideWorkflow", spawnOutsideWorkflow)
	parallel(t, opener, "CanceledAtOnce", spawnCanceledAtOnce)
	parallel(t, opener, "CanceledChildLeft", spawnCanceledChildLeft)
	parallel(t, opener, "EndedForCanceledChild", spawnEndedForCanceledChild)
	parallel(t, opener, "RacesEnding", spawnRacesEnding)
	parallel(t, opener, "SameNameAtOnce", spawnSameNameAtOnce)
}

// splitMerge is split → merge, with the split step claimed: the running spawner.
func (b *bundle) splitMerge(t *testing.T, mergeOpts ...option) (*store.WorkflowInsertParams, *hoppertype.JobRow) {
	t.Helper()
	p := workflowParams(t, "split-merge", stepSpec{name: "split"},
		stepSpec{name: "merge", after: []string{"split"}, opts: mergeOpts})
	b.insertWorkflow(t, p)
	split := b.claimOne(t, p.Steps[0].Queue)
	require.Equal(t, p.Steps[0].ID, split.ID)
	return p, split
}

// spawnChunk is a job to spawn as step name (none: generated), in a queue of its own.
func spawnChunk(t *testing.T, name string, opts ...option) *store.InsertParams {
	t.Helper()
	j := params(t, append([]option{inQueue("chunk-" + newID(t)), withKind("chunk")}, opts...)...)
	j.Step, j.Actor, j.Reason = name, hoppertype.ActorWorker, "spawn"
	return j
}

func (b *bundle) spawn(t *testing.T, spawner *hoppertype.JobRow, jobs ...*store.InsertParams) []*store.InsertResult {
	t.Helper()
	res, err := b.store.JobSpawn(t.Context(), &store.SpawnParams{ID: spawner.ID, Token: spawner.Token, Jobs: jobs})
	require.NoError(t, err)
	require.Len(t, res, len(jobs))
	return res
}

// The spawned jobs are steps of the spawner's workflow (WorkflowGet shows them, the merge
// step runs after them), may wait for each other, and the merge step is released only when
// the spawner and every spawned job have ended; it reads them all as parents.
func spawnChildWaits(t *testing.T, b *bundle) {
	p, split := b.splitMerge(t)
	c1, c2 := spawnChunk(t, "chunk-1"), spawnChunk(t, "")
	c3 := spawnChunk(t, "chunk-3", after(c1.ID))
	res := b.spawn(t, split, c1, c2, c3)
	for i, r := range res {
		require.False(t, r.Existing)
		require.Equal(t, p.ID, r.Job.WorkflowID)
		require.Equal(t, []*store.InsertParams{c1, c2, c3}[i].ID, r.Job.ID)
	}
	require.Equal(t, "chunk-1", res[0].Job.Step)
	require.Equal(t, store.SpawnedStep("split", c2.ID), res[1].Job.Step, "a generated step name")
	require.Equal(t, hoppertype.StateQueued, res[0].Job.State)
	require.Equal(t, hoppertype.StateWaiting, res[2].Job.State, "a spawned job may wait for another")

	d := b.workflow(t, p.ID)
	require.Equal(t, 5, d.Workflow.Steps)
	require.Len(t, d.Steps, 5)
	after := map[string][]string{}
	for _, s := range d.Steps {
		after[s.Job.Step] = s.After
	}
	require.ElementsMatch(t, []string{"split", "chunk-1", res[1].Job.Step, "chunk-3"}, after["merge"])
	require.Equal(t, []string{"chunk-1"}, after["chunk-3"])

	// The spawner's ending no longer releases the merge step: the chunks still run.
	require.NoError(t, b.finish(t, finishing(split, hoppertype.StateCompleted)))
	require.Equal(t, hoppertype.StateWaiting, b.step(t, p, "merge").State)
	b.end(t, res[0].Job, hoppertype.StateCompleted)
	b.end(t, res[1].Job, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateWaiting, b.step(t, p, "merge").State)
	b.end(t, b.get(t, c3.ID), hoppertype.StateCompleted)
	merge := b.step(t, p, "merge")
	require.Equal(t, hoppertype.StateQueued, merge.State, "released by the last spawned job")
	require.Contains(t, b.lastEvent(t, merge.ID).Reason, c3.ID)
	require.Equal(t, []string{split.ID, c1.ID, c2.ID, c3.ID}, parentIDs(b.parents(t, merge.ID)),
		"the spawner first, then the spawned jobs in the order spawned")
}

// A spawned job that fails applies the merge step's policy (cancel, the default): it is
// canceled, its reason names the spawned job.
func spawnSpawnedFails(t *testing.T, b *bundle) {
	p, split := b.splitMerge(t)
	res := b.spawn(t, split, spawnChunk(t, "chunk"))
	b.end(t, res[0].Job, hoppertype.StateFailed)
	merge := b.step(t, p, "merge")
	require.Equal(t, hoppertype.StateCanceled, merge.State)
	require.Equal(t, "parent "+res[0].Job.ID+" failed", b.lastEvent(t, merge.ID).Reason)
}

// With policy run, the merge step runs once the spawner and the failed spawned job ended.
func spawnSpawnedFailsRun(t *testing.T, b *bundle) {
	p, split := b.splitMerge(t, onFailure(hoppertype.ParentRun))
	res := b.spawn(t, split, spawnChunk(t, "chunk"))
	b.end(t, res[0].Job, hoppertype.StateFailed)
	require.Equal(t, hoppertype.StateWaiting, b.step(t, p, "merge").State)
	require.NoError(t, b.finish(t, finishing(split, hoppertype.StateCompleted)))
	require.Equal(t, hoppertype.StateQueued, b.step(t, p, "merge").State)
}

// A stale attempt spawns nothing: another token, an attempt ended, no such job.
func spawnStaleToken(t *testing.T, b *bundle) {
	p, split := b.splitMerge(t)
	try := func(id string, token int64) error {
		j := spawnChunk(t, "chunk")
		_, err := b.store.JobSpawn(t.Context(), &store.SpawnParams{ID: id, Token: token, Jobs: []*store.InsertParams{j}})
		_, gerr := b.store.JobGet(t.Context(), j.ID)
		require.ErrorIs(t, gerr, store.ErrNotFound, "nothing spawned")
		return err
	}
	require.ErrorIs(t, try(split.ID, split.Token+1), store.ErrLeaseLost)
	require.ErrorIs(t, try(newID(t), 1), store.ErrNotFound)
	require.NoError(t, b.finish(t, finishing(split, hoppertype.StateCompleted)))
	require.ErrorIs(t, try(split.ID, split.Token), store.ErrLeaseLost)
	require.Equal(t, 2, b.workflow(t, p.ID).Workflow.Steps)
	require.Equal(t, hoppertype.StateQueued, b.step(t, p, "merge").State)
}

// A retried attempt that spawns the same step names (or idempotency keys) gets the first
// attempt's jobs back, and the merge step does not wait for them twice.
func spawnRetryIdempotent(t *testing.T, b *bundle) {
	p, split := b.splitMerge(t)
	keyed := func() *store.InsertParams {
		j := spawnChunk(t, "", withKey("spawn-"+p.ID, time.Hour))
		j.Queue = "keyed-" + p.ID
		return j
	}
	first := b.spawn(t, split, spawnChunk(t, "chunk"), keyed())
	retry := finishing(split, hoppertype.StateScheduled)
	retry.RunAt = b.clock.Now()
	require.NoError(t, b.finish(t, retry))
	b.promote(t)
	split = b.claimOne(t, split.Queue)
	require.Equal(t, 2, split.Attempt)

	again := b.spawn(t, split, spawnChunk(t, "chunk"), keyed())
	for i := range again {
		require.True(t, again[i].Existing)
		require.Equal(t, first[i].Job.ID, again[i].Job.ID)
	}
	require.Equal(t, 4, b.workflow(t, p.ID).Workflow.Steps)
	require.Len(t, b.parents(t, b.step(t, p, "merge").ID), 3)
	require.NoError(t, b.finish(t, finishing(split, hoppertype.StateCompleted)))
	b.end(t, first[0].Job, hoppertype.StateCompleted)
	b.end(t, first[1].Job, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.step(t, p, "merge").State, "each spawned job counted once")
}

// A spawn that fails anywhere inserts none of its jobs and leaves the children as they were.
func spawnAtomic(t *testing.T, b *bundle) {
	p, split := b.splitMerge(t)
	good, bad := spawnChunk(t, "good"), spawnChunk(t, "bad", after(newID(t)))
	_, err := b.store.JobSpawn(t.Context(), &store.SpawnParams{ID: split.ID, Token: split.Token,
		Jobs: []*store.InsertParams{good, bad}})
	require.ErrorIs(t, err, hoppertype.ErrInvalid)
	var pe *store.ParentError
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, 1, pe.Item)
	_, err = b.store.JobGet(t.Context(), good.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Len(t, b.workflow(t, p.ID).Steps, 2)
	require.NoError(t, b.finish(t, finishing(split, hoppertype.StateCompleted)))
	require.Equal(t, hoppertype.StateQueued, b.step(t, p, "merge").State)
}

// A spawned job can neither wait for a job that waits for the spawner nor be one: it would
// wait for itself.
func spawnNoCycle(t *testing.T, b *bundle) {
	p, split := b.splitMerge(t)
	merge := b.step(t, p, "merge")
	// A job outside the workflow that waits for the merge step waits for the spawner too.
	later := b.insert(t, inQueue("later-"+p.ID), after(merge.ID))
	for _, tc := range []struct {
		job   *store.InsertParams
		field string
	}{
		{spawnChunk(t, "x", after(merge.ID)), "after[0]"},
		{spawnChunk(t, "y", after(split.ID, later.ID)), "after[1]"},
		{spawnChunk(t, "merge"), "step"},
		{spawnChunk(t, "split"), "step"},
	} {
		_, err := b.store.JobSpawn(t.Context(), &store.SpawnParams{ID: split.ID, Token: split.Token,
			Jobs: []*store.InsertParams{tc.job}})
		require.ErrorIs(t, err, hoppertype.ErrInvalid)
		var se *store.SpawnError
		require.True(t, errors.As(err, &se), "%v", err)
		require.Equal(t, tc.field, se.Field())
	}
	// Waiting for the spawner itself is allowed: the job runs after it, the merge step after both.
	res := b.spawn(t, split, spawnChunk(t, "after-split", after(split.ID)))
	require.Equal(t, hoppertype.StateWaiting, res[0].Job.State)
	require.NoError(t, b.finish(t, finishing(split, hoppertype.StateCompleted)))
	require.Equal(t, hoppertype.StateWaiting, b.step(t, p, "merge").State)
	b.end(t, b.get(t, res[0].Job.ID), hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.step(t, p, "merge").State)
}

// Outside a workflow, a running job spawns plain jobs (no step names), and its children wait
// for them.
func spawnOutsideWorkflow(t *testing.T, b *bundle) {
	spawner := b.running(t)
	child := b.insert(t, inQueue("child-"+spawner.ID), after(spawner.ID))
	_, err := b.store.JobSpawn(t.Context(), &store.SpawnParams{ID: spawner.ID, Token: spawner.Token,
		Jobs: []*store.InsertParams{spawnChunk(t, "named")}})
	var se *store.SpawnError
	require.True(t, errors.As(err, &se), "%v", err)
	require.Equal(t, "step", se.Field())

	res := b.spawn(t, spawner, spawnChunk(t, ""))
	require.Empty(t, res[0].Job.WorkflowID)
	require.Empty(t, res[0].Job.Step)
	require.NoError(t, b.finish(t, finishing(spawner, hoppertype.StateCompleted)))
	require.Equal(t, hoppertype.StateWaiting, b.get(t, child.ID).State)
	b.end(t, res[0].Job, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State)
}

// A spawned job that names a failed job is canceled at once, and that counts for the merge
// step at once: its policy cancel cancels it.
func spawnCanceledAtOnce(t *testing.T, b *bundle) {
	p, split := b.splitMerge(t)
	failed := b.parent(t)
	b.end(t, failed, hoppertype.StateFailed)
	res := b.spawn(t, split, spawnChunk(t, "doomed", after(failed.ID)))
	require.Equal(t, hoppertype.StateCanceled, res[0].Job.State)
	merge := b.step(t, p, "merge")
	require.Equal(t, hoppertype.StateCanceled, merge.State)
	require.Equal(t, "parent "+res[0].Job.ID+" canceled", b.lastEvent(t, merge.ID).Reason)
}

// While the spawner runs, the jobs that wait for it are all waiting: none was released. One
// already canceled (another parent failed) stays canceled, and gets the spawned job as a
// parent too: once the failed parent is retried in place, the re-armed child waits for the
// spawned job as well, and is released only once it has ended.
func spawnCanceledChildLeft(t *testing.T, b *bundle) {
	spawner := b.running(t)
	other := b.parent(t)
	waiting := b.insert(t, inQueue("w-"+spawner.ID), after(spawner.ID))
	canceled := b.insert(t, inQueue("c-"+spawner.ID), after(spawner.ID, other.ID))
	b.end(t, other, hoppertype.StateFailed)
	require.Equal(t, hoppertype.StateCanceled, b.get(t, canceled.ID).State)
	res := b.spawn(t, spawner, spawnChunk(t, ""))
	require.Equal(t, hoppertype.StateWaiting, b.get(t, waiting.ID).State)
	require.Equal(t, hoppertype.StateCanceled, b.get(t, canceled.ID).State)
	require.Equal(t, []string{spawner.ID, res[0].Job.ID}, parentIDs(b.parents(t, waiting.ID)))
	require.Equal(t, []string{spawner.ID, other.ID, res[0].Job.ID}, parentIDs(b.parents(t, canceled.ID)))

	b.retryInPlace(t, other.ID)
	require.Equal(t, hoppertype.StateWaiting, b.get(t, canceled.ID).State, "re-armed")
	b.end(t, other, hoppertype.StateCompleted)
	require.NoError(t, b.finish(t, finishing(spawner, hoppertype.StateCompleted)))
	require.Equal(t, hoppertype.StateWaiting, b.get(t, canceled.ID).State, "the spawned job runs")
	b.end(t, b.get(t, res[0].Job.ID), hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, canceled.ID).State)
	require.Equal(t, hoppertype.StateQueued, b.get(t, waiting.ID).State)
}

// A spawned job that ended before the spawn found it (here: canceled at once) counts for a
// canceled child's re-arm as ended.
func spawnEndedForCanceledChild(t *testing.T, b *bundle) {
	spawner := b.running(t)
	other, failed := b.parent(t), b.parent(t)
	canceled := b.insert(t, inQueue("c-"+spawner.ID), after(spawner.ID, other.ID), onFailure(hoppertype.ParentCancel))
	b.end(t, other, hoppertype.StateFailed)
	b.end(t, failed, hoppertype.StateFailed)
	res := b.spawn(t, spawner, spawnChunk(t, "", after(failed.ID), onFailure(hoppertype.ParentSkip)))
	require.Equal(t, hoppertype.StateCanceled, res[0].Job.State, "skipped: counts as succeeded")
	b.retryInPlace(t, other.ID)
	require.Equal(t, hoppertype.StateWaiting, b.get(t, canceled.ID).State)
	b.end(t, other, hoppertype.StateCompleted)
	require.NoError(t, b.finish(t, finishing(spawner, hoppertype.StateCompleted)))
	require.Equal(t, hoppertype.StateQueued, b.get(t, canceled.ID).State, "the ended spawned job is not waited for")
}

// A spawn racing the spawner's ending (here a cancel, the child running whatever happens)
// either comes first, and the child waits for the spawned job, or finds the spawner ended and
// spawns nothing, and the child is released: never a child released with a spawned job
// still running, nor one left waiting for nothing.
func spawnRacesEnding(t *testing.T, b *bundle) {
	for round := range 10 {
		spawner := b.running(t)
		child := b.insert(t, inQueue("child-"+spawner.ID), after(spawner.ID), onFailure(hoppertype.ParentRun))
		j := spawnChunk(t, "")
		var wg sync.WaitGroup
		var spawnErr, cancelErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, spawnErr = b.store.JobSpawn(t.Context(), &store.SpawnParams{ID: spawner.ID, Token: spawner.Token,
				Jobs: []*store.InsertParams{j}})
		}()
		go func() {
			defer wg.Done()
			_, cancelErr = b.store.JobCancel(t.Context(), &store.CancelParams{ID: spawner.ID, Actor: hoppertype.ActorOperator, Reason: "race"})
		}()
		wg.Wait()
		require.NoError(t, cancelErr)
		got := b.get(t, child.ID)
		if spawnErr != nil {
			require.ErrorIs(t, spawnErr, store.ErrLeaseLost, "round %d", round)
			require.Equal(t, hoppertype.StateQueued, got.State, "round %d: nothing spawned, released", round)
			continue
		}
		require.Equal(t, hoppertype.StateWaiting, got.State, "round %d: waits for the spawned job", round)
		b.end(t, b.get(t, j.ID), hoppertype.StateCompleted)
		require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State, "round %d", round)
	}
}

// Steps spawning the same step name at once (each in its own transaction) all get the one job
// of that name: one spawn inserts it, the others find it and make it a parent of their children
// too, as a spawn that names a step already there does; none fails. The merge step after the
// spawners waits for it once. Several rounds, so that the spawns do race.
func spawnSameNameAtOnce(t *testing.T, b *bundle) {
	const spawners = 6
	for range 4 {
		steps := []stepSpec{}
		var names []string
		for i := range spawners {
			name := fmt.Sprintf("s%d", i)
			steps, names = append(steps, stepSpec{name: name, opts: []option{inQueue("same-" + newID(t))}}), append(names, name)
		}
		p := workflowParams(t, "same-name", append(steps, stepSpec{name: "merge", after: names})...)
		b.insertWorkflow(t, p)
		running := make([]*hoppertype.JobRow, spawners)
		for i := range spawners {
			running[i] = b.claimOne(t, p.Steps[i].Queue)
		}
		shared := spawnChunk(t, "shared")
		results := make([][]*store.InsertResult, spawners)
		errs := make([]error, spawners)
		var wg sync.WaitGroup
		for i, r := range running {
			wg.Go(func() {
				j := *shared
				j.ID = newID(t)
				results[i], errs[i] = b.store.JobSpawn(t.Context(), &store.SpawnParams{ID: r.ID, Token: r.Token,
					Jobs: []*store.InsertParams{&j}})
			})
		}
		wg.Wait()
		inserted := 0
		for i := range spawners {
			require.NoError(t, errs[i], "spawner %d", i)
			require.Len(t, results[i], 1)
			require.Equal(t, results[0][0].Job.ID, results[i][0].Job.ID, "one job of the name")
			if !results[i][0].Existing {
				inserted++
			}
		}
		require.Equal(t, 1, inserted, "one spawn inserted it")
		require.Equal(t, spawners+2, b.workflow(t, p.ID).Workflow.Steps)
		require.Len(t, b.parents(t, b.step(t, p, "merge").ID), spawners+1, "the spawned step is a parent once")
	}
}
