package storetest

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testMerge(t *testing.T, opener Opener) {
	parallel(t, opener, "Keep", mergeKeep)
	parallel(t, opener, "Replace", mergeReplace)
	parallel(t, opener, "Append", mergeAppend)
	parallel(t, opener, "IntoScheduled", mergeIntoScheduled)
	parallel(t, opener, "NotOnceClaimed", mergeNotOnceClaimed)
	parallel(t, opener, "KindScoped", mergeKindScoped)
	parallel(t, opener, "History", mergeHistory)
	parallel(t, opener, "Batch", mergeBatch)
	parallel(t, opener, "Concurrent", mergeConcurrent)
	parallel(t, opener, "Idempotency", mergeIdempotency)
	parallel(t, opener, "ShapeConflict", mergeShapeConflict)
	parallel(t, opener, "ArgsTooLarge", mergeArgsTooLarge)
}

func withMerge(key string, policy hoppertype.MergePolicy) option {
	return func(p *store.InsertParams) { p.MergeKey, p.Merge = key, policy }
}

// mergeInto inserts p, requires that it merged into job id, and returns the job as merged.
func (b *bundle) mergeInto(t *testing.T, id string, p *store.InsertParams) *hoppertype.JobRow {
	t.Helper()
	res := b.insertMany(t, p)
	require.True(t, res[0].Merged, "merged")
	require.False(t, res[0].Existing)
	require.Equal(t, id, res[0].Job.ID)
	_, err := b.store.JobGet(t.Context(), p.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "a merged item makes no job")
	return res[0].Job
}

// Contract 9, keep: the waiting job stays as it is, queue and all; the new enqueue adds nothing.
func mergeKeep(t *testing.T, b *bundle) {
	first := b.insert(t, withMerge("m", hoppertype.MergeKeep), withArgs(`{"n":1}`), withPriority(3))
	b.clock.Advance(time.Second)
	merged := b.mergeInto(t, first.ID, params(t, withMerge("m", hoppertype.MergeKeep), withArgs(`{"n":2}`),
		inQueue("elsewhere"), withPriority(9)))
	for _, job := range []*hoppertype.JobRow{merged, b.get(t, first.ID)} {
		require.JSONEq(t, `{"n":1}`, string(job.Args))
		require.Equal(t, defaultQueue, job.Queue)
		require.Equal(t, 3, job.Priority)
		require.Equal(t, "m", job.MergeKey)
		require.Equal(t, hoppertype.StateQueued, job.State)
	}
	require.Equal(t, []string{first.ID}, ids(b.listAll(t, store.ListParams{})))
}

// Replace: the waiting job takes the new args.
func mergeReplace(t *testing.T, b *bundle) {
	first := b.insert(t, withMerge("m", hoppertype.MergeReplace), withArgs(`{"n":1}`))
	merged := b.mergeInto(t, first.ID, params(t, withMerge("m", hoppertype.MergeReplace), withArgs(`{"n":2}`)))
	require.JSONEq(t, `{"n":2}`, string(merged.Args))
	b.mergeInto(t, first.ID, params(t, withMerge("m", hoppertype.MergeReplace), withArgs(`{"n":3}`)))
	require.JSONEq(t, `{"n":3}`, string(b.get(t, first.ID).Args))
	require.Len(t, b.listAll(t, store.ListParams{}), 1)
}

// Append: the waiting job's args, a JSON array, gain the new items in order.
func mergeAppend(t *testing.T, b *bundle) {
	first := b.insert(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[{"n":1}]`))
	merged := b.mergeInto(t, first.ID, params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[{"n":2}]`)))
	require.JSONEq(t, `[{"n":1},{"n":2}]`, string(merged.Args))
	b.mergeInto(t, first.ID, params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[{"n":3},{"n":4}]`)))
	b.mergeInto(t, first.ID, params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[]`)))
	require.JSONEq(t, `[{"n":1},{"n":2},{"n":3},{"n":4}]`, string(b.get(t, first.ID).Args))
	require.Len(t, b.listAll(t, store.ListParams{}), 1)
}

