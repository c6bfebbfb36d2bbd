package engine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// pushingStore is a real store that pushes the notifications the test sends on notes while
// its subscription is up (drop ends it), and counts the leader's polls.
type pushingStore struct {
	*sqlite.Store
	notes    chan store.Notification
	drop     chan struct{}
	promotes atomic.Int32
	dues     atomic.Int32
}

func (s *pushingStore) Subscribe(ctx context.Context, fn func(store.Notification)) error {
	select {
	case <-s.drop:
		return errors.New("connection refused") // dropped for good
	default:
	}
	fn(store.Notification{Kind: store.Subscribed})
	for {
		select {
		case n := <-s.notes:
			fn(n)
		case <-s.drop:
			return errors.New("connection reset by peer")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *pushingStore) JobPromoteScheduled(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	s.promotes.Add(1)
	return s.Store.JobPromoteScheduled(ctx, p)
}

func (s *pushingStore) ScheduleDue(ctx context.Context, now time.Time, limit int) ([]*store.Schedule, time.Time, error) {
	s.dues.Add(1)
	return s.Store.ScheduleDue(ctx, now, limit)
}

// While the store's notifications arrive, an idle leader does not poll for due jobs and
// schedules every second (PromoteInterval, ScheduleTick): a job scheduled anywhere and a
// schedule changed anywhere wake it. Without notifications it polls every second again. On
// the old code the leader polled every second whatever the store pushed.
func TestAnIdleLeaderSleepsWhileTheStorePushes(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	base, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	st := &pushingStore{Store: base, notes: make(chan store.Notification), drop: make(chan struct{})}
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1", Maintenance: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(stopCtx))
		require.NoError(t, base.Close())
	})
	require.Eventually(t, func() bool { return e.IsLeader() && e.pushed.Load() }, 5*time.Second, time.Millisecond)
	// The loops wait on the clock between looks: the node heartbeat, the elector and the
	// listener (for the subscription's first minute, then for the backoff between
	// subscriptions), and the maintainer and the scheduler while the engine leads.
	settled := func() bool {
		want := 3
		if e.IsLeader() {
			want = 5
		}
		return clk.Pending() == want
	}
	// advance moves the clock on by d in steps of 100 ms, letting the loops run between steps.
	advance := func(d time.Duration) { stepClock(t, clk, d, 100*time.Millisecond, settled) }
	advance(time.Second) // the first passes, and those the subscription nudged
	promotes, dues := st.promotes.Load(), st.dues.Load()
	advance(30 * time.Second)
	require.LessOrEqual(t, st.promotes.Load()-promotes, int32(1), "promotion polls in 30 s of pushed notifications")
	require.LessOrEqual(t, st.dues.Load()-dues, int32(1), "schedule polls in 30 s of pushed notifications")

	// A job another process scheduled: its notification wakes the leader when it is due.
	runAt := clk.Now().Add(5 * time.Second)
	res, err := base.JobInsertMany(t.Context(), []*store.InsertParams{{ID: "job-1", Kind: "k", Queue: "default",
		Args: []byte(`{}`), MaxAttempts: 3, RunAt: runAt, Actor: hoppertype.ActorAPI}})
	require.NoError(t, err)
	require.Equal(t, hoppertype.StateScheduled, res[0].Job.State)
	st.notes <- store.Notification{Kind: store.JobsScheduled, At: runAt}
	advance(6 * time.Second)
	require.Eventually(t, func() bool {
		job, err := base.JobGet(t.Context(), "job-1")
		require.NoError(t, err)
		return job.State == hoppertype.StateQueued
	}, 5*time.Second, time.Millisecond, "promoted when due, woken by the notification")

	// A schedule another process changed: its notification makes the leader look.
	dues = st.dues.Load()
	st.notes <- store.Notification{Kind: store.SchedulesChanged}
	require.Eventually(t, func() bool { return st.dues.Load() > dues }, 5*time.Second, time.Millisecond)

	// Without notifications the leader polls every second again.
	close(st.drop)
	require.Eventually(t, func() bool { return !e.pushed.Load() }, 5*time.Second, time.Millisecond)
	// (20 in 20 s, less one at either end; the retries of the subscription nudge a few more.)
	promotes, dues = st.promotes.Load(), st.dues.Load()
	advance(20 * time.Second)
	require.GreaterOrEqual(t, st.promotes.Load()-promotes, int32(18), "promotion polls in 20 s without notifications")
	require.GreaterOrEqual(t, st.dues.Load()-dues, int32(18), "schedule polls in 20 s without notifications")
}
