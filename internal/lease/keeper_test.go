package lease

import (
	"context"
	"errors"
	"sync"
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