// A scheduled job merges too, and keeps its run_at.
func mergeIntoScheduled(t *testing.T, b *bundle) {
	at := b.clock.Now().Add(time.Minute)
	first := b.insert(t, withMerge("m", hoppertype.MergeReplace), withRunAt(at))
	require.Equal(t, hoppertype.StateScheduled, first.State)
	merged := b.mergeInto(t, first.ID, params(t, withMerge("m", hoppertype.MergeReplace), withArgs(`{"n":2}`)))
	require.Equal(t, hoppertype.StateScheduled, merged.State)
	sameTime(t, at, merged.RunAt, "run_at")
}

// Once a job has been claimed it takes no merge, even back in the queue: the next enqueue makes
// a new job, and later ones merge into that one. A canceled job takes none either.
func mergeNotOnceClaimed(t *testing.T, b *bundle) {
	q := "q-" + newID(t)
	opts := func(args string) []option {
		return []option{inQueue(q), withMerge("m", hoppertype.MergeAppend), withArgs(args)}
	}
	first := b.insert(t, opts(`[1]`)...)
	claimed := b.claimOne(t, q)
	require.Equal(t, first.ID, claimed.ID)

	second := b.insert(t, opts(`[2]`)...)
	require.NotEqual(t, first.ID, second.ID)

	p := finishing(claimed, hoppertype.StateScheduled)
	p.RunAt = b.clock.Now()
	require.NoError(t, b.finish(t, p))
	require.Equal(t, 1, b.promote(t).Promoted)
	require.Equal(t, hoppertype.StateQueued, b.get(t, first.ID).State, "the first job is back in its queue")

	b.mergeInto(t, second.ID, params(t, opts(`[3]`)...))
	require.JSONEq(t, `[1]`, string(b.get(t, first.ID).Args), "a claimed job's args never change")
	require.JSONEq(t, `[2,3]`, string(b.get(t, second.ID).Args))

	_, err := b.store.JobCancel(t.Context(), &store.CancelParams{ID: second.ID, Actor: hoppertype.ActorAPI, Reason: "test"})
	require.NoError(t, err)
	third := b.insert(t, opts(`[4]`)...)
	require.NotEqual(t, second.ID, third.ID)
	require.JSONEq(t, `[2,3]`, string(b.get(t, second.ID).Args))
	require.Len(t, b.listAll(t, store.ListParams{}), 3)
}

// A merge key belongs to a kind: the same key of another kind is another job.
func mergeKindScoped(t *testing.T, b *bundle) {
	a := b.insert(t, withKind("kind-a"), withMerge("m", hoppertype.MergeReplace), withArgs(`{"a":1}`))
	other := b.insert(t, withKind("kind-b"), withMerge("m", hoppertype.MergeReplace), withArgs(`{"b":1}`))
	require.NotEqual(t, a.ID, other.ID)
	b.mergeInto(t, a.ID, params(t, withKind("kind-a"), withMerge("m", hoppertype.MergeReplace), withArgs(`{"a":2}`)))
	require.JSONEq(t, `{"a":2}`, string(b.get(t, a.ID).Args))
	require.JSONEq(t, `{"b":1}`, string(b.get(t, other.ID).Args))
}

