package storetest

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Results passed along (contract 19, store/parents.go): a child reads its parents' outcomes
// and results, in the order it named them, from the parents' rows.
func testParents(t *testing.T, opener Opener) {
	parallel(t, opener, "CompletedInOrder", parentsCompletedInOrder)
	parallel(t, opener, "FailedCanceledSkipped", parentsFailedCanceledSkipped)
	parallel(t, opener, "WithoutResult", parentsWithoutResult)
	parallel(t, opener, "Expired", parentsExpired)
	parallel(t, opener, "RetriedThenExpired", parentsRetriedThenExpired)
	parallel(t, opener, "NoParents", parentsNone)
	parallel(t, opener, "Fenced", parentsFenced)
	parallel(t, opener, "SizeBound", parentsSizeBound)
	parallel(t, opener, "Steps", parentsSteps)
	parallel(t, opener, "Limit", parentsLimit)
	parallel(t, opener, "NoResults", parentsNoResults)
	parallel(t, opener, "Children", parentsChildren)
}

// Limit reads the first parents in the order the child named them, and counts them all.
func parentsLimit(t *testing.T, b *bundle) {
	ps := []*hoppertype.JobRow{b.parent(t), b.parent(t), b.parent(t), b.parent(t)}
	child := b.insert(t, inQueue("children"), after(ps[2].ID, ps[0].ID, ps[3].ID, ps[1].ID))
	read := func(limit int) *store.Parents {
		t.Helper()
		got, err := b.store.JobParents(t.Context(), &store.ParentsParams{ID: child.ID, Unfenced: true, Limit: limit})
		require.NoError(t, err)
		require.Equal(t, 4, got.Total)
		return got
	}
	require.Equal(t, []string{ps[2].ID, ps[0].ID}, parentIDs(read(2).Parents))
	require.Equal(t, []string{ps[2].ID, ps[0].ID, ps[3].ID, ps[1].ID}, parentIDs(read(0).Parents))
	require.Len(t, read(9).Parents, 4)
	alone := b.insert(t)
	got, err := b.store.JobParents(t.Context(), &store.ParentsParams{ID: alone.ID, Unfenced: true, Limit: 2})
	require.NoError(t, err)
	require.Empty(t, got.Parents)
	require.Zero(t, got.Total)
}

