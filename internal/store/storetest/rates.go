package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Rate limits: at most N job starts per period for a queue or a kind, fleet-wide, as a token
// bucket of N refilled at N per period, kept in the store and charged by the claim.
func testRates(t *testing.T, opener Opener) {
	parallel(t, opener, "Queue", ratesQueue)
	parallel(t, opener, "Kind", ratesKind)
	parallel(t, opener, "ConcurrentClaims", ratesConcurrent)
	parallel(t, opener, "WithCap", ratesWithCap)
	parallel(t, opener, "Change", ratesChange)
	parallel(t, opener, "Settings", ratesSettings)
	parallel(t, opener, "DisabledKind", ratesDisabledKind)
	parallel(t, opener, "HoldOnlyWhenBound", ratesHoldOnlyWhenBound)
}

func (b *bundle) setRate(t *testing.T, scope store.LimitScope, name string, limit int, period time.Duration) {
	t.Helper()
	require.NoError(t, b.store.RateSet(t.Context(), &store.RateParams{Scope: scope, Name: name,
		Rate: store.Rate{Limit: limit, Period: period}}))
}

// claimHold claims up to limit jobs of queue and returns them with the claim's Hold.
func (b *bundle) claimHold(t *testing.T, queue string, limit int) ([]*hoppertype.JobRow, store.Hold) {
	t.Helper()
	jobs, hold, err := b.store.JobClaim(t.Context(), &store.ClaimParams{Queue: queue, Limit: limit,
		WorkerID: "w1", LeaseDuration: defaultLease})
	require.NoError(t, err)
	return jobs, hold
}

func ratesQueue(t *testing.T, b *bundle) {
	for range 12 {
		b.insert(t)
	}
	b.setRate(t, store.LimitQueue, defaultQueue, 3, time.Second)
	jobs, hold := b.claimHold(t, defaultQueue, 10)
	require.Len(t, jobs, 3, "a new limit starts with a full bucket: N starts at once")
	require.True(t, hold.Capped)
	require.True(t, hold.QueueWide, "the queue's own bucket is empty")
	require.Equal(t, time.Second/3+1, hold.Wait, "the next start is a third of a second away (rounded up to the ns)")

	jobs, hold = b.claimHold(t, defaultQueue, 10)
	require.Empty(t, jobs, "no start before the next token")
	require.True(t, hold.QueueWide)

	// Finishing jobs frees nothing: the limit counts starts, not running jobs.
	require.NoError(t, b.finish(t, finishing(b.get(t, jobsOf(t, b, hoppertype.StateRunning)[0]), hoppertype.StateCompleted)))
	require.Empty(t, b.claim(t, defaultQueue, 10))

	b.clock.Advance(340 * time.Millisecond)
	jobs, hold = b.claimHold(t, defaultQueue, 10)
	require.Len(t, jobs, 1, "one start a third of a second later")
	require.True(t, hold.QueueWide)
	require.Equal(t, 330*time.Millisecond, hold.Wait.Round(10*time.Millisecond),
		"the part of a token left over counts towards the next")

	b.clock.Advance(time.Hour)
	jobs, _ = b.claimHold(t, defaultQueue, 10)
	require.Len(t, jobs, 3, "an idle bucket fills up to N, no further")

	// A claim that asks for less than the bucket holds is not held back.
	b.clock.Advance(time.Hour)
	jobs, hold = b.claimHold(t, defaultQueue, 2)
	require.Len(t, jobs, 2)
	require.Equal(t, store.Hold{Restricted: true}, hold, "the limit applies but holds nothing back")

	b.setRate(t, store.LimitQueue, defaultQueue, 0, 0)
	require.Len(t, b.claim(t, defaultQueue, 10), 3, "a removed limit holds nothing back")
}

// jobsOf returns the ids of the jobs in state.
func jobsOf(t *testing.T, b *bundle, state hoppertype.JobState) []string {
	t.Helper()
	return ids(b.listAll(t, store.ListParams{States: []hoppertype.JobState{state}}))
}

