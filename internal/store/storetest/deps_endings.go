package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Each way a parent fails (or is canceled) ends it for its children, who follow their
// policies in the transaction of that ending: a suspension past its deadline, a cancel of
// the running parent, a rescue out of rescues.

// family is a parent's children, one per policy, and a child of the skipped one.
type family struct {
	cancel, run, skip, grandchild *hoppertype.JobRow
}

// children enqueues a family under parent.
func (b *bundle) children(t *testing.T, parent string) *family {
	t.Helper()
	f := &family{
		cancel: b.insert(t, inQueue("children"), after(parent)),
		run:    b.insert(t, inQueue("children"), after(parent), onFailure(hoppertype.ParentRun)),
		skip:   b.insert(t, inQueue("children"), after(parent), onFailure(hoppertype.ParentSkip)),
	}
	f.grandchild = b.insert(t, inQueue("children"), after(f.skip.ID))
	for _, j := range []*hoppertype.JobRow{f.cancel, f.run, f.skip, f.grandchild} {
		require.Equal(t, hoppertype.StateWaiting, j.State)
	}
	return f
}

// requireFollowed requires that the family followed its policies after parent ended with
// outcome, ended by actor.
func (b *bundle) requireFollowed(t *testing.T, f *family, parent string, outcome store.ParentOutcome, actor hoppertype.Actor) {
	t.Helper()
	reason := "parent " + parent + " " + string(outcome)
	got := b.get(t, f.cancel.ID)
	require.Equal(t, hoppertype.StateCanceled, got.State)
	ev := b.lastEvent(t, f.cancel.ID)
	require.Equal(t, reason, ev.Reason)
	require.Equal(t, actor, ev.Actor)
	require.Equal(t, hoppertype.StateCanceled, b.get(t, f.skip.ID).State)
	require.Equal(t, "skipped: "+reason, b.lastEvent(t, f.skip.ID).Reason)
	require.Equal(t, hoppertype.StateQueued, b.get(t, f.run.ID).State, "run runs after a failed parent")
	require.Contains(t, b.lastEvent(t, f.run.ID).Reason, parent)
	require.Equal(t, hoppertype.StateQueued, b.get(t, f.grandchild.ID).State, "a skip counts as succeeded")
}

// A parent still suspended at its deadline fails (the leader's JobFailOverdue): its children
// follow their policies.
func depsDeadlineFailsParent(t *testing.T, b *bundle) {
	parent := b.suspended(t, b.clock.Now().Add(time.Minute))
	f := b.children(t, parent.ID)
	b.clock.Advance(2 * time.Minute)
	ids, err := suspendStore(t, b).JobFailOverdue(t.Context(), &store.OverdueParams{Limit: 10,
		ExpiresAt: b.clock.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, []string{parent.ID}, ids)
	b.requireFollowed(t, f, parent.ID, store.ParentFailed, hoppertype.ActorLeader)
}

// A running parent canceled: its children follow their policies at once; the worker that
// ran it can no longer end it.
func depsRunningParentCanceled(t *testing.T, b *bundle) {
	parent := b.running(t)
	f := b.children(t, parent.ID)
	got := b.cancel(t, parent.ID)
	require.Equal(t, hoppertype.StateCanceled, got.State)
	b.requireFollowed(t, f, parent.ID, store.ParentCanceled, hoppertype.ActorOperator)
	require.ErrorIs(t, b.finish(t, finishing(parent, hoppertype.StateCompleted)), store.ErrLeaseLost)
	require.Equal(t, hoppertype.StateCanceled, b.get(t, f.cancel.ID).State, "the stale finish changed nothing")
	require.Equal(t, 1, b.moves(t, f.run.ID, hoppertype.StateWaiting, hoppertype.StateQueued))
}

// A parent rescued out of rescues fails with outcome worker_lost: its children follow their
// policies, in the rescue's transaction, by the leader.
func depsRescuedOutParent(t *testing.T, b *bundle) {
	parent := b.insert(t, inQueue("lost"), func(p *store.InsertParams) { p.MaxRescues = 1 })
	f := b.children(t, parent.ID)
	for range 2 {
		b.claimOne(t, "lost")
		b.clock.Advance(defaultLease + time.Second)
		b.rescue(t)
	}
	got := b.get(t, parent.ID)
	require.Equal(t, hoppertype.StateFailed, got.State)
	as := b.attempts(t, parent.ID)
	require.Equal(t, hoppertype.OutcomeWorkerLost, as[len(as)-1].Outcome)
	b.requireFollowed(t, f, parent.ID, store.ParentFailed, hoppertype.ActorLeader)
}
