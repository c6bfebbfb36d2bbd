package storetest

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// A parent the store did not insert (its idempotency key named a job already there, or an
// earlier item of the call, or it merged into a waiting job) stands for that job: a child of
// the same call waits for it, and counts it as ended, with its outcome, when it has ended.
func depsDedupedParent(t *testing.T, b *bundle) {
	t.Run("KeyNamesALiveJob", func(t *testing.T) {
		existing := b.insert(t, inQueue("p-key-live"), withKey("k-live", time.Hour))
		parent := params(t, inQueue("p-key-live"), withKey("k-live", time.Hour))
		child := params(t, inQueue("children-key-live"), after(parent.ID))
		res := b.insertMany(t, parent, child)
		require.True(t, res[0].Existing)
		require.Equal(t, existing.ID, res[0].Job.ID)
		require.Equal(t, hoppertype.StateWaiting, res[1].Job.State)
		b.end(t, existing, hoppertype.StateCompleted)
		got := b.get(t, child.ID)
		require.Equal(t, hoppertype.StateQueued, got.State)
		require.Contains(t, b.lastEvent(t, child.ID).Reason, existing.ID, "it waited for the job the key named")
	})
	t.Run("KeyNamesAnEndedJob", func(t *testing.T) {
		done := b.insert(t, inQueue("p-key-done"), withKey("k-done", time.Hour))
		b.end(t, done, hoppertype.StateCompleted)
		failed := b.insert(t, inQueue("p-key-failed"), withKey("k-failed", time.Hour))
		b.end(t, failed, hoppertype.StateFailed)

		p1 := params(t, inQueue("p-key-done"), withKey("k-done", time.Hour))
		released := params(t, inQueue("children-key-done"), after(p1.ID))
		res := b.insertMany(t, p1, released)
		require.Equal(t, hoppertype.StateQueued, res[1].Job.State, "its parent completed")

		p2 := params(t, inQueue("p-key-failed"), withKey("k-failed", time.Hour))
		canceled := params(t, inQueue("children-key-failed"), after(p2.ID))
		res = b.insertMany(t, p2, canceled)
		require.Equal(t, hoppertype.StateCanceled, res[1].Job.State, "its parent failed")
		require.Equal(t, "parent "+failed.ID+" failed", b.lastEvent(t, canceled.ID).Reason)
	})
	t.Run("KeyOfAnEarlierItem", func(t *testing.T) {
		first := params(t, inQueue("p-key-batch"), withKey("k-batch", time.Hour))
		second := params(t, inQueue("p-key-batch"), withKey("k-batch", time.Hour))
		child := params(t, inQueue("children-key-batch"), after(second.ID, first.ID))
		res := b.insertMany(t, first, second, child)
		require.Equal(t, first.ID, res[1].Job.ID)
		require.Equal(t, hoppertype.StateWaiting, res[2].Job.State)
		b.end(t, res[0].Job, hoppertype.StateCompleted)
		require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State, "one parent: the two names are one job")
	})
	t.Run("MergedIntoAWaitingJob", func(t *testing.T) {
		waiting := b.insert(t, inQueue("p-merge"), withMerge("m-deps", hoppertype.MergeReplace))
		parent := params(t, inQueue("p-merge"), withMerge("m-deps", hoppertype.MergeReplace), withArgs(`{"n":2}`))
		child := params(t, inQueue("children-merge"), after(parent.ID), onFailure(hoppertype.ParentSkip))
		res := b.insertMany(t, parent, child)
		require.True(t, res[0].Merged)
		require.Equal(t, waiting.ID, res[0].Job.ID)
		require.Equal(t, hoppertype.StateWaiting, res[1].Job.State)
		b.end(t, waiting, hoppertype.StateFailed)
		require.Equal(t, "skipped: parent "+waiting.ID+" failed", b.lastEvent(t, child.ID).Reason)
	})
}

