package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// notifyingStore is a real store whose notifications come from subscribe, a function the
// test sets: calls counts the subscriptions.
type notifyingStore struct {
	*sqlite.Store
	subscribe func(ctx context.Context, fn func(store.Notification)) error
	calls     atomic.Int32
}

func (s *notifyingStore) Subscribe(ctx context.Context, fn func(store.Notification)) error {
	s.calls.Add(1)
	return s.subscribe(ctx, fn)
}

// listeningEngine starts an engine that works one queue on st, with its logs in logs.
func listeningEngine(t *testing.T, clk *clock.Fake, st *notifyingStore, logs *lockedBuffer) *Engine {
	t.Helper()
	base, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	st.Store = base
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1", Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Workers: workersOf("k", okHandler{ran: make(chan string, 10)}), Queues: map[string]int{"default": 1}})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(stopCtx))
		require.NoError(t, base.Close())
	})
	return e
}

const listenLoop = "subscribe to notifications"

// A subscription that is accepted and dropped at once, again and again (a proxy that takes the
// connection and resets it), is an outage of the LISTEN loop: its retries keep backing off,
// and it logs its first failure and a reminder a minute, not "recovered" and "failed" every
// cycle. On the old code every cycle logged both and started again at 100 ms.
func TestAFlappingSubscriptionBacksOffAndLogsOnce(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	logs := &lockedBuffer{}
	st := &notifyingStore{subscribe: func(ctx context.Context, fn func(store.Notification)) error {
		fn(store.Notification{Kind: store.Subscribed})
		return errors.New("connection reset by peer")
	}}
	listeningEngine(t, clk, st, logs)
	require.Eventually(t, func() bool { return st.calls.Load() >= 1 }, 5*time.Second, time.Millisecond)

	// Between steps the loops wait on the clock: the producer, the node heartbeat, the lease
	// keeper and the listener (its backoff).
	stepClock(t, clk, 10*time.Minute, time.Second, func() bool { return clk.Pending() == 4 })
	calls := st.calls.Load()
	t.Logf("%d subscriptions in 10 min", calls)
	require.GreaterOrEqual(t, calls, int32(5), "it retried")
	// 100 ms doubling to 30 s: 9 tries to reach the cap, then one every 30 s (±20 %).
	require.LessOrEqual(t, calls, int32(40), "backing off")
	require.Equal(t, 1, logs.count(listenLoop+" failed"))
	require.LessOrEqual(t, logs.count(listenLoop+" still failing"), 10, "a reminder a minute at most")
	require.Zero(t, logs.count(listenLoop+" recovered"))
}

// A subscription counts as working once it has lasted a minute: until then the loop is still
// failing; then its recovery is logged, and the next loss starts the backoff afresh. On the
// old code the loop counted as recovered as soon as it was subscribed.
func TestASubscriptionWorksOnceItLastedAMinute(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	logs := &lockedBuffer{}
	drop := make(chan struct{})
	subscribed := make(chan time.Time, 1)
	st := &notifyingStore{}
	st.subscribe = func(ctx context.Context, fn func(store.Notification)) error {
		if st.calls.Load() == 1 {
			return errors.New("connection refused") // the database is not there yet
		}
		fn(store.Notification{Kind: store.Subscribed})
		select {
		case subscribed <- clk.Now():
		default:
		}
		select {
		case <-drop:
			return errors.New("connection reset by peer")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	e := listeningEngine(t, clk, st, logs)
	failing := func() bool {
		for _, s := range e.Failing() {
			if s.Name == listenLoop {
				return true
			}
		}
		return false
	}

	var since time.Time
	require.Eventually(t, func() bool {
		clk.Advance(50 * time.Millisecond)
		select {
		case since = <-subscribed:
			return true
		default:
			return false
		}
	}, 5*time.Second, time.Millisecond)
	require.True(t, failing(), "just subscribed: not working yet")
	clk.Advance(since.Add(listenWorks - time.Second).Sub(clk.Now()))
	require.Never(t, func() bool { return !failing() }, 20*time.Millisecond, time.Millisecond)
	clk.Advance(time.Second)
	require.Eventually(t, func() bool { return !failing() && logs.count(listenLoop+" recovered") == 1 },
		5*time.Second, time.Millisecond, "working after a minute, and logged once")

	close(drop) // lost after it worked: a new outage, from the shortest delay
	require.Eventually(t, func() bool { return logs.count(listenLoop+" failed") == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, 1, e.listening.Status().Failures)
}

// workersOf is a registry of h for kind.
func workersOf(kind string, h attempt.Handler) *attempt.Workers {
	ws := attempt.NewWorkers()
	ws.Add(kind, h, h)
	return ws
}
