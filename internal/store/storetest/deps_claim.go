package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// A batch of endings may claim what it released, in its own transaction (JobFinishClaim,
// store.ReleaseClaim): the released children of the queues the caller works, no more of a
// queue than were released there and its bound, and only what a claim of that queue could take
// (paused queues, caps, disabled kinds and the kinds asked for apply).
func testReleaseClaim(t *testing.T, opener Opener) {
	parallel(t, opener, "ClaimsTheReleased", releaseClaimTakesReleased)
	parallel(t, opener, "NothingReleasedNothingClaimed", releaseClaimNeedsRelease)
	parallel(t, opener, "Bounded", releaseClaimBounded)
	parallel(t, opener, "Rules", releaseClaimRules)
}

const releaseWorker = "worker-r"

// endClaiming ends parent (claimed alone in its queue) completed with a JobFinishClaim of
// queues, and returns the claim.
func (b *bundle) endClaiming(t *testing.T, parent *hoppertype.JobRow, queues map[string]int, kinds ...string) (*store.ReleaseClaim, *store.FinishParams) {
	t.Helper()
	claimed := b.claimOne(t, parent.Queue)
	require.Equal(t, parent.ID, claimed.ID)
	p := finishing(claimed, hoppertype.StateCompleted)
	p.Job = claimed
	rc := &store.ReleaseClaim{Queues: queues, Kinds: kinds, WorkerID: releaseWorker, LeaseDuration: time.Minute}
	errs, err := b.store.JobFinishClaim(t.Context(), []*store.FinishParams{p}, rc)
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.NoError(t, rc.Err)
	require.Equal(t, hoppertype.StateCompleted, b.get(t, parent.ID).State, "the ending is written")
	return rc, p
}

func releaseClaimTakesReleased(t *testing.T, b *bundle) {
	p1, p2 := b.parent(t), b.parent(t)
	child := b.insert(t, inQueue("children"), after(p1.ID, p2.ID))
	elsewhere := b.insert(t, inQueue("elsewhere"))
	queues := map[string]int{"children": 10, "elsewhere": 10}
	rc, _ := b.endClaiming(t, p1, queues)
	require.Empty(t, rc.Jobs, "the child still waits for p2")
	require.Equal(t, hoppertype.StateWaiting, b.get(t, child.ID).State)

	rc, p := b.endClaiming(t, p2, queues)
	require.Equal(t, []string{child.ID}, ids(rc.Jobs))
	got := b.get(t, child.ID)
	require.Equal(t, hoppertype.StateRunning, got.State)
	require.Equal(t, releaseWorker, got.WorkerID)
	require.Equal(t, 1, got.Attempt)
	require.Equal(t, got.Token, rc.Jobs[0].Token)
	sameTime(t, b.clock.Now().Add(time.Minute), got.LeaseExpiresAt, "claimed under the claim's lease")
	require.Equal(t, 1, b.moves(t, child.ID, hoppertype.StateWaiting, hoppertype.StateQueued), "released once")
	require.Equal(t, 1, b.moves(t, child.ID, hoppertype.StateQueued, hoppertype.StateRunning), "claimed once")
	require.NotContains(t, p.Released, "children", "nothing is left to wake the queue for")
	require.Equal(t, hoppertype.StateQueued, b.get(t, elsewhere.ID).State, "a queue with nothing released is not claimed from")

	// The claimed attempt is fenced as any other: its token ends it, and no one else's does.
	require.NoError(t, b.finish(t, finishing(rc.Jobs[0], hoppertype.StateCompleted)))
	require.Equal(t, hoppertype.StateCompleted, b.get(t, child.ID).State)
}

// An ending that releases nothing claims nothing, whatever waits in the queues; so does a
// JobFinishMany, and an ending whose claim names no queue.
func releaseClaimNeedsRelease(t *testing.T, b *bundle) {
	queued := b.insert(t, inQueue("children"))
	p1, p2 := b.parent(t), b.parent(t)
	child := b.insert(t, inQueue("children"), after(p1.ID, p2.ID))
	rc, _ := b.endClaiming(t, p1, map[string]int{"children": 10})
	require.Empty(t, rc.Jobs)
	rc, _ = b.endClaiming(t, p2, map[string]int{"other": 10})
	require.Empty(t, rc.Jobs, "the children's queue is not the caller's")
	require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State)
	require.Equal(t, hoppertype.StateQueued, b.get(t, queued.ID).State)
}

