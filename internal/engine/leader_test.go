package engine

import (
	"context"
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

// electingStore is a real store that counts the elections and the reads of what is due.
type electingStore struct {
	*sqlite.Store
	elects atomic.Int32
	dues   atomic.Int32
}

func (s *electingStore) LeaderElect(ctx context.Context, p *store.LeaderParams) (*hoppertype.Leadership, error) {
	s.elects.Add(1)
	return s.Store.LeaderElect(ctx, p)
}

func (s *electingStore) LeaderDue(ctx context.Context, p *store.DueParams) (*store.Due, error) {
	s.dues.Add(1)
	return s.Store.LeaderDue(ctx, p)
}

// restingEngine starts a maintaining engine (no workers) on a fresh SQLite store with a fake
// clock, and returns it with its store and a function that moves the clock on by d in steps
// of 100 ms, letting the loops run between steps (see maintaining).
func restingEngine(t *testing.T, cfg Config) (*Engine, *electingStore, *clock.Fake, func(d time.Duration)) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	base, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	st := &electingStore{Store: base}
	cfg.Store, cfg.Clock, cfg.Maintenance = st, clk, true
	if cfg.WorkerID == "" {
		cfg.WorkerID = "node-1"
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Cleanup(func() { require.NoError(t, base.Close()) }) // after the engine stops
	e, err := New(cfg)
	require.NoError(t, err)
	started(t, e)
	return e, st, clk, func(d time.Duration) { stepClock(t, clk, d, 100*time.Millisecond, maintaining(e, clk)) }
}

// started starts e and stops it (within 10 s) when the test ends.
func started(t *testing.T, e *Engine) {
	t.Helper()
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(stopCtx))
	})
}

// requireRests requires e's leader to have let its lease lapse, moving clk on in steps of
// 100 ms (by at most two minutes) until it has.
func requireRests(t *testing.T, e *Engine, clk *clock.Fake, msg string) {
	t.Helper()
	for range 1200 {
		if !e.IsLeader() {
			return
		}
		clk.Advance(100 * time.Millisecond)
		requireSettled(t, maintaining(e, clk))
	}
	t.Fatal(msg + ": still leads")
}

// stepClock moves clk on by d in steps of step. Before each step and after the last it waits
// until settled reports that the loops wait on the clock again, so that the clock never runs
// ahead of them however slow the machine.
func stepClock(t *testing.T, clk *clock.Fake, d, step time.Duration, settled func() bool) {
	t.Helper()
	for range d / step {
		requireSettled(t, settled)
		clk.Advance(step)
	}
	requireSettled(t, settled)
}

// requireSettled waits (in real time, up to 10 s) until settled reports true.
func requireSettled(t *testing.T, settled func() bool) {
	t.Helper()
	require.Eventually(t, settled, 10*time.Second, 50*time.Microsecond, "the loops wait on the clock again")
}

// maintaining reports whether the loops of e, a maintaining engine without workers, all wait
// on clk: its node heartbeat and its elector always do, its maintainer and its scheduler while
// it leads (otherwise they wait for an election, not on the clock).
func maintaining(e *Engine, clk *clock.Fake) func() bool {
	return func() bool {
		want := 2
		if e.IsLeader() {
			want = 4
		}
		return clk.Pending() == want
	}
}

