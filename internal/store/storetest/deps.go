package storetest

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Dependencies (contract 19, store/deps.go): a child waits until its parents have ended and
// is released exactly once, in the transaction of its last parent's ending, or follows its
// failure policy.
func testDeps(t *testing.T, opener Opener) {
	parallel(t, opener, "WaitingNotClaimable", depsWaitingNotClaimable)
	parallel(t, opener, "ReleasedOnLastParent", depsReleasedOnLastParent)
	parallel(t, opener, "ReleasedToScheduled", depsReleasedToScheduled)
	parallel(t, opener, "PolicyCancelCascades", depsPolicyCancelCascades)
	parallel(t, opener, "PolicyRun", depsPolicyRun)
	parallel(t, opener, "PolicySkip", depsPolicySkip)
	parallel(t, opener, "CancelWaiting", depsCancelWaiting)
	parallel(t, opener, "EndedParents", depsEndedParents)
	parallel(t, opener, "UnknownParent", depsUnknownParent)
	parallel(t, opener, "SameBatch", depsSameBatch)
	parallel(t, opener, "DedupedParent", depsDedupedParent)
	parallel(t, opener, "CompactedParent", depsCompactedParent)
	parallel(t, opener, "RetryIsNoEnding", depsRetryIsNoEnding)
	parallel(t, opener, "RetriedParentCountsOnce", depsRetriedParentCountsOnce)
	parallel(t, opener, "RetryRearms", depsRetryRearms)
	parallel(t, opener, "RetryRearmsAgain", depsRetryRearmsAgain)
	parallel(t, opener, "RearmRacesEnding", depsRearmRacesEnding)
	parallel(t, opener, "RescueFailsParent", depsRescueFailsParent)
	parallel(t, opener, "RescuedOutParent", depsRescuedOutParent)
	parallel(t, opener, "DeadlineFailsParent", depsDeadlineFailsParent)
	parallel(t, opener, "RunningParentCanceled", depsRunningParentCanceled)
	parallel(t, opener, "EndingsWithClaimedRows", depsEndingsWithClaimedRows)
	parallel(t, opener, "ConcurrentEndings", depsConcurrentEndings)
	parallel(t, opener, "SharedChildrenEndings", depsSharedChildrenEndings)
	parallel(t, opener, "InsertRacesEnding", depsInsertRacesEnding)
	parallel(t, opener, "FanIn", depsFanIn)
	parallel(t, opener, "LongChain", depsLongChain)
}

// scale is n, or a twentieth of it under the race detector (raceDetector): the cases of 10,000
// jobs took 5–6 minutes each on SQLite with it (a fifth of them 1.5 minutes on a loaded
// machine), the longest part of CI; without it (`go test ./internal/store/...`, and CI's run of
// them without -race) they run at full size.
func scale(n int) int {
	if raceDetector {
		return n / 20
	}
	return n
}

func after(ids ...string) option { return func(p *store.InsertParams) { p.After = ids } }

func onFailure(policy hoppertype.ParentPolicy) option {
	return func(p *store.InsertParams) { p.OnParentFailure = policy }
}

// lastEvent is the newest event of a job.
func (b *bundle) lastEvent(t *testing.T, id string) *hoppertype.Event {
	t.Helper()
	evs := b.events(t, id)
	require.NotEmpty(t, evs)
	return evs[len(evs)-1]
}

// moves counts the events of job id from one state to another.
func (b *bundle) moves(t *testing.T, id string, from, to hoppertype.JobState) int {
	t.Helper()
	n := 0
	for _, ev := range b.events(t, id) {
		if ev.From == from && ev.To == to {
			n++
		}
	}
	return n
}

// end claims job (alone in its queue) and ends its attempt in state.
func (b *bundle) end(t *testing.T, job *hoppertype.JobRow, state hoppertype.JobState) {
	t.Helper()
	claimed := b.claimOne(t, job.Queue)
	require.Equal(t, job.ID, claimed.ID)
	require.NoError(t, b.finish(t, finishing(claimed, state)))
}

