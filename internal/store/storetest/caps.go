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

// Contract 8: "at most N running across the fleet", per queue and per kind.
func testCaps(t *testing.T, opener Opener) {
	parallel(t, opener, "QueueCap", capsQueue)
	parallel(t, opener, "KindCap", capsKind)
	parallel(t, opener, "ConcurrentClaims", capsConcurrent)
	parallel(t, opener, "ConcurrentKindClaims", capsConcurrentKind)
	parallel(t, opener, "List", capsList)
	parallel(t, opener, "Ahead", capsAhead)
}

func (b *bundle) setLimit(t *testing.T, scope store.LimitScope, name string, n int) {
	t.Helper()
	require.NoError(t, b.store.LimitSet(t.Context(), &store.LimitParams{Scope: scope, Name: name, MaxRunning: n}))
}

func capsQueue(t *testing.T, b *bundle) {
	for range 5 {
		b.insert(t)
	}
	b.setLimit(t, store.LimitQueue, defaultQueue, 2)
	first := b.claim(t, defaultQueue, 10)
	require.Len(t, first, 2, "the cap bounds one claim")
	require.Empty(t, b.claim(t, defaultQueue, 10), "and later claims while both run")
	require.NoError(t, b.finish(t, finishing(first[0], hoppertype.StateCompleted)))
	require.Len(t, b.claim(t, defaultQueue, 10), 1, "a finished job frees one slot")
	b.setLimit(t, store.LimitQueue, defaultQueue, 0)
	require.Len(t, b.claim(t, defaultQueue, 10), 2, "a removed cap bounds nothing")
}

func capsKind(t *testing.T, b *bundle) {
	for range 4 {
		b.insert(t, withKind("pdf"))
	}
	b.insert(t, withKind("mail"), withPriority(-1))
	b.insert(t, withKind("mail"), withPriority(-1))
	b.setLimit(t, store.LimitKind, "pdf", 1)
	got := b.claim(t, defaultQueue, 10)
	kinds := map[string]int{}
	for _, j := range got {
		kinds[j.Kind]++
	}
	require.Equal(t, map[string]int{"pdf": 1, "mail": 2}, kinds, "capped kind: one; others: all")
	require.Empty(t, b.claim(t, defaultQueue, 10))
	pdf := got[0]
	require.Equal(t, "pdf", pdf.Kind, "claim order is kept across kinds (priority first)")
	require.NoError(t, b.finish(t, finishing(pdf, hoppertype.StateCompleted)))
	next := b.claim(t, defaultQueue, 10)
	require.Len(t, next, 1)
	require.Equal(t, "pdf", next[0].Kind)
}

// Claims racing from many workers never exceed the cap together.
func capsConcurrent(t *testing.T, b *bundle) {
	for range 40 {
		b.insert(t)
	}
	b.setLimit(t, store.LimitQueue, defaultQueue, 7)
	var mu sync.Mutex
	total := 0
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs, _, err := b.store.JobClaim(t.Context(), &store.ClaimParams{Queue: defaultQueue, Limit: 5,
				WorkerID: "w" + string(rune('a'+w)), LeaseDuration: defaultLease})
			require.NoError(t, err)
			mu.Lock()
			total += len(jobs)
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Equal(t, 7, total)
}

// Claims racing from many workers never take more of a capped kind than its cap together,
// whether they ask for the kind or for any kind. Each round races in a queue and kind of its
// own, all claimers released at once; an unlocked cap overshoots in almost every round.
func capsConcurrentKind(t *testing.T, b *bundle) {
	const rounds, claimers, limit, maxRunning = 10, 12, 5, 7
	for r := range rounds {
		queue, kind := fmt.Sprintf("race-%d", r), fmt.Sprintf("pdf-%d", r)
		ps := make([]*store.InsertParams, 0, 50)
		for range 40 {
			ps = append(ps, params(t, inQueue(queue), withKind(kind)))
		}
		for range 10 {
			ps = append(ps, params(t, inQueue(queue), withKind("mail"), withPriority(-1)))
		}
		b.insertMany(t, ps...)
		b.setLimit(t, store.LimitKind, kind, maxRunning)

		taken := b.raceClaims(t, queue, kind, claimers, limit)
		require.Equal(t, maxRunning, taken[kind], "round %d: running jobs of the capped kind", r)
	}
}