// A merge is an event of the job's history (same state before and after, the item's actor,
// reason merged and the policy), between the enqueue and the claim, in order.
func mergeHistory(t *testing.T, b *bundle) {
	t0 := b.clock.Now()
	job := b.insert(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[1]`))
	b.clock.Advance(time.Second)
	t1 := b.clock.Now()
	merged := b.mergeInto(t, job.ID, params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[2]`)))
	sameTime(t, t1, merged.UpdatedAt, "updated_at")
	b.clock.Advance(time.Second)
	t2 := b.clock.Now()
	keep := params(t, withMerge("m", hoppertype.MergeKeep))
	keep.Actor = hoppertype.ActorOperator
	b.mergeInto(t, job.ID, keep)
	b.clock.Advance(time.Second)
	t3 := b.clock.Now()
	claimed := b.claimOne(t, defaultQueue)
	require.Equal(t, job.ID, claimed.ID)

	requireEvents(t, job.ID, []wantEvent{
		{"", hoppertype.StateQueued, hoppertype.ActorAPI, "enqueue", t0},
		{hoppertype.StateQueued, hoppertype.StateQueued, hoppertype.ActorAPI, "merged (append)", t1},
		{hoppertype.StateQueued, hoppertype.StateQueued, hoppertype.ActorOperator, "merged (keep)", t2},
		{hoppertype.StateQueued, hoppertype.StateRunning, hoppertype.ActorWorker, "", t3},
	}, b.events(t, job.ID))
}

// Items of one batch with one key merge in order, into the job the first of them made.
func mergeBatch(t *testing.T, b *bundle) {
	plain := params(t)
	ps := []*store.InsertParams{
		params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[1]`)),
		plain,
		params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[2]`)),
		params(t, withMerge("other", hoppertype.MergeAppend), withArgs(`[9]`)),
		params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[3]`)),
	}
	res := b.insertMany(t, ps...)
	id := ps[0].ID
	require.False(t, res[0].Merged)
	require.Equal(t, id, res[0].Job.ID)
	require.Equal(t, plain.ID, res[1].Job.ID)
	require.False(t, res[1].Merged)
	require.False(t, res[3].Merged)
	for _, i := range []int{2, 4} {
		require.True(t, res[i].Merged, "item %d", i)
		require.Equal(t, id, res[i].Job.ID, "item %d", i)
	}
	require.JSONEq(t, `[1,2,3]`, string(res[4].Job.Args))
	require.JSONEq(t, `[1,2,3]`, string(b.get(t, id).Args))

	// A later batch merges into the same job.
	res = b.insertMany(t, params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[4]`)),
		params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[5]`)))
	require.True(t, res[0].Merged)
	require.True(t, res[1].Merged)
	require.JSONEq(t, `[1,2,3,4,5]`, string(b.get(t, id).Args))
	require.Len(t, b.listAll(t, store.ListParams{}), 3)
}

// Many concurrent enqueues with one merge key leave exactly one job whose args hold every
// enqueue's, each once.
func mergeConcurrent(t *testing.T, b *bundle) {
	const n = 32
	results := make([]*store.InsertResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		p := params(t, withMerge("race", hoppertype.MergeAppend), withArgs(fmt.Sprintf("[%d]", i)))
		wg.Go(func() {
			<-start
			res, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{p})
			if err == nil {
				results[i] = res[0]
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()

	jobIDs, created := map[string]bool{}, 0
	for i := range n {
		require.NoError(t, errs[i], "insert %d", i)
		jobIDs[results[i].Job.ID] = true
		if !results[i].Merged {
			created++
		}
	}
	require.Len(t, jobIDs, 1)
	require.Equal(t, 1, created)
	jobs := b.listAll(t, store.ListParams{})
	require.Len(t, jobs, 1)
	var got []int
	require.NoError(t, json.Unmarshal(jobs[0].Args, &got))
	sort.Ints(got)
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	require.Equal(t, want, got)
	require.Len(t, b.events(t, jobs[0].ID), n, "the enqueue and one event per merge")
}

// An idempotency key wins over a merge key: a repeated enqueue returns the job its first
// enqueue merged into and merges nothing again, in one batch as across calls.
func mergeIdempotency(t *testing.T, b *bundle) {
	job := b.insert(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[1]`), withKey("k1", day))
	merged := b.mergeInto(t, job.ID, params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[2]`), withKey("k2", day)))
	require.JSONEq(t, `[1,2]`, string(merged.Args))

	for _, key := range []string{"k1", "k2"} {
		args := map[string]string{"k1": `[1]`, "k2": `[2]`}[key]
		res := b.insertMany(t, params(t, withMerge("m", hoppertype.MergeAppend), withArgs(args), withKey(key, day)))
		require.True(t, res[0].Existing, key)
		require.False(t, res[0].Merged, key)
		require.Equal(t, job.ID, res[0].Job.ID, key)
	}
	require.JSONEq(t, `[1,2]`, string(b.get(t, job.ID).Args), "repeats merged nothing")

	p3 := params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[3]`), withKey("k3", day))
	again := params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`[3]`), withKey("k3", day))
	res := b.insertMany(t, p3, again)
	require.True(t, res[0].Merged)
	require.True(t, res[1].Existing)
	require.Equal(t, job.ID, res[1].Job.ID)
	require.JSONEq(t, `[1,2,3]`, string(b.get(t, job.ID).Args))
	require.Len(t, b.listAll(t, store.ListParams{}), 1)
}