// parent inserts a job alone in a queue of its own.
func (b *bundle) parent(t *testing.T) *hoppertype.JobRow {
	t.Helper()
	return b.insert(t, inQueue("p-"+newID(t)))
}

func depsWaitingNotClaimable(t *testing.T, b *bundle) {
	parent := b.parent(t)
	child := b.insert(t, inQueue("children"), after(parent.ID))
	require.Equal(t, hoppertype.StateWaiting, child.State)
	require.Equal(t, hoppertype.StateWaiting, b.get(t, child.ID).State)
	require.Empty(t, b.claim(t, "children", 10), "a waiting job is not claimable")
	listed := b.listAll(t, store.ListParams{States: []hoppertype.JobState{hoppertype.StateWaiting}})
	require.Equal(t, []string{child.ID}, ids(listed))
	counts, err := b.store.JobCounts(t.Context())
	require.NoError(t, err)
	var waiting int64
	for _, c := range counts {
		if c.Queue == "children" {
			require.Equal(t, hoppertype.StateWaiting, c.State)
			waiting += c.Count
		}
	}
	require.EqualValues(t, 1, waiting)
	ev := b.lastEvent(t, child.ID)
	require.Equal(t, hoppertype.JobState(""), ev.From)
	require.Equal(t, hoppertype.StateWaiting, ev.To)
}

func depsReleasedOnLastParent(t *testing.T, b *bundle) {
	p1, p2 := b.parent(t), b.parent(t)
	child := b.insert(t, inQueue("children"), after(p1.ID, p2.ID, p1.ID))
	b.end(t, p1, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateWaiting, b.get(t, child.ID).State, "one parent still runs")
	b.clock.Advance(time.Minute)
	b.end(t, p2, hoppertype.StateCompleted)
	got := b.get(t, child.ID)
	require.Equal(t, hoppertype.StateQueued, got.State)
	sameTime(t, b.clock.Now(), got.RunAt, "a released job is due from its release")
	ev := b.lastEvent(t, child.ID)
	require.Equal(t, hoppertype.StateWaiting, ev.From)
	require.Equal(t, hoppertype.StateQueued, ev.To)
	require.Equal(t, hoppertype.ActorWorker, ev.Actor)
	require.Contains(t, ev.Reason, "parents ended")
	require.Contains(t, ev.Reason, p2.ID, "the history names the last parent")
	require.Equal(t, child.ID, b.claimOne(t, "children").ID)
	require.Equal(t, 1, b.moves(t, child.ID, hoppertype.StateWaiting, hoppertype.StateQueued))
}

func depsReleasedToScheduled(t *testing.T, b *bundle) {
	parent := b.parent(t)
	later := b.clock.Now().Add(time.Hour)
	child := b.insert(t, inQueue("children"), after(parent.ID), withRunAt(later))
	require.Equal(t, hoppertype.StateWaiting, child.State)
	b.end(t, parent, hoppertype.StateCompleted)
	got := b.get(t, child.ID)
	require.Equal(t, hoppertype.StateScheduled, got.State)
	sameTime(t, later, got.RunAt, "run_at kept")
}

// The default policy cancels the child and, in the same transaction, its descendants, down a
// chain.
func depsPolicyCancelCascades(t *testing.T, b *bundle) {
	parent := b.parent(t)
	chain := []*hoppertype.JobRow{b.insert(t, inQueue("chain"), after(parent.ID))}
	for range 30 {
		chain = append(chain, b.insert(t, inQueue("chain"), after(chain[len(chain)-1].ID)))
	}
	b.end(t, parent, hoppertype.StateFailed)
	for i, job := range chain {
		got := b.get(t, job.ID)
		require.Equal(t, hoppertype.StateCanceled, got.State, "link %d", i)
		require.False(t, got.FinishedAt.IsZero())
		ev := b.lastEvent(t, job.ID)
		require.Equal(t, hoppertype.StateWaiting, ev.From)
		if i == 0 {
			require.Equal(t, "parent "+parent.ID+" failed", ev.Reason)
		} else {
			require.Equal(t, "parent "+chain[i-1].ID+" canceled", ev.Reason)
		}
	}
	require.Empty(t, b.claim(t, "chain", 10))
}