func capsList(t *testing.T, b *bundle) {
	b.setLimit(t, store.LimitKind, "pdf", 3)
	b.setLimit(t, store.LimitQueue, "mail", 5)
	b.setLimit(t, store.LimitKind, "gone", 1)
	b.setLimit(t, store.LimitKind, "gone", 0)
	ls, err := b.store.LimitList(t.Context())
	require.NoError(t, err)
	require.Equal(t, []*store.LimitParams{
		{Scope: store.LimitQueue, Name: "mail", MaxRunning: 5},
		{Scope: store.LimitKind, Name: "pdf", MaxRunning: 3},
	}, ls)
	require.Error(t, b.store.LimitSet(t.Context(), &store.LimitParams{Scope: "galaxy", Name: "x", MaxRunning: 1}))
}

// raceClaims releases claimers claims of up to limit jobs of queue at once, every other one
// asking only for kind and the others for any kind, and counts the jobs they took per kind.
func (b *bundle) raceClaims(t *testing.T, queue, kind string, claimers, limit int) map[string]int {
	t.Helper()
	var mu sync.Mutex
	taken := map[string]int{}
	var errs []error
	start := make(chan struct{})
	var wg sync.WaitGroup
	for w := range claimers {
		p := &store.ClaimParams{Queue: queue, Limit: limit, WorkerID: fmt.Sprintf("w%d", w), LeaseDuration: defaultLease}
		if w%2 == 0 {
			p.Kinds = []string{kind}
		}
		wg.Go(func() {
			<-start
			jobs, _, err := b.store.JobClaim(t.Context(), p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			for _, j := range jobs {
				taken[j.Kind]++
			}
		})
	}
	close(start)
	wg.Wait()
	require.Empty(t, errs)
	return taken
}

// A claim asks for some jobs ahead of its free slots (ClaimParams.Ahead). No cap, rate limit or
// disabled kind applying, it takes them all; when one applies (even one it does not reach),
// it takes none of them and says so (Hold.Restricted), so that jobs claimed ahead never hold a
// cap's slots or a rate limit's starts unused.
func capsAhead(t *testing.T, b *bundle) {
	for range 30 {
		b.insert(t)
	}
	claim := func(limit, ahead int) ([]*hoppertype.JobRow, store.Hold) {
		t.Helper()
		jobs, hold, err := b.store.JobClaim(t.Context(), &store.ClaimParams{Queue: defaultQueue, Limit: limit, Ahead: ahead,
			WorkerID: workerA, LeaseDuration: defaultLease})
		require.NoError(t, err)
		return jobs, hold
	}
	jobs, hold := claim(5, 3)
	require.Len(t, jobs, 5, "nothing applies: the jobs ahead too")
	require.False(t, hold.Restricted)

	b.setLimit(t, store.LimitQueue, defaultQueue, 100)
	jobs, hold = claim(5, 3)
	require.Len(t, jobs, 2, "a queue cap applies, even far from reached: none ahead")
	require.True(t, hold.Restricted)
	require.False(t, hold.Capped, "held short of what it asked without the jobs ahead? no")
	b.setLimit(t, store.LimitQueue, defaultQueue, 0)

	b.setRate(t, store.LimitKind, defaultKind, 1000, time.Second)
	jobs, hold = claim(4, 3)
	require.Len(t, jobs, 1, "a kind's rate limit applies: none ahead")
	require.True(t, hold.Restricted)
	b.setRate(t, store.LimitKind, defaultKind, 0, 0)

	require.NoError(t, b.store.KindSetDisabled(t.Context(), "other-kind", true))
	jobs, hold = claim(4, 3)
	require.Len(t, jobs, 1, "a disabled kind applies: none ahead")
	require.True(t, hold.Restricted)
	require.NoError(t, b.store.KindSetDisabled(t.Context(), "other-kind", false))

	jobs, hold = claim(4, 3)
	require.Len(t, jobs, 4, "settings removed: the jobs ahead again")
	require.False(t, hold.Restricted)
}