// NoResults reads the first parents without a result (no size either), in the order the child
// named them, and counts them all; how each ended is read as with results.
func parentsNoResults(t *testing.T, b *bundle) {
	p1, p2, p3 := b.parent(t), b.parent(t), b.parent(t)
	child := b.insert(t, inQueue("children"), after(p3.ID, p1.ID, p2.ID), onFailure(hoppertype.ParentRun))
	b.completeWith(t, p1, `"abcdé"`)
	b.completeWith(t, p3, `[1,2,3]`)
	for _, limit := range []int{0, 2} {
		got, err := b.store.JobParents(t.Context(), &store.ParentsParams{ID: child.ID, Unfenced: true, NoResults: true, Limit: limit})
		require.NoError(t, err)
		require.Equal(t, 3, got.Total)
		require.Zero(t, got.ResultBytes)
		require.False(t, got.ResultsOmitted)
		want := []string{p3.ID, p1.ID, p2.ID}
		if limit > 0 {
			want = want[:limit]
		}
		require.Equal(t, want, parentIDs(got.Parents))
		states := []hoppertype.JobState{hoppertype.StateCompleted, hoppertype.StateCompleted, hoppertype.StateQueued}
		for i, p := range got.Parents {
			require.Nil(t, p.Result)
			require.Equal(t, states[i], p.State)
			require.NotEmpty(t, p.Kind)
			require.False(t, p.Expired)
		}
	}
	got, err := b.store.JobParents(t.Context(), &store.ParentsParams{ID: b.insert(t).ID, Unfenced: true, NoResults: true, Limit: 2})
	require.NoError(t, err)
	require.Empty(t, got.Parents)
	require.Zero(t, got.Total)
	_, err = b.store.JobParents(t.Context(), &store.ParentsParams{ID: newID(t), Unfenced: true, NoResults: true})
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Children pages the live jobs that wait or waited for a job, in id order, and counts them; an
// expired child is gone, a job without children (or no job) has none.
func parentsChildren(t *testing.T, b *bundle) {
	parent := b.parent(t)
	other := b.parent(t)
	var want []string
	for range 5 {
		want = append(want, b.insert(t, inQueue("children"), after(parent.ID)).ID)
	}
	gone := b.insert(t, inQueue("children"), after(other.ID, parent.ID))
	_, err := b.store.JobCancel(t.Context(), &store.CancelParams{ID: gone.ID, Actor: hoppertype.ActorAPI, Reason: "test",
		ExpiresAt: b.clock.Now().Add(time.Minute)})
	require.NoError(t, err)
	b.clock.Advance(2 * time.Minute)
	b.insert(t, inQueue("children"), after(other.ID))

	var got []string
	p := store.ChildrenParams{ID: parent.ID, Limit: 2}
	for pages := 1; ; pages++ {
		res, err := b.store.JobChildren(t.Context(), &p)
		require.NoError(t, err)
		require.Equal(t, 5, res.Total)
		require.LessOrEqual(t, len(res.Jobs), 2)
		for _, j := range res.Jobs {
			got = append(got, j.ID)
			require.Equal(t, hoppertype.StateWaiting, j.State)
		}
		if res.NextCursor == "" {
			require.Equal(t, 3, pages)
			break
		}
		p.Cursor = res.NextCursor
	}
	require.Equal(t, want, got)
	res, err := b.store.JobChildren(t.Context(), &store.ChildrenParams{ID: other.ID})
	require.NoError(t, err)
	require.Equal(t, 1, res.Total, "the expired child is gone")
	for _, id := range []string{want[0], newID(t)} {
		res, err = b.store.JobChildren(t.Context(), &store.ChildrenParams{ID: id})
		require.NoError(t, err)
		require.Empty(t, res.Jobs)
		require.Zero(t, res.Total)
	}
	_, err = b.store.JobChildren(t.Context(), &store.ChildrenParams{ID: parent.ID, Cursor: "not-a-cursor"})
	require.ErrorIs(t, err, store.ErrInvalidCursor)
}

// parents reads the parents of job id, unfenced and unbounded.
func (b *bundle) parents(t *testing.T, id string) []*hoppertype.ParentResult {
	t.Helper()
	got, err := b.store.JobParents(t.Context(), &store.ParentsParams{ID: id, Unfenced: true})
	require.NoError(t, err)
	require.False(t, got.ResultsOmitted)
	require.NotNil(t, got.Parents)
	return got.Parents
}

// completeWith claims job (alone in its queue) and completes it with result (none if empty).
func (b *bundle) completeWith(t *testing.T, job *hoppertype.JobRow, result string) {
	t.Helper()
	claimed := b.claimOne(t, job.Queue)
	require.Equal(t, job.ID, claimed.ID)
	p := finishing(claimed, hoppertype.StateCompleted)
	if result != "" {
		p.Result = json.RawMessage(result)
	}
	require.NoError(t, b.finish(t, p))
}

func parentIDs(ps []*hoppertype.ParentResult) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

// Completed parents come with their kind, result and finish time, in the order the child
// named them (not their ids' order), a parent named twice once.
func parentsCompletedInOrder(t *testing.T, b *bundle) {
	p1 := b.parent(t)
	p2 := b.insert(t, inQueue("p-"+newID(t)), withKind("resize"))
	p3 := b.parent(t)
	child := b.insert(t, inQueue("children"), after(p3.ID, p1.ID, p2.ID, p3.ID))
	b.completeWith(t, p2, `{"n":2}`)
	b.clock.Advance(time.Second)
	b.completeWith(t, p1, `{"n":1}`)
	before := b.parents(t, child.ID)
	require.Equal(t, []string{p3.ID, p1.ID, p2.ID}, parentIDs(before))
	require.Empty(t, before[0].Outcome, "p3 has not ended")
	require.Equal(t, hoppertype.StateQueued, before[0].State)
	b.clock.Advance(time.Second)
	b.completeWith(t, p3, `[3]`)

	got := b.parents(t, child.ID)
	require.Equal(t, []string{p3.ID, p1.ID, p2.ID}, parentIDs(got), "the order the child named them")
	for i, want := range []string{`[3]`, `{"n":1}`, `{"n":2}`} {
		require.JSONEq(t, want, string(got[i].Result), "parent %d", i)
		require.Equal(t, hoppertype.ParentCompleted, got[i].Outcome)
		require.Equal(t, hoppertype.StateCompleted, got[i].State)
		require.False(t, got[i].Expired)
		require.Empty(t, got[i].Error)
		sameTime(t, b.get(t, got[i].ID).FinishedAt, got[i].FinishedAt, "finished at")
	}
	require.Equal(t, "resize", got[2].Kind)
	require.Equal(t, defaultKind, got[0].Kind)
	require.True(t, got[0].FinishedAt.After(got[1].FinishedAt))
	var n struct{ N int }
	require.NoError(t, got[2].Decode(&n))
	require.Equal(t, 2, n.N)
	// The child reads them as it runs, under its lease.
	claimed := b.claimOne(t, "children")
	require.Equal(t, child.ID, claimed.ID)
	fenced, err := b.store.JobParents(t.Context(), &store.ParentsParams{ID: child.ID, Token: claimed.Token})
	require.NoError(t, err)
	require.Equal(t, got, fenced.Parents)
	require.Equal(t, len(`[3]`)+len(`{"n":1}`)+len(`{"n":2}`), fenced.ResultBytes)
}

// A failed parent comes with its error, a canceled one with its outcome, a skipped one (its
// own skip policy canceled it) as skipped; none has a result.
func parentsFailedCanceledSkipped(t *testing.T, b *bundle) {
	failed, canceled, grand := b.parent(t), b.parent(t), b.parent(t)
	skipped := b.insert(t, inQueue("mid"), after(grand.ID), onFailure(hoppertype.ParentSkip))
	child := b.insert(t, inQueue("children"), after(failed.ID, canceled.ID, skipped.ID), onFailure(hoppertype.ParentRun))
	claimed := b.claimOne(t, failed.Queue)
	fail := finishing(claimed, hoppertype.StateFailed)
	fail.Error, fail.ErrorCode = "card declined", "card_declined"
	require.NoError(t, b.finish(t, fail))
	_, err := b.store.JobCancel(t.Context(), &store.CancelParams{ID: canceled.ID, Actor: hoppertype.ActorOperator, Reason: "no"})
	require.NoError(t, err)
	b.end(t, grand, hoppertype.StateFailed)
	require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State)

	got := b.parents(t, child.ID)
	require.Equal(t, []string{failed.ID, canceled.ID, skipped.ID}, parentIDs(got))
	require.Equal(t, hoppertype.ParentFailed, got[0].Outcome)
	require.Equal(t, hoppertype.StateFailed, got[0].State)
	require.Equal(t, "card declined", got[0].Error)
	require.Equal(t, hoppertype.ParentCanceled, got[1].Outcome)
	require.Equal(t, hoppertype.StateCanceled, got[1].State)
	require.Equal(t, hoppertype.ParentSkipped, got[2].Outcome)
	require.Equal(t, hoppertype.StateCanceled, got[2].State)
	for _, p := range got {
		require.Nil(t, p.Result)
		require.False(t, p.Expired)
		require.False(t, p.FinishedAt.IsZero())
		require.ErrorIs(t, p.Decode(new(any)), hoppertype.ErrNoResult)
	}
}

