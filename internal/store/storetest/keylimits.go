package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// testKeyLimits: caps and rate limits per fairness key, of a queue or a kind, fleet-wide.
func testKeyLimits(t *testing.T, opener Opener) {
	parallel(t, opener, "QueueCapPerKey", keyCapQueue)
	parallel(t, opener, "KindCapPerKey", keyCapKind)
	parallel(t, opener, "QueueScopeOnly", keyCapQueueScope)
	parallel(t, opener, "KeysAtTheirCapGoBack", keyCapGoesBack)
	parallel(t, opener, "ConcurrentClaims", keyCapConcurrent)
	parallel(t, opener, "RatePerKey", keyRate)
	parallel(t, opener, "Settings", keySettings)
}

func (b *bundle) setCapPerKey(t *testing.T, scope store.LimitScope, name string, n int) {
	t.Helper()
	require.NoError(t, b.store.LimitSet(t.Context(), &store.LimitParams{Scope: scope, Name: name, MaxRunning: n, PerKey: true}))
}

func (b *bundle) setRatePerKey(t *testing.T, scope store.LimitScope, name string, limit int, period time.Duration) {
	t.Helper()
	require.NoError(t, b.store.RateSet(t.Context(), &store.RateParams{Scope: scope, Name: name,
		Rate: store.Rate{Limit: limit, Period: period}, PerKey: true}))
}

// runningPerKey counts the running jobs per fairness key of queue ("" for any).
func (b *bundle) runningPerKey(t *testing.T, queue string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, j := range b.listAll(t, store.ListParams{States: []hoppertype.JobState{hoppertype.StateRunning}}) {
		if queue == "" || j.Queue == queue {
			out[j.FairnessKey]++
		}
	}
	return out
}

// A queue's cap per key bounds each key's running jobs; other keys and the unkeyed jobs still
// fill the claim; a key at its cap holds the claim back (Capped) until one of its jobs ends.
func keyCapQueue(t *testing.T, b *bundle) {
	b.flood(t, "tenant-a", 10)
	b.flood(t, "tenant-b", 10)
	for range 5 {
		b.insert(t)
	}
	b.setCapPerKey(t, store.LimitQueue, defaultQueue, 2)
	got, hold := b.claimHold(t, defaultQueue, 20)
	require.Equal(t, map[string]int{"tenant-a": 2, "tenant-b": 2, "": 5}, keysOf(got))
	require.True(t, hold.Capped, "jobs of keys at their cap wait")
	require.False(t, hold.Restricted, "a cap per key does not keep a claim from claiming ahead")

	got, hold = b.claimHold(t, defaultQueue, 20)
	require.Empty(t, got, "every key at its cap")
	require.True(t, hold.Capped)
	require.Zero(t, hold.Wait, "a cap, not a rate: no known time")

	var a *hoppertype.JobRow
	for _, j := range b.listAll(t, store.ListParams{States: []hoppertype.JobState{hoppertype.StateRunning}}) {
		if j.FairnessKey == "tenant-a" {
			a = j
		}
	}
	require.NoError(t, b.finish(t, finishing(a, hoppertype.StateCompleted)))
	require.Equal(t, map[string]int{"tenant-a": 1}, keysOf(b.claim(t, defaultQueue, 20)), "a finished job frees its key one slot")

	b.setCapPerKey(t, store.LimitQueue, defaultQueue, 0)
	require.Equal(t, map[string]int{"tenant-a": 7, "tenant-b": 8}, keysOf(b.claim(t, defaultQueue, 20)), "removed: no bound")
}

// A kind's cap per key bounds the running jobs of the kind per key, across queues; the key's
// jobs of other kinds are not bound.
func keyCapKind(t *testing.T, b *bundle) {
	b.flood(t, "tenant-a", 3, withKind("pdf"))
	b.flood(t, "tenant-a", 3, withKind("mail"))
	b.flood(t, "tenant-b", 3, withKind("pdf"))
	other := b.flood(t, "tenant-a", 2, withKind("pdf"), inQueue("other"))
	b.setCapPerKey(t, store.LimitKind, "pdf", 1)

	got := b.claim(t, defaultQueue, 20)
	perKind := map[string]int{}
	for _, j := range got {
		perKind[j.FairnessKey+"/"+j.Kind]++
	}
	require.Equal(t, map[string]int{"tenant-a/pdf": 1, "tenant-a/mail": 3, "tenant-b/pdf": 1}, perKind)
	require.Empty(t, b.claim(t, "other", 5), "tenant-a runs a pdf job in another queue: the kind's cap is fleet-wide")
	b.insert(t, withFairness("tenant-c"), withKind("pdf"), inQueue("other"))
	require.Equal(t, map[string]int{"tenant-c": 1}, keysOf(b.claim(t, "other", 5)))
	for _, j := range got {
		if j.FairnessKey == "tenant-a" && j.Kind == "pdf" {
			require.NoError(t, b.finish(t, finishing(j, hoppertype.StateCompleted)))
		}
	}
	require.Equal(t, []string{other[0].ID}, ids(b.claim(t, "other", 5)), "tenant-a's pdf slot is free again")
}

