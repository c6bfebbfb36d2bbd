package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Disabled kinds (docs/flow-control.md): no claim takes a queued job of a disabled kind,
// whichever way it claims (any kind, a kinds filter, under a queue's or a kind's cap). Its
// jobs stay queued, enqueues still succeed, running ones finish, and enabling the kind makes
// them claimable again.
func testKinds(t *testing.T, opener Opener) {
	parallel(t, opener, "DisabledNotClaimed", kindsDisabledNotClaimed)
	parallel(t, opener, "DisabledUnderCaps", kindsDisabledUnderCaps)
	parallel(t, opener, "DisabledHoldsItsGroup", kindsDisabledHoldsItsGroup)
	parallel(t, opener, "RunningJobFinishes", kindsRunningJobFinishes)
	parallel(t, opener, "DisableRacesClaims", kindsDisableRacesClaims)
	parallel(t, opener, "Settings", kindsSettings)
}

func (b *bundle) disableKind(t *testing.T, kind string, disabled bool) {
	t.Helper()
	require.NoError(t, b.store.KindSetDisabled(t.Context(), kind, disabled))
}

// kindCounts counts claimed jobs by kind.
func kindCounts(jobs []*hoppertype.JobRow) map[string]int {
	out := map[string]int{}
	for _, j := range jobs {
		out[j.Kind]++
	}
	return out
}

func kindsDisabledNotClaimed(t *testing.T, b *bundle) {
	var pdfs []string
	for range 3 {
		pdfs = append(pdfs, b.insert(t, withKind("pdf"), withPriority(5)).ID)
	}
	mail := b.insert(t, withKind("mail"))
	b.disableKind(t, "pdf", true)
	late := b.insert(t, withKind("pdf"), withPriority(5))
	require.Equal(t, hoppertype.StateQueued, late.State, "an enqueue of a disabled kind succeeds, queued")
	pdfs = append(pdfs, late.ID)

	jobs, capLimited, err := b.store.JobClaim(t.Context(), &store.ClaimParams{Queue: defaultQueue, Limit: 10,
		WorkerID: workerA, LeaseDuration: defaultLease})
	require.NoError(t, err)
	require.Equal(t, []string{mail.ID}, ids(jobs), "other kinds are claimed, past the disabled kind's higher priorities")
	require.False(t, capLimited.Capped, "a disabled kind is not a cap: nothing frees it as jobs finish")
	require.Empty(t, b.claimAs(t, &store.ClaimParams{Queue: defaultQueue, Kinds: []string{"pdf", "mail"}, Limit: 10,
		WorkerID: workerB, LeaseDuration: defaultLease}), "nor through a kinds filter")
	for _, id := range pdfs {
		require.Equal(t, hoppertype.StateQueued, b.get(t, id).State, "a disabled kind's jobs stay queued")
	}

	b.disableKind(t, "pdf", false)
	require.ElementsMatch(t, pdfs, ids(b.claim(t, defaultQueue, 10)), "enabled: every job of the kind is claimable")
}

// A disabled kind's cap is kept but limits nothing while it is disabled; the other caps hold.
func kindsDisabledUnderCaps(t *testing.T, b *bundle) {
	for _, kind := range []string{"pdf", "mail", "sms"} {
		for range 3 {
			b.insert(t, withKind(kind))
		}
	}
	b.setLimit(t, store.LimitQueue, defaultQueue, 6)
	b.setLimit(t, store.LimitKind, "pdf", 1)
	b.setLimit(t, store.LimitKind, "sms", 5)
	b.disableKind(t, "mail", true)
	b.disableKind(t, "sms", true)
	jobs, capLimited, err := b.store.JobClaim(t.Context(), &store.ClaimParams{Queue: defaultQueue, Limit: 10,
		WorkerID: workerA, LeaseDuration: defaultLease})
	require.NoError(t, err)
	require.Equal(t, map[string]int{"pdf": 1}, kindCounts(jobs), "pdf within its cap; mail and sms disabled")
	require.True(t, capLimited.Capped)

	b.disableKind(t, "sms", false)
	require.Equal(t, map[string]int{"sms": 3}, kindCounts(b.claim(t, defaultQueue, 10)), "sms again, under its kept cap")
	b.disableKind(t, "mail", false)
	jobs = b.claim(t, defaultQueue, 10)
	require.Equal(t, map[string]int{"mail": 2}, kindCounts(jobs), "the queue's cap of 6 still holds")
}