// A parent that completed without a result comes without one: no error.
func parentsWithoutResult(t *testing.T, b *bundle) {
	with, without := b.parent(t), b.parent(t)
	child := b.insert(t, inQueue("children"), after(with.ID, without.ID))
	b.completeWith(t, with, `"x"`)
	b.completeWith(t, without, "")
	got := b.parents(t, child.ID)
	require.Equal(t, []string{with.ID, without.ID}, parentIDs(got))
	require.JSONEq(t, `"x"`, string(got[0].Result))
	require.Nil(t, got[1].Result)
	require.Equal(t, hoppertype.ParentCompleted, got[1].Outcome)
	require.False(t, got[1].Expired)
}

// A parent whose retention ran out is returned with its outcome, marked expired, without its
// kind or result: before the sweep (it is gone for readers, contract 12) and after it.
func parentsExpired(t *testing.T, b *bundle) {
	kept, gone := b.parent(t), b.parent(t)
	child := b.insert(t, inQueue("children"), after(gone.ID, kept.ID), onFailure(hoppertype.ParentRun))
	b.completeWith(t, kept, `1`)
	claimed := b.claimOne(t, gone.Queue)
	p := finishing(claimed, hoppertype.StateFailed)
	p.Error, p.ExpiresAt = "boom", b.clock.Now().Add(time.Minute)
	require.NoError(t, b.finish(t, p))
	require.Equal(t, "boom", b.parents(t, child.ID)[0].Error, "not expired yet")

	b.clock.Advance(2 * time.Minute)
	check := func(what string) {
		got := b.parents(t, child.ID)
		require.Equal(t, []string{gone.ID, kept.ID}, parentIDs(got), what)
		require.Equal(t, &hoppertype.ParentResult{ID: gone.ID, Outcome: hoppertype.ParentFailed, Expired: true}, got[0], what)
		require.False(t, got[1].Expired, what)
		require.JSONEq(t, `1`, string(got[1].Result), what)
	}
	check("expired, not swept")
	require.GreaterOrEqual(t, b.sweep(t, 500), 1)
	_, err := b.store.JobGet(t.Context(), gone.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	check("swept")
}

// A parent that failed, was retried in place and completed is seen completed once its
// retention ran out: its dependency rows keep its latest outcome, not the first.
func parentsRetriedThenExpired(t *testing.T, b *bundle) {
	parent := b.parent(t)
	child := b.insert(t, inQueue("children"), after(parent.ID), onFailure(hoppertype.ParentRun))
	b.end(t, parent, hoppertype.StateFailed)
	require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State, "it runs through a failure")
	_, err := b.store.JobRetry(t.Context(), &store.RetryParams{ID: parent.ID, Attempts: 1, By: "op", Actor: hoppertype.ActorOperator})
	require.NoError(t, err)
	p := finishing(b.claimOne(t, parent.Queue), hoppertype.StateCompleted)
	p.ExpiresAt = b.clock.Now().Add(time.Minute)
	require.NoError(t, b.finish(t, p))
	require.Equal(t, hoppertype.ParentCompleted, b.parents(t, child.ID)[0].Outcome, "not expired yet")

	b.clock.Advance(2 * time.Minute)
	want := []*hoppertype.ParentResult{{ID: parent.ID, Outcome: hoppertype.ParentCompleted, Expired: true}}
	require.Equal(t, want, b.parents(t, child.ID), "expired, not swept")
	require.GreaterOrEqual(t, b.sweep(t, 500), 1)
	require.Equal(t, want, b.parents(t, child.ID), "swept")
}