// A queue's cap per key binds that queue's jobs only.
func keyCapQueueScope(t *testing.T, b *bundle) {
	b.flood(t, "tenant-a", 3, inQueue("q1"))
	b.flood(t, "tenant-a", 3, inQueue("q2"))
	b.setCapPerKey(t, store.LimitQueue, "q1", 1)
	require.Len(t, b.claim(t, "q1", 5), 1)
	require.Len(t, b.claim(t, "q2", 5), 3, "another queue's cap per key does not bind q2")
	require.Empty(t, b.claim(t, "q1", 5))
}

// Keys at their cap do not hold the places of the next claims' reads: a claim that finds the
// keys it read all at their cap sends them to the back, and the next one reads the keys after
// them, so a key far down the order gets its freed slot.
func keyCapGoesBack(t *testing.T, b *bundle) {
	const keys = 40 // more than one claim of one reads (store.FairKeysPerClaim(1))
	require.Greater(t, keys, store.FairKeysPerClaim(1))
	var ps []*store.InsertParams
	for i := range keys {
		for range 2 {
			ps = append(ps, params(t, withFairness(fmt.Sprintf("tenant-%02d", i))))
		}
	}
	b.insertMany(t, ps...)
	b.setCapPerKey(t, store.LimitQueue, defaultQueue, 1)
	seen := map[string]bool{}
	for range keys {
		j := b.claimOne(t, defaultQueue)
		require.False(t, seen[j.FairnessKey], "one job per key")
		seen[j.FairnessKey] = true
	}
	var last *hoppertype.JobRow
	for _, j := range b.listAll(t, store.ListParams{States: []hoppertype.JobState{hoppertype.StateRunning}}) {
		if j.FairnessKey == fmt.Sprintf("tenant-%02d", keys-2) {
			last = j
		}
	}
	require.NoError(t, b.finish(t, finishing(last, hoppertype.StateCompleted)))
	var got []*hoppertype.JobRow
	for range keys {
		if got = b.claim(t, defaultQueue, 1); len(got) > 0 {
			break
		}
	}
	require.Len(t, got, 1, "the freed key is reached within a round of the keys")
	require.Equal(t, last.FairnessKey, got[0].FairnessKey)
}

// Claims racing from several store handles (processes) never run more than the cap of any
// key at once, for a queue's cap per key and for a kind's.
func keyCapConcurrent(t *testing.T, b *bundle) {
	const rounds, claimers, limit, keys, perKey, capPerKey = 6, 8, 5, 12, 6, 2
	handles := []store.Store{b.store}
	for range 2 {
		h := b.open()
		t.Cleanup(func() { h.Close() })
		handles = append(handles, h)
	}
	for r := range rounds {
		queue, kind := fmt.Sprintf("race-%d", r), fmt.Sprintf("pdf-%d", r)
		var ps []*store.InsertParams
		for k := range keys {
			for range perKey {
				ps = append(ps, params(t, inQueue(queue), withKind(kind), withFairness(fmt.Sprintf("t%d", k))))
			}
		}
		b.insertMany(t, ps...)
		if r%2 == 0 {
			b.setCapPerKey(t, store.LimitQueue, queue, capPerKey)
		} else {
			b.setCapPerKey(t, store.LimitKind, kind, capPerKey)
		}
		for pass := range 2 { // the second pass races claims against keys already at their cap
			var wg sync.WaitGroup
			var mu sync.Mutex
			var errs []error
			start := make(chan struct{})
			for w := range claimers {
				st := handles[w%len(handles)]
				wg.Go(func() {
					<-start
					_, _, err := st.JobClaim(t.Context(), &store.ClaimParams{Queue: queue, Limit: limit,
						WorkerID: fmt.Sprintf("w%d", w), LeaseDuration: defaultLease})
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
					}
				})
			}
			close(start)
			wg.Wait()
			require.Empty(t, errs)
			running := b.runningPerKey(t, queue)
			for k, n := range running {
				require.LessOrEqual(t, n, capPerKey, "round %d pass %d: key %s", r, pass, k)
			}
			require.NotEmpty(t, running)
		}
	}
}