func depsPolicyRun(t *testing.T, b *bundle) {
	p1, p2 := b.parent(t), b.parent(t)
	child := b.insert(t, inQueue("children"), after(p1.ID, p2.ID), onFailure(hoppertype.ParentRun))
	b.end(t, p1, hoppertype.StateFailed)
	require.Equal(t, hoppertype.StateWaiting, b.get(t, child.ID).State, "run waits for every parent")
	_, err := b.store.JobCancel(t.Context(), &store.CancelParams{ID: p2.ID, Actor: hoppertype.ActorOperator, Reason: "no"})
	require.NoError(t, err)
	require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State)
	require.Contains(t, b.lastEvent(t, child.ID).Reason, p2.ID)
}

// A parent that failed, was retried in place and ended again counts down its children once:
// a child still waiting for another parent keeps waiting for it.
func depsRetriedParentCountsOnce(t *testing.T, b *bundle) {
	p1, p2 := b.parent(t), b.parent(t)
	child := b.insert(t, inQueue("children"), after(p1.ID, p2.ID), onFailure(hoppertype.ParentRun))
	b.end(t, p1, hoppertype.StateFailed)
	_, err := b.store.JobRetry(t.Context(), &store.RetryParams{ID: p1.ID, Attempts: 1, By: "op", Actor: hoppertype.ActorOperator})
	require.NoError(t, err)
	b.end(t, p1, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateWaiting, b.get(t, child.ID).State, "p2 has not ended")
	b.end(t, p2, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State)
}

// A skipped child ends canceled but counts as succeeded for its own children.
func depsPolicySkip(t *testing.T, b *bundle) {
	parent := b.parent(t)
	skipped := b.insert(t, inQueue("mid"), after(parent.ID), onFailure(hoppertype.ParentSkip))
	grandchild := b.insert(t, inQueue("children"), after(skipped.ID))
	b.end(t, parent, hoppertype.StateFailed)
	require.Equal(t, hoppertype.StateCanceled, b.get(t, skipped.ID).State)
	require.Equal(t, "skipped: parent "+parent.ID+" failed", b.lastEvent(t, skipped.ID).Reason)
	require.Equal(t, hoppertype.StateQueued, b.get(t, grandchild.ID).State, "no cascade past a skip")
	// A child enqueued after the skip sees it as succeeded too.
	late := b.insert(t, inQueue("children"), after(skipped.ID))
	require.Equal(t, hoppertype.StateQueued, late.State)
}

// Canceling a waiting job is an ending like any other: its children follow their policies.
func depsCancelWaiting(t *testing.T, b *bundle) {
	parent := b.parent(t)
	child := b.insert(t, inQueue("children"), after(parent.ID))
	grandchild := b.insert(t, inQueue("children"), after(child.ID))
	runs := b.insert(t, inQueue("runs"), after(child.ID), onFailure(hoppertype.ParentRun))
	got := b.cancel(t, child.ID)
	require.Equal(t, hoppertype.StateCanceled, got.State)
	require.Equal(t, hoppertype.StateWaiting, b.lastEvent(t, child.ID).From)
	require.Equal(t, hoppertype.StateCanceled, b.get(t, grandchild.ID).State)
	require.Equal(t, "parent "+child.ID+" canceled", b.lastEvent(t, grandchild.ID).Reason)
	require.Equal(t, hoppertype.ActorOperator, b.lastEvent(t, grandchild.ID).Actor)
	require.Equal(t, hoppertype.StateQueued, b.get(t, runs.ID).State)
	b.end(t, parent, hoppertype.StateCompleted) // the parent's ending finds its child canceled
	require.Equal(t, hoppertype.StateCanceled, b.get(t, child.ID).State)
}

