// Package lease keeps leases alive. Every component that holds leases renews them with one
// Keeper: the engine for the jobs it runs, a remote worker for its own, in stream and poll
// mode alike (the server renews no lease for a stream). They share the cadence (a third of the
// shortest lease held, so a lease a handler shortened never lapses between renewals), the
// fixed beat (a slow renewal does not push the next one later) and the retry rule (a failed
// renewal is retried with backoff, never later than the cadence).
package lease

import (
	"context"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
)

// MinCadence bounds how often a Keeper renews, whatever the leases.
const MinCadence = time.Millisecond

// Keeper renews a set of leases until its context ends. Its zero value is not ready: set
// Shortest, Renew and Retry.
type Keeper struct {
	// Clock paces the renewals (default the wall clock).
	Clock clock.Clock
	// Shortest is the shortest lease held now; renewals run every third of it.
	Shortest func() time.Duration
	// Renew renews every lease held now, each for its own duration, and deals with those
	// found lost. renewed says it asked (there was something to renew); an error is the
	// renewal's as a whole (the store or the server is unreachable), retried with backoff.
	Renew func(ctx context.Context) (renewed bool, err error)
	// Retry spaces the retries of failed renewals and logs their state changes.
	Retry *backoff.Tracker

	once      sync.Once
	shortened chan struct{} // a lease got shorter (buffered 1)
}

// Shortened tells the keeper that a lease got shorter than it may have planned for (a
// handler called ExtendLease with a short duration), so its next renewal comes in time.
func (k *Keeper) Shortened() {
	select {
	case k.wake() <- struct{}{}:
	default:
	}
}

func (k *Keeper) wake() chan struct{} {
	k.once.Do(func() { k.shortened = make(chan struct{}, 1) })
	return k.shortened
}

// Run renews until ctx ends.
func (k *Keeper) Run(ctx context.Context) {
	clk := k.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	cadence := func() time.Duration { return max(k.Shortest()/3, MinCadence) }
	last := clk.Now()         // the last beat
	var retryIn time.Duration // after a failed renewal: the backoff
	for {
		// A fixed beat, like a ticker: a slow renewal does not push the next one later; one
		// already due (the process stalled) runs at once.
		next := last.Add(cadence())
		if now := clk.Now(); next.Before(now) {
			next = now
		}
		if retryIn > 0 {
			next = clk.Now().Add(min(retryIn, cadence()))
		}
		if !k.sleepUntil(ctx, clk, &next, last, cadence) {
			return
		}
		last = next
		renewed, err := k.Renew(ctx)
		retryIn = 0
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			retryIn = k.Retry.Fail(err)
		case renewed:
			k.Retry.Succeed()
		}
	}
}

// sleepUntil waits until *next; a lease shortened meanwhile brings *next forward to a third
// of the new shortest lease after the last beat. It reports false when ctx ended.
func (k *Keeper) sleepUntil(ctx context.Context, clk clock.Clock, next *time.Time, last time.Time,
	cadence func() time.Duration) bool {
	for {
		t := clock.NewTimerAt(clk, *next)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C():
			return true
		case <-k.wake():
			t.Stop()
			if sooner := last.Add(cadence()); sooner.Before(*next) {
				*next = sooner
			}
		}
	}
}