// A rate limit per key lets each key start Limit jobs per Period; the unkeyed jobs are not
// bound; a claim held by it says when the next start is due.
func keyRate(t *testing.T, b *bundle) {
	b.flood(t, "tenant-a", 10)
	b.flood(t, "tenant-b", 10)
	for range 3 {
		b.insert(t)
	}
	b.setRatePerKey(t, store.LimitQueue, defaultQueue, 2, time.Second)
	got, hold := b.claimHold(t, defaultQueue, 20)
	require.Equal(t, map[string]int{"tenant-a": 2, "tenant-b": 2, "": 3}, keysOf(got), "a full bucket per key")
	require.True(t, hold.Capped)
	require.False(t, hold.QueueWide)
	require.Equal(t, time.Second/2, hold.Wait, "each key's next start is half a second away")

	got, hold = b.claimHold(t, defaultQueue, 20)
	require.Empty(t, got)
	require.True(t, hold.Capped)
	// Finishing frees nothing: the limit counts starts.
	for _, j := range b.listAll(t, store.ListParams{States: []hoppertype.JobState{hoppertype.StateRunning}}) {
		require.NoError(t, b.finish(t, finishing(j, hoppertype.StateCompleted)))
	}
	require.Empty(t, b.claim(t, defaultQueue, 20))

	b.clock.Advance(500 * time.Millisecond)
	require.Equal(t, map[string]int{"tenant-a": 1, "tenant-b": 1}, keysOf(b.claim(t, defaultQueue, 20)))
	b.clock.Advance(10 * time.Second)
	require.Equal(t, map[string]int{"tenant-a": 2, "tenant-b": 2}, keysOf(b.claim(t, defaultQueue, 20)),
		"a bucket holds no more than Limit")

	// A kind's rate per key, across queues.
	b.flood(t, "tenant-c", 3, withKind("pdf"), inQueue("q1"))
	b.flood(t, "tenant-c", 3, withKind("pdf"), inQueue("q2"))
	b.setRatePerKey(t, store.LimitKind, "pdf", 1, time.Minute)
	require.Len(t, b.claim(t, "q1", 5), 1)
	require.Empty(t, b.claim(t, "q2", 5), "the kind's bucket of tenant-c is empty in every queue")
	b.setRatePerKey(t, store.LimitKind, "pdf", 0, 0)
	require.Len(t, b.claim(t, "q2", 5), 3, "removed: no bound")
}

// The settings per key are listed with the queue's and kind's other settings, and keep a kind's
// row while set.
func keySettings(t *testing.T, b *bundle) {
	b.setCapPerKey(t, store.LimitQueue, "mail", 3)
	b.setRatePerKey(t, store.LimitQueue, "mail", 10, time.Second)
	b.setCapPerKey(t, store.LimitKind, "pdf", 2)
	b.setRatePerKey(t, store.LimitKind, "pdf", 5, time.Minute)
	qs, err := b.store.QueueList(t.Context())
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, 3, qs[0].CapPerKey)
	require.Equal(t, store.Rate{Limit: 10, Period: time.Second}, qs[0].RatePerKey)
	ks, err := b.store.KindList(t.Context())
	require.NoError(t, err)
	require.Len(t, ks, 1)
	require.Equal(t, 2, ks[0].CapPerKey)
	require.Equal(t, store.Rate{Limit: 5, Period: time.Minute}, ks[0].RatePerKey)
	ls, err := b.store.LimitList(t.Context())
	require.NoError(t, err)
	require.Empty(t, ls, "caps per key are not fleet-wide caps")

	b.setCapPerKey(t, store.LimitKind, "pdf", 0)
	ks, err = b.store.KindList(t.Context())
	require.NoError(t, err)
	require.Len(t, ks, 1, "the rate per key keeps the row")
	b.setRatePerKey(t, store.LimitKind, "pdf", 0, 0)
	ks, err = b.store.KindList(t.Context())
	require.NoError(t, err)
	require.Empty(t, ks, "no setting left: the row goes")
}

// KeyBucketRows counts the stored buckets of the rate limits per key.
type KeyBucketRows func(t *testing.T, st store.Store) int

// RunKeyBuckets checks that the buckets of a rate limit per key do not grow without bound: a
// key's bucket is stored only while it is not full, and claims delete the buckets that are
// full again, at least as many as they add.
func RunKeyBuckets(t *testing.T, opener Opener, rows KeyBucketRows) {
	t.Helper()
	b := setup(t, opener)
	b.setRatePerKey(t, store.LimitQueue, defaultQueue, 1, time.Second)
	batch := func(from, n int) {
		var ps []*store.InsertParams
		for i := range n {
			ps = append(ps, params(t, withFairness(fmt.Sprintf("k%04d", from+i))))
		}
		b.insertMany(t, ps...)
	}
	batch(0, 200)
	for range 20 {
		require.Len(t, b.claim(t, defaultQueue, 10), 10)
	}
	require.Equal(t, 200, rows(t, b.store), "one bucket per key that started a job within the period")

	// A period later every bucket is full again: the claims of other keys delete them.
	b.clock.Advance(2 * time.Second)
	batch(1000, 100)
	for range 10 {
		require.Len(t, b.claim(t, defaultQueue, 10), 10)
	}
	require.Equal(t, 100, rows(t, b.store), "each claim deleted up to KeyBucketSweep(10) full buckets: all 200")

	b.clock.Advance(2 * time.Second)
	batch(2000, 50)
	for range 5 {
		require.Len(t, b.claim(t, defaultQueue, 10), 10)
	}
	require.Equal(t, 50, rows(t, b.store), "the stale buckets are gone")
}