// A job without parents has none; an unknown job is not found.
func parentsNone(t *testing.T, b *bundle) {
	job := b.insert(t)
	require.Empty(t, b.parents(t, job.ID))
	running := b.running(t)
	got, err := b.store.JobParents(t.Context(), &store.ParentsParams{ID: running.ID, Token: running.Token, MaxResultBytes: 10})
	require.NoError(t, err)
	require.Empty(t, got.Parents)
	require.False(t, got.ResultsOmitted)
	_, err = b.store.JobParents(t.Context(), &store.ParentsParams{ID: newID(t), Unfenced: true})
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Unless unfenced, the read is fenced: a stale token (0 included), or a job that is not
// running, is refused as a lost lease; an unknown job as NoSuchJob.
func parentsFenced(t *testing.T, b *bundle) {
	parent := b.parent(t)
	child := b.insert(t, inQueue("children"), after(parent.ID))
	b.completeWith(t, parent, `1`)
	claimed := b.claimOne(t, "children")
	for _, token := range []int64{claimed.Token + 1, claimed.Token - 1, 0} {
		_, err := b.store.JobParents(t.Context(), &store.ParentsParams{ID: child.ID, Token: token})
		require.ErrorIs(t, err, store.ErrLeaseLost)
		require.False(t, errors.Is(err, store.ErrNotFound), "the job exists")
	}
	require.NoError(t, b.finish(t, finishing(claimed, hoppertype.StateCompleted)))
	_, err := b.store.JobParents(t.Context(), &store.ParentsParams{ID: child.ID, Token: claimed.Token})
	require.ErrorIs(t, err, store.ErrLeaseLost, "the attempt ended")
	require.Len(t, b.parents(t, child.ID), 1, "unfenced, an ended job's parents are read")
	_, err = b.store.JobParents(t.Context(), &store.ParentsParams{ID: newID(t), Token: 1})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, err, store.ErrLeaseLost)
}