// Jobs of a group run in order: a queued job of a disabled kind holds back the later jobs of
// its group, whatever their kind.
func kindsDisabledHoldsItsGroup(t *testing.T, b *bundle) {
	first := b.insert(t, withKind("pdf"), withGroup("customer-1"))
	second := b.insert(t, withKind("mail"), withGroup("customer-1"))
	b.disableKind(t, "pdf", true)
	require.Empty(t, b.claim(t, defaultQueue, 10))
	b.disableKind(t, "pdf", false)
	require.Equal(t, []string{first.ID}, ids(b.claim(t, defaultQueue, 10)))
	require.Equal(t, hoppertype.StateQueued, b.get(t, second.ID).State, "and its group's next job after it")
}

// Disabling a kind stops nothing that runs: its running jobs finish, report and keep their
// leases; one rescued from a lost worker goes back to the queue and waits there.
func kindsRunningJobFinishes(t *testing.T, b *bundle) {
	ctx := t.Context()
	done := b.running(t, withKind("pdf"))
	lost := b.running(t, withKind("pdf"))
	b.disableKind(t, "pdf", true)
	require.NoError(t, b.store.JobHeartbeat(ctx, &store.HeartbeatParams{ID: done.ID, Token: done.Token}))
	require.NoError(t, b.finish(t, finishing(done, hoppertype.StateCompleted)))
	require.Equal(t, hoppertype.StateCompleted, b.get(t, done.ID).State)

	b.clock.Advance(defaultLease + time.Second)
	require.Contains(t, b.rescue(t).JobIDs, lost.ID)
	require.Equal(t, hoppertype.StateQueued, b.get(t, lost.ID).State)
	require.Empty(t, b.claim(t, lost.Queue, 10), "rescued, it waits for the kind")
	b.disableKind(t, "pdf", false)
	require.Equal(t, []string{lost.ID}, ids(b.claim(t, lost.Queue, 10)))
}

// A claim that starts after KindSetDisabled returned takes no job of the kind, however many
// claims race with the change: the flag is read by each claim, not remembered.
func kindsDisableRacesClaims(t *testing.T, b *bundle) {
	ps := make([]*store.InsertParams, 0, 200)
	for i := range 200 {
		ps = append(ps, params(t, withKind([]string{"pdf", "mail"}[i%2])))
	}
	b.insertMany(t, ps...)
	var disabled atomic.Bool
	var mu sync.Mutex
	var late []string
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for range 15 {
				after := disabled.Load()
				jobs, _, err := b.store.JobClaim(t.Context(), &store.ClaimParams{Queue: defaultQueue, Limit: 3,
					WorkerID: fmt.Sprintf("w%d", w), LeaseDuration: defaultLease})
				if err != nil {
					t.Errorf("claim: %v", err)
					return
				}
				mu.Lock()
				for _, j := range jobs {
					if after && j.Kind == "pdf" {
						late = append(late, j.ID)
					}
				}
				mu.Unlock()
			}
		})
	}
	b.claim(t, defaultQueue, 2)
	b.disableKind(t, "pdf", true)
	disabled.Store(true)
	wg.Wait()
	require.Empty(t, late, "jobs of the disabled kind claimed after the change")
}

func kindsSettings(t *testing.T, b *bundle) {
	ctx := t.Context()
	b.disableKind(t, "a-off", true)
	b.disableKind(t, "a-off", true) // again: still one row
	b.setLimit(t, store.LimitKind, "b-capped", 2)
	b.disableKind(t, "c-both", true)
	b.setLimit(t, store.LimitKind, "c-both", 3)
	b.disableKind(t, "d-back", true)
	b.disableKind(t, "d-back", false)
	b.setLimit(t, store.LimitKind, "e-uncapped", 4)
	b.disableKind(t, "e-uncapped", true)
	b.setLimit(t, store.LimitKind, "e-uncapped", 0)
	require.NoError(t, b.store.KindSetDisabled(ctx, "never-seen", false), "enabling an unknown kind is fine")

	ks, err := b.store.KindList(ctx)
	require.NoError(t, err)
	require.Equal(t, []*store.KindSettings{
		{Name: "a-off", Disabled: true},
		{Name: "b-capped", MaxRunning: 2},
		{Name: "c-both", Disabled: true, MaxRunning: 3},
		{Name: "e-uncapped", Disabled: true},
	}, ks)
	ls, err := b.store.LimitList(ctx)
	require.NoError(t, err)
	require.Equal(t, []*store.LimitParams{
		{Scope: store.LimitKind, Name: "b-capped", MaxRunning: 2},
		{Scope: store.LimitKind, Name: "c-both", MaxRunning: 3},
	}, ls, "caps only")

	b.disableKind(t, "c-both", false)
	b.disableKind(t, "e-uncapped", false)
	b.setLimit(t, store.LimitKind, "b-capped", 0)
	ks, err = b.store.KindList(ctx)
	require.NoError(t, err)
	require.Equal(t, []*store.KindSettings{
		{Name: "a-off", Disabled: true},
		{Name: "c-both", MaxRunning: 3},
	}, ks, "a kind without settings has no row")
}