// A leader with nothing to do lets its lease lapse after LeaderIdleAfter and then takes part
// in no election (an idle SQLite server writes nothing for its leadership). It takes the lease
// again when a job another process scheduled falls due (promoting it on time), when a job
// runs anywhere, and at once when this process is active. Without the rest the leader renews
// every LeaderTTL/3 for ever.
func TestAnIdleLeaderLetsItsLeaseLapse(t *testing.T) {
	t.Parallel()
	e, st, clk, advance := restingEngine(t, Config{})
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond, "a starting process leads: it is active")

	advance(90 * time.Second) // a minute idle, a renewal's wait and the lapse of the lease
	requireRests(t, e, clk, "rested")
	elects, dues := st.elects.Load(), st.dues.Load()
	advance(3 * time.Minute)
	require.Equal(t, elects, st.elects.Load(), "elections while nothing is due")
	require.GreaterOrEqual(t, st.dues.Load()-dues, int32(18), "reads of what is due, every RescueInterval")
	require.False(t, e.IsLeader())

	// A job another process scheduled (no notification: SQLite pushes none) is found by a
	// read and promoted when due.
	runAt := clk.Now().Add(12 * time.Second)
	_, err := st.JobInsertMany(t.Context(), []*store.InsertParams{{ID: "later", Kind: "k", Queue: "default",
		Args: []byte(`{}`), MaxAttempts: 3, RunAt: runAt, Actor: hoppertype.ActorAPI}})
	require.NoError(t, err)
	advance(11 * time.Second)
	require.False(t, e.IsLeader(), "not before the job is due")
	advance(2 * time.Second)
	require.Eventually(t, func() bool {
		job, err := st.JobGet(t.Context(), "later")
		require.NoError(t, err)
		return job.State == hoppertype.StateQueued
	}, 5*time.Second, time.Millisecond, "promoted when due")
	require.True(t, e.IsLeader())

	// Idle again: it rests. A job that runs (claimed by another process) brings it back
	// within a RescueInterval, to watch the job's lease.
	advance(2 * time.Minute)
	requireRests(t, e, clk, "rested again")
	claimed, _, err := st.JobClaim(t.Context(), &store.ClaimParams{Queue: "default", Limit: 1, WorkerID: "other",
		LeaseDuration: 10 * time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	advance(6 * time.Second)
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond, "leads while a job runs")
	advance(3 * time.Minute)
	require.True(t, e.IsLeader(), "keeps leading while the job runs")

	// The job ends; idle again, it rests. Activity here (a schedule changed) takes the lease
	// at once, without the clock moving.
	errs, err := st.JobFinishMany(t.Context(), []*store.FinishParams{{ID: "later", Token: claimed[0].Token,
		State: hoppertype.StateCompleted, Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker,
		ExpiresAt: clk.Now().Add(24 * time.Hour)}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	advance(3 * time.Minute)
	requireRests(t, e, clk, "rested once the job ended")
	e.NotifySchedules()
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond, "active: leads at once")
}

// With LeaderIdleAfter negative the leader renews its lease for as long as it lives.
func TestALeaderThatNeverRests(t *testing.T) {
	t.Parallel()
	e, st, _, advance := restingEngine(t, Config{LeaderIdleAfter: -1})
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond)
	advance(3 * time.Minute)
	require.True(t, e.IsLeader())
	require.GreaterOrEqual(t, st.elects.Load(), int32(30), "a renewal every LeaderTTL/3")
	require.Zero(t, st.dues.Load(), "no reads of what is due")
}

// A node that does not lead never takes the lease from a live leader, and takes it when the
// leader's lease lapses while a job runs.
func TestAFollowerTakesOverWhenWorkIsDue(t *testing.T) {
	t.Parallel()
	e, st, clk, advance := restingEngine(t, Config{WorkerID: "node-2"})
	// Another node holds the lease before this one looks (the engine's first election may
	// already have run: take it from there by letting it lapse).
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond)
	advance(90 * time.Second)
	requireRests(t, e, clk, "rested")
	lead, err := st.Store.LeaderElect(t.Context(), &store.LeaderParams{NodeID: "node-1", TTL: 15 * time.Second})
	require.NoError(t, err)
	require.Equal(t, "node-1", lead.NodeID)
	_, err = st.JobInsertMany(t.Context(), []*store.InsertParams{{ID: "job", Kind: "k", Queue: "default",
		Args: []byte(`{}`), MaxAttempts: 3, Actor: hoppertype.ActorAPI}})
	require.NoError(t, err)
	_, _, err = st.JobClaim(t.Context(), &store.ClaimParams{Queue: "default", Limit: 1, WorkerID: "node-1",
		LeaseDuration: time.Minute})
	require.NoError(t, err)
	e.NotifySchedules() // active, but node-1 leads
	advance(10 * time.Second)
	require.False(t, e.IsLeader(), "node-1's lease is live")
	require.Equal(t, "node-1", e.LeaderID())
	advance(10 * time.Second) // node-1 died: its lease lapsed while its job runs
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond, "takes over")
}

// failingElections is a store whose elections fail while down is set (a full disk: reads
// still work).
type failingElections struct {
	*electingStore
	down atomic.Bool
}

func (s *failingElections) LeaderElect(ctx context.Context, p *store.LeaderParams) (*hoppertype.Leadership, error) {
	s.elects.Add(1)
	if s.down.Load() {
		return nil, store.ErrUnavailable
	}
	return s.Store.LeaderElect(ctx, p)
}

// Wakes (every enqueue, every notification) do not cut a failed election's backoff short: a
// process whose elections fail tries a few times in a second of wakes, not once per wake.
func TestWakesDoNotCutTheBackoffShort(t *testing.T) {
	t.Parallel()
	clk, base := fakeClockSQLite(t)
	st := &failingElections{electingStore: &electingStore{Store: base}}
	st.down.Store(true)
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1", Maintenance: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	started(t, e)
	require.Eventually(t, func() bool { return st.elects.Load() >= 1 }, 5*time.Second, time.Millisecond)
	settled := maintaining(e, clk)
	requireSettled(t, settled)
	for range 200 {
		e.Notify("default")
		// The elector took the wake, and heeded it or not: it waits on the clock again.
		requireSettled(t, func() bool { return len(e.leader.wakeC) == 0 && settled() })
	}
	require.LessOrEqual(t, st.elects.Load(), int32(2), "elections in 200 wakes without the clock moving")
	st.down.Store(false)
	stepClock(t, clk, time.Second, 10*time.Millisecond, settled)
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond, "leads once the backoff is over")
}