// MaxResultBytes bounds the results together: over it, every result is left out (the rest
// is read) and the read says so; at it, all are read.
func parentsSizeBound(t *testing.T, b *bundle) {
	p1, p2, p3 := b.parent(t), b.parent(t), b.parent(t)
	child := b.insert(t, inQueue("children"), after(p1.ID, p2.ID, p3.ID), onFailure(hoppertype.ParentRun))
	b.completeWith(t, p1, `"abcdé"`) // 8 bytes: é is two
	b.completeWith(t, p2, `[1,2,3]`) // 7 bytes
	b.end(t, p3, hoppertype.StateFailed)
	read := func(max int) *store.Parents {
		got, err := b.store.JobParents(t.Context(), &store.ParentsParams{ID: child.ID, Unfenced: true, MaxResultBytes: max})
		require.NoError(t, err)
		require.Equal(t, 15, got.ResultBytes)
		require.Equal(t, []string{p1.ID, p2.ID, p3.ID}, parentIDs(got.Parents))
		return got
	}
	over := read(14)
	require.True(t, over.ResultsOmitted)
	for _, p := range over.Parents {
		require.Nil(t, p.Result)
		require.NotEmpty(t, p.Outcome)
		require.NotEmpty(t, p.Kind)
	}
	at := read(15)
	require.False(t, at.ResultsOmitted)
	require.JSONEq(t, `"abcdé"`, string(at.Parents[0].Result))
	require.JSONEq(t, `[1,2,3]`, string(at.Parents[1].Result))
	require.Nil(t, at.Parents[2].Result)
}

// A workflow step's parents come with their step names, so a fan-in tells them apart by name;
// a job outside a workflow has none.
func parentsSteps(t *testing.T, b *bundle) {
	wf := diamond(t, "parent-steps")
	b.insertWorkflow(t, wf)
	b.completeWith(t, b.step(t, wf, "a"), `"a"`)
	b.completeWith(t, b.step(t, wf, "c"), `"c"`)
	b.completeWith(t, b.step(t, wf, "b"), `"b"`)
	got := b.parents(t, b.step(t, wf, "d").ID)
	require.Len(t, got, 2)
	for i, name := range []string{"b", "c"} {
		require.Equal(t, name, got[i].Step, "the order d named them")
		require.JSONEq(t, `"`+name+`"`, string(got[i].Result))
	}
	require.Equal(t, "a", b.parents(t, b.step(t, wf, "b").ID)[0].Step)

	plain := b.parent(t)
	child := b.insert(t, inQueue("children"), after(plain.ID))
	require.Empty(t, b.parents(t, child.ID)[0].Step, "a job outside a workflow")
}
