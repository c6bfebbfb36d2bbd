package lease

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The keeper renews every third of the shortest lease held, follows a lease that a handler
// shortens, and retries a failed renewal sooner than the cadence.
func TestKeeperFollowsTheShortestLease(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	var mu sync.Mutex
	shortest := 30 * time.Second
	var renewals []time.Duration // since start
	renewed := make(chan struct{}, 10)
	k := Keeper{Clock: clk,
		Shortest: func() time.Duration { mu.Lock(); defer mu.Unlock(); return shortest },
		Renew: func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			renewals = append(renewals, clk.Now().Sub(start))
			renewed <- struct{}{}
			switch len(renewals) {
			case 1:
				shortest = 3 * time.Second // a handler shortened its lease
			case 3:
				return true, errors.New("unreachable")
			}
			return true, nil
		},
		Retry: backoff.New(backoff.Config{Name: "test", Clock: clk,
			Policy: hoppertype.RetryPolicy{Base: 500 * time.Millisecond, Multiplier: 2, Cap: time.Minute, Jitter: -1}})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx) }()
	defer func() { cancel(); <-done }()

	step := func(d time.Duration) {
		t.Helper()
		require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
		clk.Advance(d)
		select {
		case <-renewed:
		case <-time.After(5 * time.Second):
			t.Fatalf("no renewal after %s", d)
		}
	}
	step(10 * time.Second)       // a third of 30 s
	step(time.Second)            // a third of the shortened lease
	step(time.Second)            // this one fails
	step(500 * time.Millisecond) // retried after the backoff, sooner than the cadence
	step(time.Second)            // and back on the beat
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []time.Duration{10 * time.Second, 11 * time.Second, 12 * time.Second, 12500 * time.Millisecond,
		13500 * time.Millisecond}, renewals)
}

// startKeeper runs k until the test ends.
func startKeeper(t *testing.T, k *Keeper) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); k.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// parked waits until the keeper, alone on clk, sleeps on its timer: whatever the last Advance
// fired has run.
func parked(t *testing.T, clk *clock.Fake) {
	t.Helper()
	require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
}

// While the store keeps failing, the retries back off but never leave more than a third of
// the lease between two tries: a lease outlives one failed renewal and the retry after it,
// however long the outage has lasted.
func TestKeeperRetriesWithinAThirdOfTheLease(t *testing.T) {
	t.Parallel()
	const lease = 30 * time.Second
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	var mu sync.Mutex
	var tries []time.Time
	k := &Keeper{Clock: clk, Shortest: func() time.Duration { return lease },
		Renew: func(context.Context) (bool, error) {
			mu.Lock()
			defer mu.Unlock()
			tries = append(tries, clk.Now())
			return true, errors.New("store unreachable")
		},
		Retry: backoff.New(backoff.Config{Name: "test", Clock: clk, // 5 s, 10 s, 20 s, 40 s…
			Policy: hoppertype.RetryPolicy{Base: 5 * time.Second, Multiplier: 2, Cap: time.Hour, Jitter: -1}})}
	startKeeper(t, k)
	for clk.Now().Before(start.Add(3 * time.Minute)) {
		parked(t, clk)
		clk.Advance(time.Second)
	}
	parked(t, clk)
	mu.Lock()
	defer mu.Unlock()
	require.Greater(t, len(tries), 5)
	require.Equal(t, 5*time.Second, tries[1].Sub(tries[0]), "the first retry follows the backoff")
	last := start
	for _, at := range tries {
		require.LessOrEqual(t, at.Sub(last), lease/3, "%s without a try, at %s", at.Sub(last), at.Sub(start))
		last = at
	}
}

// Shortened brings the next renewal forward to a third of the new shortest lease after the
// last beat, instead of the one planned for the longer lease. It never blocks: called before
// Run, or again before the keeper wakes, it only asks for one look.
func TestKeeperShortenedRenewsInTimeForTheShorterLease(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clock.NewFake(start)
	var shortest atomic.Int64
	shortest.Store(int64(30 * time.Second))
	renewed := make(chan time.Time, 10)
	k := &Keeper{Clock: clk, Shortest: func() time.Duration { return time.Duration(shortest.Load()) },
		Renew: func(context.Context) (bool, error) { renewed <- clk.Now(); return true, nil },
		Retry: backoff.New(backoff.Config{Name: "test", Clock: clk})}
	k.Shortened()
	k.Shortened()
	startKeeper(t, k)
	parked(t, clk) // the first renewal is planned 10 s after the start

	shortest.Store(int64(3 * time.Second)) // a handler shortened its lease
	k.Shortened()
	clk.Advance(time.Second)
	select {
	case at := <-renewed:
		require.Equal(t, start.Add(time.Second), at, "a third of the 3 s lease after the start")
	case <-time.After(5 * time.Second):
		t.Fatal("no renewal a third of the shortened lease after the last beat")
	}
}

// jumpingClock is a fake clock that a test advances while the keeper sets its timer: between
// the reading the keeper computed the wait from and the timer's start (armed once).
type jumpingClock struct {
	*clock.Fake
	jump atomic.Int64 // the advance, in ns, the next NewTimer makes first
}

func (c *jumpingClock) NewTimer(d time.Duration) clock.Timer {
	c.jumpNow()
	return c.Fake.NewTimer(d)
}

func (c *jumpingClock) NewTimerAt(at time.Time) clock.Timer {
	c.jumpNow()
	return c.Fake.NewTimerAt(at)
}

func (c *jumpingClock) jumpNow() {
	if j := c.jump.Swap(0); j > 0 {
		c.Advance(time.Duration(j))
	}
}

// A renewal already due when its timer is set runs at once: a clock that moved past the beat
// between the reading the wait was computed from and the timer's start does not put the
// renewal a beat late (it would come after the lease it was for: remote's
// TestAShortenedLeaseIsKept failed so, once, on a loaded machine).
func TestKeeperRenewsWhatIsDueWhileItSetsItsTimer(t *testing.T) {
	t.Parallel()
	const lease = 1200 * time.Millisecond
	clk := &jumpingClock{Fake: clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	clk.jump.Store(int64(lease / 3)) // the first timer, for the first beat, is set a beat late
	renewed := make(chan struct{}, 10)
	startKeeper(t, &Keeper{Clock: clk, Shortest: func() time.Duration { return lease },
		Renew: func(context.Context) (bool, error) {
			renewed <- struct{}{}
			return true, nil
		},
		Retry: backoff.New(backoff.Config{Name: "test", Clock: clk})})
	select {
	case <-renewed:
	case <-time.After(5 * time.Second):
		t.Fatal("the beat the clock passed did not renew")
	}
}