// A child of parents that have all ended is released (or canceled) at once, by its insert.
func depsEndedParents(t *testing.T, b *bundle) {
	done, failed := b.parent(t), b.parent(t)
	b.end(t, done, hoppertype.StateCompleted)
	b.end(t, failed, hoppertype.StateFailed)

	queued := b.insert(t, inQueue("children"), after(done.ID))
	require.Equal(t, hoppertype.StateQueued, queued.State)
	require.Equal(t, hoppertype.StateQueued, b.get(t, queued.ID).State)
	evs := b.events(t, queued.ID)
	require.Len(t, evs, 2)
	require.Equal(t, hoppertype.StateWaiting, evs[0].To)
	require.Equal(t, hoppertype.StateQueued, evs[1].To)

	canceled := b.insert(t, inQueue("children"), after(done.ID, failed.ID))
	require.Equal(t, hoppertype.StateCanceled, canceled.State)
	require.Equal(t, "parent "+failed.ID+" failed", b.lastEvent(t, canceled.ID).Reason)

	runs := b.insert(t, inQueue("children"), after(failed.ID), onFailure(hoppertype.ParentRun))
	require.Equal(t, hoppertype.StateQueued, runs.State)

	last := b.parent(t)
	mixed := b.insert(t, inQueue("children"), after(done.ID, last.ID))
	require.Equal(t, hoppertype.StateWaiting, mixed.State, "one parent has not ended")
	require.Equal(t, b.get(t, mixed.ID), mixed, "the insert returns the child as stored")
	b.end(t, last, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, mixed.ID).State, "the parent ended before counts once")
}

// Endings in one batch, each with the row its claim returned (as the engine's: a parent
// claimed with children): a completed parent releases its child; a failed one cancels its
// child, which keeps the parent's expiry; a retry is no ending.
func depsEndingsWithClaimedRows(t *testing.T, b *bundle) {
	done, failed, retried := b.parent(t), b.parent(t), b.parent(t)
	released := b.insert(t, inQueue("children"), after(done.ID))
	canceled := b.insert(t, inQueue("children"), after(failed.ID))
	waits := b.insert(t, inQueue("children"), after(retried.ID, done.ID))
	var ends []*store.FinishParams
	for _, job := range []struct {
		row   *hoppertype.JobRow
		state hoppertype.JobState
	}{{done, hoppertype.StateCompleted}, {failed, hoppertype.StateFailed}, {retried, hoppertype.StateScheduled}} {
		claimed := b.claimOne(t, job.row.Queue)
		require.True(t, claimed.HasChildren)
		p := finishing(claimed, job.state)
		p.Job = claimed
		ends = append(ends, p)
	}
	expires := b.clock.Now().Add(time.Hour)
	ends[1].ExpiresAt = expires
	ends[2].RunAt = b.clock.Now().Add(time.Minute)
	errs, err := b.store.JobFinishMany(t.Context(), ends)
	require.NoError(t, err)
	require.Equal(t, []error{nil, nil, nil}, errs)
	require.Equal(t, hoppertype.StateQueued, b.get(t, released.ID).State)
	got := b.get(t, canceled.ID)
	require.Equal(t, hoppertype.StateCanceled, got.State)
	sameTime(t, expires, got.ExpiresAt, "a canceled child is kept as long as its failed parent")
	require.Equal(t, hoppertype.StateWaiting, b.get(t, waits.ID).State, "a retried parent has not ended")
	b.clock.Advance(time.Minute)
	b.promote(t)
	b.end(t, retried, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, waits.ID).State)
}

