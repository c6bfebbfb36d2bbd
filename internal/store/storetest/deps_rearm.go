package storetest

import (
	"sync"
	"testing"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// retryInPlace retries failed job id in place, by an operator.
func (b *bundle) retryInPlace(t *testing.T, id string) {
	t.Helper()
	_, err := b.retry(t, store.RetryParams{ID: id})
	require.NoError(t, err)
}

// A failed parent retried in place re-arms the children its failure canceled by their policy
// cancel, and the jobs their cancel cascaded to: back to waiting, so the workflow goes on. A
// child a user canceled, one its skip policy canceled, one a parent's failure let run, and one
// that another failed parent also cancels are left as they are; the other parent's retry
// re-arms the last (docs/workflows.md#retrying-a-failed-parent).
func depsRetryRearms(t *testing.T, b *bundle) {
	p, q := b.parent(t), b.parent(t)
	child := b.insert(t, inQueue("children"), after(p.ID))
	grand := b.insert(t, inQueue("grand"), after(child.ID))
	runs := b.insert(t, inQueue("runs"), after(p.ID), onFailure(hoppertype.ParentRun))
	skip := b.insert(t, inQueue("skip"), after(p.ID), onFailure(hoppertype.ParentSkip))
	user := b.insert(t, inQueue("user"), after(p.ID))
	b.cancel(t, user.ID)
	both := b.insert(t, inQueue("both"), after(p.ID, q.ID))
	b.end(t, p, hoppertype.StateFailed)
	b.end(t, q, hoppertype.StateFailed)
	late := b.insert(t, inQueue("late"), after(p.ID)) // canceled by its insert
	for _, j := range []*hoppertype.JobRow{child, grand, skip, user, both, late} {
		require.Equal(t, hoppertype.StateCanceled, b.get(t, j.ID).State)
	}

	b.retryInPlace(t, p.ID)
	for _, j := range []*hoppertype.JobRow{child, late} {
		got := b.get(t, j.ID)
		require.Equal(t, hoppertype.StateWaiting, got.State)
		require.True(t, got.FinishedAt.IsZero())
		ev := b.lastEvent(t, j.ID)
		require.Equal(t, hoppertype.StateCanceled, ev.From)
		require.Equal(t, hoppertype.StateWaiting, ev.To)
		require.Equal(t, "re-armed: parent "+p.ID+" retried", ev.Reason)
		require.Equal(t, hoppertype.ActorOperator, ev.Actor)
	}
	require.Equal(t, hoppertype.StateWaiting, b.get(t, grand.ID).State)
	require.Equal(t, "re-armed: parent "+child.ID+" waits again", b.lastEvent(t, grand.ID).Reason)
	for _, j := range []*hoppertype.JobRow{skip, user, both} {
		require.Equal(t, hoppertype.StateCanceled, b.get(t, j.ID).State, "left canceled")
	}
	require.Equal(t, hoppertype.StateQueued, b.get(t, runs.ID).State)

	// The retried parent's next ending counts down the re-armed children once.
	b.end(t, p, hoppertype.StateCompleted)
	for _, j := range []*hoppertype.JobRow{child, late} {
		require.Equal(t, hoppertype.StateQueued, b.get(t, j.ID).State)
	}
	require.Equal(t, hoppertype.StateWaiting, b.get(t, grand.ID).State, "its parent has not run")
	require.Equal(t, 1, b.moves(t, runs.ID, hoppertype.StateWaiting, hoppertype.StateQueued), "runs ran once")
	b.end(t, b.get(t, child.ID), hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, grand.ID).State)

	// The other failed parent's retry re-arms the child both failures canceled.
	b.retryInPlace(t, q.ID)
	require.Equal(t, hoppertype.StateWaiting, b.get(t, both.ID).State)
	b.end(t, q, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, both.ID).State)
}

// A parent that fails again after its retry cancels its re-armed children again, and a
// second retry re-arms them again.
func depsRetryRearmsAgain(t *testing.T, b *bundle) {
	p := b.parent(t)
	child := b.insert(t, inQueue("children"), after(p.ID))
	for range 2 {
		b.end(t, p, hoppertype.StateFailed)
		require.Equal(t, hoppertype.StateCanceled, b.get(t, child.ID).State)
		b.retryInPlace(t, p.ID)
		require.Equal(t, hoppertype.StateWaiting, b.get(t, child.ID).State)
	}
	b.end(t, p, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State)
	require.Equal(t, 2, b.moves(t, child.ID, hoppertype.StateCanceled, hoppertype.StateWaiting))
}

// A re-arm racing the ending of the child's other parent: whichever commits first, the child
// counts that ending once, and runs once the retried parent has ended.
func depsRearmRacesEnding(t *testing.T, b *bundle) {
	for round := range 10 {
		p, other := b.parent(t), b.running(t)
		queue := "children-" + newID(t)
		child := b.insert(t, inQueue(queue), after(p.ID, other.ID))
		b.end(t, p, hoppertype.StateFailed)
		require.Equal(t, hoppertype.StateCanceled, b.get(t, child.ID).State)
		var wg sync.WaitGroup
		var retryErr, finErr error
		wg.Go(func() {
			_, retryErr = b.retry(t, store.RetryParams{ID: p.ID})
		})
		wg.Go(func() {
			res, err := b.store.JobFinishMany(t.Context(), []*store.FinishParams{finishing(other, hoppertype.StateCompleted)})
			if err == nil {
				err = res[0]
			}
			finErr = err
		})
		wg.Wait()
		require.NoError(t, retryErr)
		require.NoError(t, finErr)
		require.Equal(t, hoppertype.StateWaiting, b.get(t, child.ID).State, "round %d", round)
		b.end(t, p, hoppertype.StateCompleted)
		require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State, "round %d: both parents ended", round)
	}
}