// Append into a job that does not hold a list, or replace into one that does, is refused and
// changes nothing; keep merges into either.
func mergeShapeConflict(t *testing.T, b *bundle) {
	plain := b.get(t, b.insert(t, withKind("plain"), withMerge("m", hoppertype.MergeKeep), withArgs(`[1]`)).ID)
	list := b.get(t, b.insert(t, withKind("list"), withMerge("m", hoppertype.MergeAppend), withArgs(`[1]`)).ID)
	cases := []struct {
		target *hoppertype.JobRow
		item   *store.InsertParams
	}{
		{plain, params(t, withKind("plain"), withMerge("m", hoppertype.MergeAppend), withArgs(`[2]`))},
		{list, params(t, withKind("list"), withMerge("m", hoppertype.MergeReplace), withArgs(`[2]`))},
	}
	for _, c := range cases {
		fresh := params(t)
		_, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{fresh, c.item})
		require.ErrorIs(t, err, store.ErrMergeConflict)
		var me *store.MergeError
		require.ErrorAs(t, err, &me)
		require.Equal(t, 1, me.Item)
		require.Equal(t, c.target.ID, me.JobID)
		_, err = b.store.JobGet(t.Context(), fresh.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "nothing of the batch is stored")
		require.Equal(t, c.target, b.get(t, c.target.ID))
	}
	b.mergeInto(t, plain.ID, params(t, withKind("plain"), withMerge("m", hoppertype.MergeReplace), withArgs(`[3]`)))
	b.mergeInto(t, list.ID, params(t, withKind("list"), withMerge("m", hoppertype.MergeKeep), withArgs(`[4]`)))
	require.JSONEq(t, `[3]`, string(b.get(t, plain.ID).Args))
	require.JSONEq(t, `[1]`, string(b.get(t, list.ID).Args))
}

// An append whose result would exceed the item's MaxArgsBytes is refused; the job keeps what
// it had.
func mergeArgsTooLarge(t *testing.T, b *bundle) {
	job := b.insert(t, withMerge("m", hoppertype.MergeAppend), withArgs(`["aaaa"]`))
	fits := params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`["bbbb"]`))
	fits.MaxArgsBytes = len(`["aaaa","bbbb"]`)
	b.mergeInto(t, job.ID, fits)

	over := params(t, withMerge("m", hoppertype.MergeAppend), withArgs(`["c"]`))
	over.MaxArgsBytes = len(`["aaaa","bbbb","c"]`) - 1
	_, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{over})
	require.ErrorIs(t, err, store.ErrArgsTooLarge)
	var me *store.MergeError
	require.ErrorAs(t, err, &me)
	require.Equal(t, 0, me.Item)
	require.Equal(t, job.ID, me.JobID)
	require.JSONEq(t, `["aaaa","bbbb"]`, string(b.get(t, job.ID).Args))
	require.Len(t, b.events(t, job.ID), 2, "the refused merge left no event")
	require.Len(t, b.listAll(t, store.ListParams{}), 1)
}