// An unknown parent is a validation error naming the field, and nothing of the call is
// inserted.
func depsUnknownParent(t *testing.T, b *bundle) {
	ok := params(t, inQueue("children"))
	parent := b.parent(t)
	bad := params(t, inQueue("children"), after(parent.ID, newID(t)))
	_, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{ok, bad})
	require.ErrorIs(t, err, hoppertype.ErrInvalid)
	var pe *store.ParentError
	require.True(t, errors.As(err, &pe), "%v", err)
	require.Equal(t, "after[1]", pe.Field())
	require.Equal(t, 1, pe.Item)
	_, err = b.store.JobGet(t.Context(), ok.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "the batch's other job is not inserted")
	_, err = b.store.JobGet(t.Context(), bad.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	// The parent was not left flagged by the failed call: its ending releases nothing.
	b.end(t, parent, hoppertype.StateCompleted)
}

// A child may name a job inserted earlier in the same call.
func depsSameBatch(t *testing.T, b *bundle) {
	parent := params(t, inQueue("parents"))
	child := params(t, inQueue("children"), after(parent.ID))
	res := b.insertMany(t, parent, child)
	require.Equal(t, hoppertype.StateQueued, res[0].Job.State)
	require.Equal(t, hoppertype.StateWaiting, res[1].Job.State)
	b.end(t, res[0].Job, hoppertype.StateCompleted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State)

	// A later item is not there yet when the child is inserted: refused.
	first := params(t, inQueue("children"), after(newID(t)))
	second := params(t, inQueue("parents"))
	first.After = []string{second.ID}
	_, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{first, second})
	require.ErrorIs(t, err, hoppertype.ErrInvalid)
}

// A retry (back to scheduled) is not an ending: the child keeps waiting.
func depsRetryIsNoEnding(t *testing.T, b *bundle) {
	parent := b.parent(t)
	child := b.insert(t, inQueue("children"), after(parent.ID))
	claimed := b.claimOne(t, parent.Queue)
	p := finishing(claimed, hoppertype.StateScheduled)
	p.RunAt = b.clock.Now().Add(time.Second)
	require.NoError(t, b.finish(t, p))
	require.Equal(t, hoppertype.StateWaiting, b.get(t, child.ID).State)
}

// A rescue that fails a parent (out of rescues) ends it: the child follows its policy.
func depsRescueFailsParent(t *testing.T, b *bundle) {
	parent := b.insert(t, inQueue("lost"), func(p *store.InsertParams) { p.MaxRescues = 1 })
	child := b.insert(t, inQueue("children"), after(parent.ID))
	for range 2 {
		b.claimOne(t, "lost")
		b.clock.Advance(defaultLease + time.Second)
		b.rescue(t)
	}
	require.Equal(t, hoppertype.StateFailed, b.get(t, parent.ID).State)
	require.Equal(t, hoppertype.StateCanceled, b.get(t, child.ID).State)
	require.Equal(t, hoppertype.ActorLeader, b.lastEvent(t, child.ID).Actor)
}

// Parents ending at the same time, in different transactions (PostgreSQL: on different
// connections), release their child exactly once.
func depsConcurrentEndings(t *testing.T, b *bundle) {
	const n = 8
	for round := range 5 {
		var parents []*hoppertype.JobRow
		var names []string
		for range n {
			p := b.running(t)
			parents, names = append(parents, p), append(names, p.ID)
		}
		queue := "children-" + newID(t)
		child := b.insert(t, inQueue(queue), after(names...))
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i, p := range parents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := b.store.JobFinishMany(t.Context(), []*store.FinishParams{finishing(p, hoppertype.StateCompleted)})
				if err == nil {
					err = res[0]
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State, "round %d", round)
		require.Equal(t, 1, b.moves(t, child.ID, hoppertype.StateWaiting, hoppertype.StateQueued))
		require.Len(t, b.claim(t, queue, 10), 1)
	}
}

