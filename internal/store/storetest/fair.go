package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testFair: fairness keys share a queue's claims between tenants.
func testFair(t *testing.T, opener Opener) {
	parallel(t, opener, "FloodDoesNotStarveATrickle", fairFloodDoesNotStarveATrickle)
	parallel(t, opener, "ClaimsOfOneRotate", fairClaimsOfOneRotate)
	parallel(t, opener, "PriorityFirst", fairPriorityFirst)
	parallel(t, opener, "UnkeyedJobsAreOneKey", fairUnkeyedJobsAreOneKey)
	parallel(t, opener, "GroupsStillOneAtATime", fairGroupsStillOneAtATime)
	parallel(t, opener, "KeyBackInTheQueue", fairKeyBackInTheQueue)
	parallel(t, opener, "BackWhileKeyListed", fairBackWhileKeyListed)
	parallel(t, opener, "Kinds", fairKinds)
	parallel(t, opener, "IdleKeysGoToTheBack", fairIdleKeysGoToTheBack)
	parallel(t, opener, "WeightsShareClaims", fairWeightsShareClaims)
	parallel(t, opener, "WeightsClaimsOfOne", fairWeightsClaimsOfOne)
	parallel(t, opener, "WeightsPriorityFirst", fairWeightsPriorityFirst)
	parallel(t, opener, "KeyWeightsStored", fairKeyWeightsStored)
	parallel(t, opener, "ClaimOrderIsThePick", fairClaimOrderIsThePick)
	parallel(t, opener, "ConcurrentClaimsComeBackFull", fairConcurrentClaimsComeBackFull)
	parallel(t, opener, "ClaimsSayTheyAreFair", fairClaimsSayTheyAreFair)
}

// A claim says whether it was fair (store.Hold.FairAhead, the store's bound): the claim loop
// then claims few ahead, since a key's job that comes later would wait behind every job
// claimed ahead of it. It says so from the first claim after a key came (a store that
// remembers the queue as unkeyed finds out), under a cap too, and no more once the keys' jobs
// are gone.
func fairClaimsSayTheyAreFair(t *testing.T, b *bundle) {
	claim := func(queue string, limit, ahead int) ([]*hoppertype.JobRow, store.Hold) {
		t.Helper()
		jobs, hold, err := b.store.JobClaim(t.Context(), &store.ClaimParams{Queue: queue, Limit: limit, Ahead: ahead,
			WorkerID: workerA, LeaseDuration: defaultLease})
		require.NoError(t, err)
		return jobs, hold
	}
	q := "fair-or-not"
	b.insert(t, inQueue(q))
	jobs, hold := claim(q, 2, 1)
	require.Len(t, jobs, 1)
	require.Zero(t, hold.FairAhead, "no key in the queue")

	b.insert(t, inQueue(q), withFairness("tenant-a"))
	b.insert(t, inQueue(q), withFairness("tenant-a"))
	b.insert(t, inQueue(q))
	jobs, hold = claim(q, 2, 1)
	require.Equal(t, map[string]int{"tenant-a": 1, "": 1}, keysOf(jobs))
	require.Positive(t, hold.FairAhead, "the first claim after a key came")
	require.False(t, hold.Restricted)

	require.NoError(t, b.store.LimitSet(t.Context(), &store.LimitParams{Scope: store.LimitQueue, Name: q, MaxRunning: 10}))
	jobs, hold = claim(q, 2, 1)
	require.Equal(t, map[string]int{"tenant-a": 1}, keysOf(jobs), "under a cap: none ahead")
	require.Positive(t, hold.FairAhead, "under a cap")
	require.True(t, hold.Restricted, "under a cap")

	b.insert(t, inQueue(q))
	jobs, hold = claim(q, 2, 1)
	require.Len(t, jobs, 1)
	require.Zero(t, hold.FairAhead, "the keys' jobs are gone")
}