func ratesKind(t *testing.T, b *bundle) {
	for range 4 {
		b.insert(t, withKind("pdf"))
	}
	b.insert(t, withKind("mail"), withPriority(-1))
	b.insert(t, withKind("mail"), withPriority(-1))
	b.setRate(t, store.LimitKind, "pdf", 2, time.Minute)
	jobs, hold := b.claimHold(t, defaultQueue, 10)
	kinds := map[string]int{}
	for _, j := range jobs {
		kinds[j.Kind]++
	}
	require.Equal(t, map[string]int{"pdf": 2, "mail": 2}, kinds, "rate-limited kind: its bucket; others: all")
	require.Equal(t, "pdf", jobs[0].Kind, "claim order is kept across kinds (priority first)")
	require.True(t, hold.Capped)
	require.False(t, hold.QueueWide, "other kinds of the queue may still start")
	require.Equal(t, 30*time.Second, hold.Wait)

	require.Empty(t, b.claim(t, defaultQueue, 10))
	b.clock.Advance(30 * time.Second)
	next := b.claim(t, defaultQueue, 10)
	require.Len(t, next, 1)
	require.Equal(t, "pdf", next[0].Kind)

	// A claim of other kinds only is not held back by the limit, and charges nothing.
	b.clock.Advance(time.Hour)
	b.insert(t, withKind("mail"))
	jobs = b.claimAs(t, &store.ClaimParams{Queue: defaultQueue, Kinds: []string{"mail"},
		Limit: 10, WorkerID: "w1", LeaseDuration: defaultLease})
	require.Len(t, jobs, 1)
	require.Len(t, b.claim(t, defaultQueue, 10), 1, "the pdf bucket refilled (one pdf job is left)")
}

// Claims racing from many workers never start more than the bucket holds together, whether
// they ask for the kind or for any kind.
func ratesConcurrent(t *testing.T, b *bundle) {
	const rounds, claimers, limit, rate = 6, 12, 5, 7
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
		if r%2 == 0 {
			b.setRate(t, store.LimitKind, kind, rate, time.Hour)
		} else {
			b.setRate(t, store.LimitQueue, queue, rate, time.Hour)
		}

		taken := b.raceClaims(t, queue, kind, claimers, limit)
		if r%2 == 0 {
			require.Equal(t, rate, taken[kind], "round %d: starts of the rate-limited kind", r)
			require.Equal(t, 10, taken["mail"], "round %d: the other kind is not limited", r)
		} else {
			require.Equal(t, rate, taken[kind]+taken["mail"], "round %d: starts in the rate-limited queue", r)
		}
	}
}

// A cap and a rate limit together: the lower bounds the claim, and only starts are charged.
func ratesWithCap(t *testing.T, b *bundle) {
	for range 20 {
		b.insert(t)
	}
	b.setLimit(t, store.LimitQueue, defaultQueue, 2)
	b.setRate(t, store.LimitQueue, defaultQueue, 5, time.Second)
	jobs, hold := b.claimHold(t, defaultQueue, 10)
	require.Len(t, jobs, 2, "the cap is the lower")
	require.True(t, hold.Capped)
	require.False(t, hold.QueueWide, "the bucket still holds starts")
	require.Zero(t, hold.Wait, "a cap frees up as jobs end, not with time")
	for _, j := range jobs {
		require.NoError(t, b.finish(t, finishing(j, hoppertype.StateCompleted)))
	}
	require.Len(t, b.claim(t, defaultQueue, 10), 2)
	for _, j := range b.listAll(t, store.ListParams{States: []hoppertype.JobState{hoppertype.StateRunning}}) {
		require.NoError(t, b.finish(t, finishing(j, hoppertype.StateCompleted)))
	}
	jobs, hold = b.claimHold(t, defaultQueue, 10)
	require.Len(t, jobs, 1, "5 starts: 2 + 2 + 1")
	require.True(t, hold.QueueWide)
}

// Changing a limit keeps the starts its bucket holds, up to the new limit.
func ratesChange(t *testing.T, b *bundle) {
	for range 30 {
		b.insert(t)
	}
	b.setRate(t, store.LimitQueue, defaultQueue, 10, time.Second)
	require.Len(t, b.claim(t, defaultQueue, 8), 8)
	b.setRate(t, store.LimitQueue, defaultQueue, 5, time.Second)
	require.Len(t, b.claim(t, defaultQueue, 10), 2, "the 2 starts left, not a new full bucket")
	b.setRate(t, store.LimitQueue, defaultQueue, 100, time.Second)
	require.Empty(t, b.claim(t, defaultQueue, 10), "a raised limit refills at its rate, from what is left")
	b.clock.Advance(50 * time.Millisecond)
	require.Len(t, b.claim(t, defaultQueue, 10), 5, "100/s: 5 starts in 50 ms")
	b.setRate(t, store.LimitQueue, defaultQueue, 10, time.Second)
	b.clock.Advance(time.Hour)
	b.setRate(t, store.LimitQueue, defaultQueue, 100, time.Second)
	require.Len(t, b.claim(t, defaultQueue, 50), 10, "a bucket filled under 10/1s holds 10 starts when the limit is raised")
}