// A child that names a job a compaction replaced waits for the job it was compacted into,
// through later compactions too, and whether the replaced job is still kept or swept: the
// replaced job's cancel is no failure of the work it stood for.
func depsCompactedParent(t *testing.T, b *bundle) {
	queue := "p-compact"
	g1 := b.insert(t, inQueue(queue), withGroup("wf"))
	g2 := b.insert(t, inQueue(queue), withGroup("wf"))
	first := b.compactOne(t, defaultKind, hoppertype.MergeKeep, g1.ID, g2.ID)
	g3 := b.insert(t, inQueue(queue), withGroup("wf"))
	second := b.compactOne(t, defaultKind, hoppertype.MergeKeep, first.ID, g3.ID)

	child := b.insert(t, inQueue("children"), after(g1.ID, g3.ID))
	require.Equal(t, hoppertype.StateWaiting, child.State, "not canceled by the compactions' cancel")
	runs := b.insert(t, inQueue("runs"), after(g2.ID), onFailure(hoppertype.ParentRun))
	require.Equal(t, hoppertype.StateWaiting, runs.State, "not released by it either")

	// A job with children is not compacted: the group has one job left that may be.
	b.insert(t, inQueue(queue), withGroup("wf"))
	require.Empty(t, b.compact(t, defaultKind, hoppertype.MergeKeep, 0).Groups)

	// The replaced jobs are swept once their retention has passed; their lineage stays.
	b.clock.Advance(2 * time.Hour)
	require.Positive(t, b.sweep(t, 500))
	_, err := b.store.JobGet(t.Context(), g1.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	swept := b.insert(t, inQueue("swept"), after(g1.ID))
	require.Equal(t, hoppertype.StateWaiting, swept.State)

	claimed := b.claimOne(t, queue)
	require.Equal(t, second.ID, claimed.ID, "the compactions left one job to run, first")
	require.Equal(t, hoppertype.StateWaiting, b.get(t, child.ID).State, "its parent runs")
	require.NoError(t, b.finish(t, finishing(claimed, hoppertype.StateCompleted)))
	for _, id := range []string{child.ID, runs.ID, swept.ID} {
		require.Equal(t, hoppertype.StateQueued, b.get(t, id).State, id)
		require.Contains(t, b.lastEvent(t, id).Reason, second.ID)
	}
}

// Parents of shared children ended at once by several callers, each in batches of its own
// order: no ending fails (on PostgreSQL the endings lock the children in one order, so two
// batches cannot deadlock), and each child ends as its parents say, once. Some parents fail:
// children with policy cancel are canceled, with their own children after them; the others
// run once every parent has ended.
func depsSharedChildrenEndings(t *testing.T, b *bundle) {
	const parents, children, callers, batch = 24, 12, 4, 3
	for round := range 6 {
		rng := rand.New(rand.NewPCG(uint64(round), 33))
		ps := make([]*hoppertype.JobRow, parents)
		failed := make(map[string]bool)
		for i := range ps {
			ps[i] = b.running(t)
			failed[ps[i].ID] = rng.IntN(6) == 0
		}
		type kid struct {
			job      *store.InsertParams
			canceled bool
		}
		var kids []*kid
		queue := "children-" + newID(t)
		for range children {
			var names []string
			anyFailed := false
			for _, p := range ps {
				if rng.IntN(2) == 0 {
					names = append(names, p.ID)
					anyFailed = anyFailed || failed[p.ID]
				}
			}
			if len(names) == 0 {
				names, anyFailed = []string{ps[0].ID}, failed[ps[0].ID]
			}
			policy := hoppertype.ParentRun
			if rng.IntN(2) == 0 {
				policy = hoppertype.ParentCancel
			}
			k := &kid{job: params(t, inQueue(queue), after(names...), onFailure(policy))}
			k.canceled = anyFailed && policy == hoppertype.ParentCancel
			kids = append(kids, k)
		}
		for _, k := range kids {
			b.insertMany(t, k.job)
		}
		// Grandchildren of two children each: canceled when one of them is.
		var grand []*kid
		for i := range children {
			j := (i + 1 + rng.IntN(children-1)) % children
			g := &kid{job: params(t, inQueue(queue), after(kids[i].job.ID, kids[j].job.ID))}
			g.canceled = kids[i].canceled || kids[j].canceled
			b.insertMany(t, g.job)
			grand = append(grand, g)
		}
		order := rng.Perm(parents)
		var wg sync.WaitGroup
		errs := make([]error, callers)
		for c := range callers {
			mine := order[c*parents/callers : (c+1)*parents/callers]
			wg.Go(func() {
				for n := 0; n < len(mine) && errs[c] == nil; n += batch {
					var fin []*store.FinishParams
					for _, i := range mine[n:min(n+batch, len(mine))] {
						state := hoppertype.StateCompleted
						if failed[ps[i].ID] {
							state = hoppertype.StateFailed
						}
						fin = append(fin, finishing(ps[i], state))
					}
					res, err := b.store.JobFinishMany(t.Context(), fin)
					for _, e := range res {
						err = errors.Join(err, e)
					}
					errs[c] = err
				}
			})
		}
		wg.Wait()
		for c, err := range errs {
			require.NoError(t, err, "round %d, caller %d", round, c)
		}
		for i, k := range append(kids, grand...) {
			want := hoppertype.StateQueued
			switch {
			case k.canceled:
				want = hoppertype.StateCanceled
			case i >= children:
				want = hoppertype.StateWaiting // their parents, the children, have not run
			}
			require.Equal(t, want, b.get(t, k.job.ID).State, "round %d, job %d", round, i)
			if want == hoppertype.StateQueued {
				require.Equal(t, 1, b.moves(t, k.job.ID, hoppertype.StateWaiting, hoppertype.StateQueued))
			}
		}
	}
}