// restStep is how far the resting leader's tests move the clock at a time.
const restStep = 100 * time.Millisecond

// restingUntil steps the clock until e's leader rests, and returns when its lease lapses.
func restingUntil(t *testing.T, e *Engine, clk *clock.Fake) time.Time {
	t.Helper()
	for i := 0; ; i++ {
		require.Less(t, i, 2000, "decides to rest")
		e.leader.mu.Lock()
		resting, until := e.leader.resting, e.leader.until
		e.leader.mu.Unlock()
		if resting {
			return until
		}
		clk.Advance(restStep)
		requireSettled(t, maintaining(e, clk))
	}
}

// startElsewhere enqueues a job and starts it as another process would, straight through st
// (this process is not active).
func startElsewhere(t *testing.T, st store.Store) {
	t.Helper()
	_, err := st.JobInsertMany(t.Context(), []*store.InsertParams{{ID: "job", Kind: "k", Queue: "default",
		Args: []byte(`{}`), MaxAttempts: 3, Actor: hoppertype.ActorAPI}})
	require.NoError(t, err)
	_, _, err = st.JobClaim(t.Context(), &store.ClaimParams{Queue: "default", Limit: 1, WorkerID: "other",
		LeaseDuration: time.Hour})
	require.NoError(t, err)
}

// A resting leader looks a last time shortly before its lease lapses (restingLook): a job that
// started elsewhere in the lease's last third is seen then, and the leader renews instead of
// letting the lease lapse and taking it again.
func TestARestingLeaderLooksOnceMoreBeforeItsLeaseLapses(t *testing.T) {
	t.Parallel()
	e, st, clk, _ := restingEngine(t, Config{})
	advance := func(d time.Duration) { stepClock(t, clk, d, restStep, maintaining(e, clk)) }
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond)
	until := restingUntil(t, e, clk)
	ttl := e.cfg.LeaderTTL
	advance(until.Sub(clk.Now()) - ttl/3 + time.Second) // past the look at two thirds of the lease
	require.True(t, e.IsLeader())
	startElsewhere(t, st)
	advance(ttl / 3)
	require.True(t, e.IsLeader(), "renewed at the last look: a job runs")
	e.leader.mu.Lock()
	defer e.leader.mu.Unlock()
	require.False(t, e.leader.resting)
	require.Equal(t, 1, e.leader.gained, "never lost the lease")
}

func TestRestingLook(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ left, ttl, want time.Duration }{
		{15 * time.Second, 15 * time.Second, 5 * time.Second},             // a third of the lease
		{5 * time.Second, 15 * time.Second, 4 * time.Second},              // the last look, a second before the lapse
		{time.Second, 15 * time.Second, time.Second},                      // then the lapse
		{1500 * time.Millisecond, 3 * time.Second, time.Second},           // a third of a short lease
		{time.Second, 3 * time.Second, 700 * time.Millisecond},            // its last look, a tenth before the lapse
		{200 * time.Millisecond, 3 * time.Second, 200 * time.Millisecond}, // the lapse
	} {
		require.Equal(t, c.want, restingLook(c.left, c.ttl), "left %s of %s", c.left, c.ttl)
	}
}

// A leader that decided to rest renews after all when a job starts elsewhere before its lease
// lapses: it does not lapse and come back.
func TestARestingLeaderRenewsWhenWorkComes(t *testing.T) {
	t.Parallel()
	e, st, clk, _ := restingEngine(t, Config{})
	advance := func(d time.Duration) { stepClock(t, clk, d, restStep, maintaining(e, clk)) }
	require.Eventually(t, e.IsLeader, 5*time.Second, time.Millisecond)
	// Idle for a minute: the next renewal is its last. Stop there, the lease still live.
	restingUntil(t, e, clk)
	require.True(t, e.IsLeader())
	startElsewhere(t, st)
	advance(time.Minute)
	require.True(t, e.IsLeader(), "renewed: a job runs")
	e.leader.mu.Lock()
	defer e.leader.mu.Unlock()
	require.False(t, e.leader.resting)
	require.Equal(t, 1, e.leader.gained, "never lost the lease")
}

// fakeClockSQLite opens a migrated SQLite store on a fake clock at a fixed time, closed when
// the test ends.
func fakeClockSQLite(t *testing.T) (*clock.Fake, *sqlite.Store) {
	t.Helper()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	return clk, st
}