func ratesSettings(t *testing.T, b *bundle) {
	ctx := t.Context()
	b.setRate(t, store.LimitQueue, "mail", 100, time.Second)
	b.setRate(t, store.LimitKind, "pdf", 5000, time.Hour)
	b.setRate(t, store.LimitKind, "thumb", 1, time.Minute)
	b.setLimit(t, store.LimitKind, "thumb", 4)

	qs, e := b.store.QueueList(ctx)
	require.NoError(t, e)
	rates := map[string]store.Rate{}
	for _, q := range qs {
		rates[q.Name] = q.Rate
	}
	require.Equal(t, store.Rate{Limit: 100, Period: time.Second}, rates["mail"])

	kinds := func() map[string]*store.KindSettings {
		ks, e := b.store.KindList(ctx)
		require.NoError(t, e)
		out := map[string]*store.KindSettings{}
		for _, k := range ks {
			out[k.Name] = k
		}
		return out
	}
	got := kinds()
	require.Equal(t, store.Rate{Limit: 5000, Period: time.Hour}, got["pdf"].Rate)
	require.Equal(t, &store.KindSettings{Name: "thumb", MaxRunning: 4, Rate: store.Rate{Limit: 1, Period: time.Minute}}, got["thumb"])

	b.setRate(t, store.LimitKind, "pdf", 0, 0)
	b.setLimit(t, store.LimitKind, "thumb", 0)
	require.NoError(t, b.store.KindSetDisabled(ctx, "thumb", true))
	require.NoError(t, b.store.KindSetDisabled(ctx, "thumb", false))
	got = kinds()
	require.NotContains(t, got, "pdf", "a kind without settings has no row")
	require.Equal(t, &store.KindSettings{Name: "thumb", Rate: store.Rate{Limit: 1, Period: time.Minute}}, got["thumb"],
		"removing the cap, or enabling the kind, keeps its rate limit")
	b.setRate(t, store.LimitKind, "thumb", 0, 0)
	require.NotContains(t, kinds(), "thumb")

	b.setRate(t, store.LimitQueue, "mail", 0, 0)
	qs, e = b.store.QueueList(ctx)
	require.NoError(t, e)
	for _, q := range qs {
		require.Zero(t, q.Rate, "queue %s", q.Name)
	}
}

// A disabled kind's rate limit holds nothing back (its jobs cannot start anyway) and is kept.
func ratesDisabledKind(t *testing.T, b *bundle) {
	b.insert(t, withKind("pdf"))
	b.insert(t, withKind("mail"))
	b.setRate(t, store.LimitKind, "pdf", 1, time.Hour)
	require.NoError(t, b.store.KindSetDisabled(t.Context(), "pdf", true))
	jobs, hold := b.claimHold(t, defaultQueue, 10)
	require.Len(t, jobs, 1)
	require.Equal(t, "mail", jobs[0].Kind)
	require.Zero(t, hold.Wait)
	require.NoError(t, b.store.KindSetDisabled(t.Context(), "pdf", false))
	require.Len(t, b.claim(t, defaultQueue, 10), 1, "enabled: its bucket is still full")
}

// A claim is held (Capped) only when a bound kept it from jobs that wait, so that a producer
// with nothing to do does not claim again and again: not when the queue ran dry under a
// bound it never reached, and not for a kind with no job waiting.
func ratesHoldOnlyWhenBound(t *testing.T, b *bundle) {
	b.setLimit(t, store.LimitQueue, defaultQueue, 20)
	b.setRate(t, store.LimitKind, "sms", 1, time.Hour)
	b.insert(t)
	jobs, hold := b.claimHold(t, defaultQueue, 10)
	require.Len(t, jobs, 1)
	require.Equal(t, store.Hold{Restricted: true}, hold, "the queue ran dry: no bound held the claim")

	b.insert(t, withKind("sms"))
	b.insert(t, withKind("sms"))
	jobs, hold = b.claimHold(t, defaultQueue, 10)
	require.Len(t, jobs, 1, "one start in the sms bucket")
	require.True(t, hold.Capped, "the other sms job waits for the bucket")
	require.Equal(t, time.Hour, hold.Wait)

	jobs, hold = b.claimHold(t, "other", 10)
	require.Empty(t, jobs)
	require.Equal(t, store.Hold{Restricted: true}, hold, "an empty bucket holds nothing back where no job of its kind waits")
	b.insert(t, inQueue("other"))
	jobs, hold = b.claimHold(t, "other", 10)
	require.Len(t, jobs, 1)
	require.Equal(t, store.Hold{Restricted: true}, hold)
}