// A child's insert racing its parent's ending: whichever commits first, the child is released
// exactly once.
func depsInsertRacesEnding(t *testing.T, b *bundle) {
	for round := range 10 {
		parent := b.running(t)
		queue := "children-" + newID(t)
		child := params(t, inQueue(queue), after(parent.ID))
		var wg sync.WaitGroup
		var insErr, finErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, insErr = b.store.JobInsertMany(t.Context(), []*store.InsertParams{child})
		}()
		go func() {
			defer wg.Done()
			res, err := b.store.JobFinishMany(t.Context(), []*store.FinishParams{finishing(parent, hoppertype.StateCompleted)})
			if err == nil {
				err = res[0]
			}
			finErr = err
		}()
		wg.Wait()
		require.NoError(t, insErr)
		require.NoError(t, finErr)
		require.Equal(t, hoppertype.StateQueued, b.get(t, child.ID).State, "round %d", round)
		require.Equal(t, 1, b.moves(t, child.ID, hoppertype.StateWaiting, hoppertype.StateQueued))
	}
}

// A fan-in of 10,000 parents into one child: inserted in one call, released by the last
// parent's ending and by no other.
func depsFanIn(t *testing.T, b *bundle) {
	if testing.Short() {
		t.Skip("10,000 jobs")
	}
	n := scale(10_000)
	batch := min(1_000, n/4)
	var ps []*store.InsertParams
	var names []string
	for range n {
		p := params(t, inQueue("fan"))
		ps, names = append(ps, p), append(names, p.ID)
	}
	for i := 0; i < n; i += batch {
		b.insertMany(t, ps[i:i+batch]...)
	}
	child := b.insert(t, inQueue("fan-in"), after(names...))
	require.Equal(t, hoppertype.StateWaiting, child.State)
	for done := 0; done < n; {
		jobs := b.claim(t, "fan", batch)
		require.NotEmpty(t, jobs)
		b.completeBatch(t, jobs)
		done += len(jobs)
		want := hoppertype.StateWaiting
		if done == n {
			want = hoppertype.StateQueued
		}
		require.Equal(t, want, b.get(t, child.ID).State, "after %d endings", done)
	}
	ev := b.lastEvent(t, child.ID)
	require.True(t, strings.HasPrefix(ev.Reason, "parents ended"), ev.Reason)
	require.Equal(t, 1, b.moves(t, child.ID, hoppertype.StateWaiting, hoppertype.StateQueued))
}

// A cancel cascade down a chain of 10,000 jobs runs in the one transaction of the root's
// ending, without running out of stack (the release loops level by level).
func depsLongChain(t *testing.T, b *bundle) {
	if testing.Short() {
		t.Skip("10,000 jobs")
	}
	n := scale(10_000)
	batch := min(1_000, n/4)
	root := b.parent(t)
	prev := root.ID
	var chain []string
	for len(chain) < n {
		ps := make([]*store.InsertParams, batch)
		for i := range ps {
			ps[i] = params(t, inQueue("chain"), after(prev))
			prev = ps[i].ID
			chain = append(chain, prev)
		}
		b.insertMany(t, ps...)
	}
	b.end(t, root, hoppertype.StateFailed)
	for _, i := range []int{0, 1, n / 2, n - 1} {
		require.Equal(t, hoppertype.StateCanceled, b.get(t, chain[i]).State, "link %d", i)
	}
	require.Empty(t, b.listAll(t, store.ListParams{States: []hoppertype.JobState{hoppertype.StateWaiting}}))
}

// completeBatch completes the claimed jobs in one JobFinishMany; every item must succeed.
func (b *bundle) completeBatch(t *testing.T, jobs []*hoppertype.JobRow) {
	t.Helper()
	fin := make([]*store.FinishParams, len(jobs))
	for i, j := range jobs {
		fin[i] = finishing(j, hoppertype.StateCompleted)
	}
	errs, err := b.store.JobFinishMany(t.Context(), fin)
	require.NoError(t, err)
	for _, e := range errs {
		require.NoError(t, e)
	}
}