// A queue gives at most as many jobs as the batch released there, and at most its bound. It
// gives them in claim order: the released child may wait behind older jobs of its queue.
func releaseClaimBounded(t *testing.T, b *bundle) {
	backlog := []*hoppertype.JobRow{b.insert(t, inQueue("children")), b.insert(t, inQueue("children"))}
	parent := b.parent(t)
	var children []*hoppertype.JobRow
	for range 3 {
		children = append(children, b.insert(t, inQueue("children"), after(parent.ID)))
	}
	rc, p := b.endClaiming(t, parent, map[string]int{"children": 2})
	require.Len(t, rc.Jobs, 2, "the queue's bound")
	require.Equal(t, ids(backlog), ids(rc.Jobs), "in claim order: oldest first")
	for _, c := range children {
		require.Equal(t, hoppertype.StateQueued, b.get(t, c.ID).State)
	}
	if p.Released != nil {
		require.Contains(t, p.Released, "children", "released jobs are left to claim: the queue is woken")
	}

	// One released, five queued: one claimed.
	parent = b.parent(t)
	b.insert(t, inQueue("children"), after(parent.ID))
	rc, _ = b.endClaiming(t, parent, map[string]int{"children": 100})
	require.Len(t, rc.Jobs, 1, "no more than the ending released")
	require.Equal(t, children[0].ID, rc.Jobs[0].ID)
}

// The claim is a claim of the queue: it takes nothing from a paused queue, from a capped one
// (all of it counts as claimed ahead, which a cap never holds a slot for), nor jobs of a kind
// the caller does not work or a disabled kind.
func releaseClaimRules(t *testing.T, b *bundle) {
	ctx := t.Context()
	queues := map[string]int{"paused": 10, "capped": 10, "kinds": 10, "disabled": 10}
	require.NoError(t, b.store.QueueSetPaused(ctx, "paused", true))
	require.NoError(t, b.store.LimitSet(ctx, &store.LimitParams{Scope: store.LimitQueue, Name: "capped", MaxRunning: 5}))
	require.NoError(t, b.store.KindSetDisabled(ctx, "off", true))
	parent := b.parent(t)
	var held []*hoppertype.JobRow
	for _, q := range []string{"paused", "capped"} {
		held = append(held, b.insert(t, inQueue(q), after(parent.ID)))
	}
	held = append(held, b.insert(t, inQueue("kinds"), withKind("other"), after(parent.ID)))
	held = append(held, b.insert(t, inQueue("disabled"), withKind("off"), after(parent.ID)))
	rc, _ := b.endClaiming(t, parent, queues, defaultKind, "off")
	require.Empty(t, rc.Jobs)
	for _, c := range held {
		require.Equal(t, hoppertype.StateQueued, b.get(t, c.ID).State, "queue %s", c.Queue)
	}
	// Without the rules the same claim takes them.
	require.NoError(t, b.store.QueueSetPaused(ctx, "paused", false))
	require.NoError(t, b.store.LimitSet(ctx, &store.LimitParams{Scope: store.LimitQueue, Name: "capped", MaxRunning: 0}))
	require.NoError(t, b.store.KindSetDisabled(ctx, "off", false))
	parent = b.parent(t)
	var free []*hoppertype.JobRow
	for _, q := range []string{"paused", "capped"} {
		free = append(free, b.insert(t, inQueue(q), after(parent.ID)))
	}
	free = append(free, b.insert(t, inQueue("disabled"), withKind("off"), after(parent.ID)))
	rc, _ = b.endClaiming(t, parent, queues, defaultKind, "off")
	require.ElementsMatch(t, []string{held[0].ID, held[1].ID, held[3].ID}, ids(rc.Jobs),
		"the jobs left queued before are older: each queue gives those first")
	for _, c := range free {
		require.Equal(t, hoppertype.StateQueued, b.get(t, c.ID).State)
	}
}