// Fair claims of one store made at once each take what they ask for while the queue holds
// enough: a claim that comes back short tells the claim loop the queue is drained, and it
// stops claiming until a wake-up (measured on PostgreSQL: two claims at once read the same
// head, the second found it taken, and a keyed flood ran at 100 jobs/s instead of 2,000).
func fairConcurrentClaimsComeBackFull(t *testing.T, b *bundle) {
	b.flood(t, "tenant-a", 120)
	b.flood(t, "tenant-b", 120)
	const claims, limit = 8, 20
	got := make([][]*hoppertype.JobRow, claims)
	var wg sync.WaitGroup
	for i := range claims {
		wg.Go(func() {
			jobs, _, err := b.store.JobClaim(t.Context(), &store.ClaimParams{Queue: defaultQueue, Limit: limit,
				WorkerID: fmt.Sprintf("worker-%d", i), LeaseDuration: defaultLease})
			assert.NoError(t, err)
			got[i] = jobs
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, jobs := range got {
		require.Len(t, jobs, limit, "claim %d", i)
		for _, j := range jobs {
			require.False(t, seen[j.ID], "job %s claimed twice", j.ID)
			seen[j.ID] = true
		}
	}
}

// flood inserts n jobs of key in one batch, oldest first.
func (b *bundle) flood(t *testing.T, key string, n int, opts ...option) []*hoppertype.JobRow {
	t.Helper()
	ps := make([]*store.InsertParams, n)
	for i := range ps {
		ps[i] = params(t, append([]option{withFairness(key)}, opts...)...)
	}
	res := b.insertMany(t, ps...)
	jobs := make([]*hoppertype.JobRow, n)
	for i, r := range res {
		jobs[i] = r.Job
	}
	return jobs
}

// keysOf counts the claimed jobs per fairness key.
func keysOf(jobs []*hoppertype.JobRow) map[string]int {
	out := map[string]int{}
	for _, j := range jobs {
		out[j.FairnessKey]++
	}
	return out
}

// The case: one tenant's flood enqueued before another tenant's single job does not
// delay it; a claim shares its slots between the keys that have jobs.
func fairFloodDoesNotStarveATrickle(t *testing.T, b *bundle) {
	flood := b.flood(t, "tenant-a", 500)
	bJob := b.insert(t, withFairness("tenant-b"))
	cJob := b.insert(t, withFairness("tenant-c"))

	got := b.claim(t, defaultQueue, 10)
	require.Len(t, got, 10)
	require.Contains(t, ids(got), bJob.ID)
	require.Contains(t, ids(got), cJob.ID)
	require.Equal(t, map[string]int{"tenant-a": 8, "tenant-b": 1, "tenant-c": 1}, keysOf(got))
	// tenant-a's share is its oldest jobs, in order.
	want := ids(flood[:8])
	require.Subset(t, ids(got), want)

	// Alone again, tenant-a's jobs go first in, first out.
	require.Equal(t, ids(flood[8:13]), ids(b.claim(t, defaultQueue, 5)))
}

// Claims of one job take the keys in turn, the least recently served first (never served:
// by name).
func fairClaimsOfOneRotate(t *testing.T, b *bundle) {
	b.flood(t, "tenant-a", 3)
	b.flood(t, "tenant-b", 3)
	b.flood(t, "tenant-c", 3)
	var order []string
	for range 9 {
		order = append(order, b.claimOne(t, defaultQueue).FairnessKey)
	}
	require.Equal(t, []string{"tenant-a", "tenant-b", "tenant-c", "tenant-a", "tenant-b", "tenant-c",
		"tenant-a", "tenant-b", "tenant-c"}, order)
	require.Empty(t, b.claim(t, defaultQueue, 10))
}

// Priority comes first: a higher-priority job of any key goes before the jobs of lower
// priority, however the keys were served.
func fairPriorityFirst(t *testing.T, b *bundle) {
	urgent := b.flood(t, "tenant-a", 3, withPriority(5))
	b.insert(t, withFairness("tenant-b"))
	late := b.insert(t, withFairness("tenant-c"), withPriority(9))

	require.Equal(t, []string{late.ID}, ids(b.claim(t, defaultQueue, 1)), "the highest priority, of an unserved key")
	require.Equal(t, ids(urgent), ids(b.claim(t, defaultQueue, 3)), "priority 5 before tenant-b's 0")
	require.Equal(t, map[string]int{"tenant-b": 1}, keysOf(b.claim(t, defaultQueue, 3)))
}

// Jobs without a key share the queue as one more key: neither a keyed flood starves them nor
// their flood a key's job.
func fairUnkeyedJobsAreOneKey(t *testing.T, b *bundle) {
	b.flood(t, "tenant-a", 100)
	plain1, plain2 := b.insert(t), b.insert(t)
	got := b.claim(t, defaultQueue, 3)
	require.Subset(t, ids(got), []string{plain1.ID, plain2.ID})
	require.Equal(t, map[string]int{"": 2, "tenant-a": 1}, keysOf(got))

	q := "unkeyed-flood"
	for range 50 {
		b.insert(t, inQueue(q))
	}
	keyed := b.insert(t, inQueue(q), withFairness("tenant-b"))
	require.Contains(t, ids(b.claim(t, q, 2)), keyed.ID)
}

// Groups still run one at a time, oldest first, in a fair claim.
func fairGroupsStillOneAtATime(t *testing.T, b *bundle) {
	g := b.flood(t, "tenant-a", 3, withGroup("customer-1"))
	free := b.insert(t, withFairness("tenant-b"))
	require.ElementsMatch(t, []string{g[0].ID, free.ID}, ids(b.claim(t, defaultQueue, 10)))
	require.Empty(t, b.claim(t, defaultQueue, 10), "the group is busy")
	require.NoError(t, b.finish(t, finishing(b.get(t, g[0].ID), hoppertype.StateCompleted)))
	require.Equal(t, []string{g[1].ID}, ids(b.claim(t, defaultQueue, 10)))
}

// A key whose jobs all left the queue and one comes back (released, retried, rescued) is
// served again, ahead of a flood that came before it.
func fairKeyBackInTheQueue(t *testing.T, b *bundle) {
	b.flood(t, "tenant-a", 50)
	bJob := b.insert(t, withFairness("tenant-b"))
	got := b.claim(t, defaultQueue, 2)
	require.Contains(t, ids(got), bJob.ID)
	b.claim(t, defaultQueue, 2) // tenant-a alone

	running := b.get(t, bJob.ID)
	require.NoError(t, b.finish(t, finishing(running, hoppertype.StateQueued)))
	require.Contains(t, ids(b.claim(t, defaultQueue, 2)), bJob.ID)
}

// A job given back to its queue while other jobs of its key wait there (its key listed) goes
// back like any other: the store's note that the key has queued jobs is already there. (The
// SQLite store's ending is an UPDATE OR FAIL, whose conflict clause its triggers inherit: a
// trigger that added the key with INSERT OR IGNORE failed the ending instead.)
func fairBackWhileKeyListed(t *testing.T, b *bundle) {
	b.flood(t, "tenant-a", 2)
	got := b.claim(t, defaultQueue, 1)
	require.Len(t, got, 1)

	require.NoError(t, b.finish(t, finishing(got[0], hoppertype.StateQueued)))
	require.Equal(t, hoppertype.StateQueued, b.get(t, got[0].ID).State)
	again := b.claim(t, defaultQueue, 10)
	require.Len(t, again, 2)
	require.Contains(t, ids(again), got[0].ID)
}

// A fair claim takes only the kinds asked for.
func fairKinds(t *testing.T, b *bundle) {
	b.flood(t, "tenant-a", 20, withKind("report"))
	b.insert(t, withFairness("tenant-b"), withKind("email"))
	mail := b.insert(t, withFairness("tenant-c"), withKind("email"))
	got := b.claimAs(t, &store.ClaimParams{Queue: defaultQueue, Kinds: []string{"report"}, Limit: 5,
		WorkerID: workerA, LeaseDuration: defaultLease})
	require.Equal(t, map[string]int{"tenant-a": 5}, keysOf(got))
	got = b.claimAs(t, &store.ClaimParams{Queue: defaultQueue, Kinds: []string{"email"}, Limit: 5,
		WorkerID: workerA, LeaseDuration: defaultLease})
	require.Len(t, got, 2)
	require.Contains(t, ids(got), mail.ID)
}

// Keys whose jobs wait (their groups are busy) do not hold a claim's reads: the next claim
// reads the keys behind them. A claim of one reads 17 keys; here the 17 blocked ones would
// fill every claim's reads, and the free key's job, behind a flood, would wait for the flood.
func fairIdleKeysGoToTheBack(t *testing.T, b *bundle) {
	b.flood(t, "aaa", 20)
	for i := range store.FairKeysPerClaim(1) {
		group := fmt.Sprintf("group-%02d", i)
		b.running(t, withGroup(group))
		b.insert(t, withFairness(fmt.Sprintf("blocked-%02d", i)), withGroup(group))
	}
	free := b.insert(t, withFairness("zzz"))
	var got []string
	for range 3 {
		got = append(got, b.claimOne(t, defaultQueue).ID)
	}
	require.Contains(t, got, free.ID)
}

// A key of weight 3 takes three turns a round to a key of weight 1's one: a claim of 8 with
// both flooded takes 6 and 2. Removing the weight (1) makes them even again.
func fairWeightsShareClaims(t *testing.T, b *bundle) {
	ctx := t.Context()
	b.flood(t, "heavy", 50)
	b.flood(t, "light", 50)
	require.NoError(t, b.store.QueueSetKeyWeight(ctx, defaultQueue, "heavy", 3))
	require.Equal(t, map[string]int{"heavy": 6, "light": 2}, keysOf(b.claim(t, defaultQueue, 8)))
	require.Equal(t, map[string]int{"heavy": 12, "light": 4}, keysOf(b.claim(t, defaultQueue, 16)))

	require.NoError(t, b.store.QueueSetKeyWeight(ctx, defaultQueue, "heavy", 1))
	require.Equal(t, map[string]int{"heavy": 5, "light": 5}, keysOf(b.claim(t, defaultQueue, 10)), "weight 1 is the default")
}

// Claims of one job serve a key of weight 3 three times for each time a key of weight 1:
// the heavy key keeps its place until it used its turns.
func fairWeightsClaimsOfOne(t *testing.T, b *bundle) {
	b.flood(t, "heavy", 20)
	b.flood(t, "light", 20)
	require.NoError(t, b.store.QueueSetKeyWeight(t.Context(), defaultQueue, "heavy", 3))
	var order []string
	for range 12 {
		order = append(order, b.claimOne(t, defaultQueue).FairnessKey)
	}
	require.Equal(t, []string{"heavy", "heavy", "heavy", "light", "heavy", "heavy", "heavy", "light",
		"heavy", "heavy", "heavy", "light"}, order)
}

// Priority still comes first: a light key's urgent job goes before a heavy key's turns.
func fairWeightsPriorityFirst(t *testing.T, b *bundle) {
	b.flood(t, "heavy", 20)
	urgent := b.insert(t, withFairness("light"), withPriority(5))
	require.NoError(t, b.store.QueueSetKeyWeight(t.Context(), defaultQueue, "heavy", 10))
	got := b.claim(t, defaultQueue, 4)
	require.Equal(t, urgent.ID, got[0].ID)
	require.Equal(t, map[string]int{"heavy": 3, "light": 1}, keysOf(got))
}

// Key weights are stored per queue and key, listed by queue then key; 0 and 1 remove a
// weight, a negative or too large one is refused.
func fairKeyWeightsStored(t *testing.T, b *bundle) {
	ctx := t.Context()
	require.NoError(t, b.store.QueueSetKeyWeight(ctx, "mail", "customer-42", 3))
	require.NoError(t, b.store.QueueSetKeyWeight(ctx, "mail", "customer-7", 2))
	require.NoError(t, b.store.QueueSetKeyWeight(ctx, "alpha", "customer-42", 5))
	require.NoError(t, b.store.QueueSetKeyWeight(ctx, "mail", "customer-42", 4))
	list := func() []*store.KeyWeight {
		ws, err := b.store.QueueKeyWeights(ctx)
		require.NoError(t, err)
		return ws
	}
	require.Equal(t, []*store.KeyWeight{{Queue: "alpha", Key: "customer-42", Weight: 5},
		{Queue: "mail", Key: "customer-42", Weight: 4}, {Queue: "mail", Key: "customer-7", Weight: 2}}, list())
	require.NoError(t, b.store.QueueSetKeyWeight(ctx, "mail", "customer-42", 1))
	require.NoError(t, b.store.QueueSetKeyWeight(ctx, "mail", "customer-7", 0))
	require.NoError(t, b.store.QueueSetKeyWeight(ctx, "mail", "nobody", 0))
	require.Equal(t, []*store.KeyWeight{{Queue: "alpha", Key: "customer-42", Weight: 5}}, list())
	require.ErrorIs(t, b.store.QueueSetKeyWeight(ctx, "mail", "x", -1), store.ErrInvalid)
	require.ErrorIs(t, b.store.QueueSetKeyWeight(ctx, "mail", "x", store.MaxKeyWeight+1), store.ErrInvalid)
}

// A fair claim returns its jobs in the order it picked them (round robin between keys), not
// by id: a process that claims ahead of its free slots starts them in that order, so the
// quiet key's job is not run after every flood job the same claim took.
func fairClaimOrderIsThePick(t *testing.T, b *bundle) {
	flood := b.flood(t, "tenant-a", 5)
	quiet := b.flood(t, "tenant-b", 1)
	got, _ := b.claimHold(t, defaultQueue, 4)
	require.Equal(t, []string{flood[0].ID, quiet[0].ID, flood[1].ID, flood[2].ID}, ids(got),
		"tenant-a's oldest, tenant-b's, then tenant-a's next")
}
