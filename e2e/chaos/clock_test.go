//go:build chaos

package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Scenario 6, the one that is not black-box: the wall clock jumps an hour forward or back (an
// NTP step, a VM restored, a database server's clock) while jobs run and schedules fire, with
// the root package's Client on the SQLite store and on the PostgreSQL store.
//
// stepClock models it: Now is a fake monotonic time plus an offset, and timers run on the fake
// time. Step changes the offset only, as a real step changes time.Now's wall reading but not
// Go's timers; Advance moves both, as time passing does. One thing it cannot model: a real
// time.Now also carries a monotonic reading, so a duration computed from two readings (a
// renewal cadence) ignores a step, while two stepClock readings differ by it. The lease
// scenario therefore steps only the store's clock — the one leases, the leader lease and node
// liveness are judged on, the database's now() on PostgreSQL — and runs the client's timers
// and cadences on the plain fake clock; the schedule and TTL scenarios step both, since fire
// times and result expiries are wall times in the client too.
type stepClock struct {
	*clock.Fake
	offset atomic.Int64
}

func newStepClock(start time.Time) *stepClock { return &stepClock{Fake: clock.NewFake(start)} }

func (c *stepClock) Now() time.Time { return c.Fake.Now().Add(time.Duration(c.offset.Load())) }

// Step jumps the wall clock by d; timers are unaffected.
func (c *stepClock) Step(d time.Duration) { c.offset.Add(int64(d)) }

// advance moves time on by d and waits until the loops whose timers fired have done their
// work and wait on the clock again, so that fake time does not race ahead of a busy machine.
// It gives up after half a second rather than fail: after a jump the leader may lose its
// lease, and its maintainer and scheduler then wait for an election, not on the clock, so
// fewer timers than before may be pending.
func (c *stepClock) advance(d time.Duration) {
	waiting := c.Pending()
	c.Advance(d)
	pollUntil(500*time.Millisecond, time.Millisecond, func() bool { return c.Pending() >= waiting })
	// Real time: some of the engine's work between its timers waits on no clock and says
	// nothing when it is done (a handler that ends once its context is canceled, a claim or a
	// schedule pass that a notification brings, over PostgreSQL's connection on that store);
	// 5 ms of it a step keeps fake time from racing ahead of that work.
	time.Sleep(5 * time.Millisecond)
}

// run moves time on by total in steps of step.
func (c *stepClock) run(total, step time.Duration) {
	for moved := time.Duration(0); moved < total; moved += step {
		c.advance(step)
	}
}

// runUntil moves time on in steps until cond holds, for at most max of fake time; it
// reports whether cond held.
func (c *stepClock) runUntil(max, step time.Duration, cond func() bool) bool {
	for moved := time.Duration(0); ; moved += step {
		if cond() {
			return true
		}
		if moved >= max {
			return false
		}
		c.advance(step)
	}
}

var clockStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// clockStore opens a store on the stepped clock: a SQLite file, or a fresh PostgreSQL schema.
type clockStore struct {
	name string
	open func(t *testing.T, clk clock.Clock) (st hopper.Store, count func(t *testing.T) int)
}

var clockStores = []clockStore{
	{"sqlite", func(t *testing.T, clk clock.Clock) (hopper.Store, func(*testing.T) int) {
		path := filepath.Join(t.TempDir(), "hopper.db")
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clk})
		require.NoError(t, err)
		return st, func(t *testing.T) int {
			db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
			require.NoError(t, err)
			defer db.Close()
			var n int
			require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM jobs`).Scan(&n))
			return n
		}
	}},
	{"postgres", func(t *testing.T, clk clock.Clock) (hopper.Store, func(*testing.T) int) {
		pgtest.Require(t)
		schema := pgtest.FreshSchema(t, "hopper_chaos_clock_")
		st, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.URL(), Schema: schema, MaxConns: 4, Clock: clk})
		require.NoError(t, err)
		return st, func(t *testing.T) int {
			conn, err := pgx.Connect(t.Context(), pgtest.URL())
			require.NoError(t, err)
			defer conn.Close(context.Background())
			var n int
			require.NoError(t, conn.QueryRow(t.Context(), "SELECT count(*) FROM "+pgx.Identifier{schema, "jobs"}.Sanitize()).Scan(&n))
			return n
		}
	}},
}

func TestClockJumps(t *testing.T) {
	t.Parallel()
	for _, cs := range clockStores {
		t.Run(cs.name, func(t *testing.T) {
			t.Parallel()
			t.Run("leases", func(t *testing.T) { t.Parallel(); testClockLeases(t, cs) })
			t.Run("schedules", func(t *testing.T) { t.Parallel(); testClockSchedules(t, cs) })
			t.Run("ttl", func(t *testing.T) { t.Parallel(); testClockTTL(t, cs, false) })
			t.Run("ttl-back-before-sweep", func(t *testing.T) { t.Parallel(); testClockTTL(t, cs, true) })
		})
	}
}

// clockJob is the job of the clock scenarios.
type clockJob struct {
	N int `json:"n"`
}

func (clockJob) Kind() string { return "clock" }

// startClient starts a client with the given workers, its clock clk's (stepped, or only the
// fake monotonic time under it when engineClk is set); it is stopped and its store closed at
// cleanup.
func startClient(t *testing.T, st hopper.Store, clk *stepClock, engineClk clock.Clock, ws *hopper.Workers,
	mutate func(*hopper.Config)) *hopper.Client {
	t.Helper()
	if engineClk == nil {
		engineClk = clk
	}
	cfg := hopper.Config{Store: st, Workers: ws, Clock: engineClk, LeaseDuration: 30 * time.Second,
		RescueInterval: 5 * time.Second, LeaderTTL: 15 * time.Second, NodeTTL: 30 * time.Second,
		PollInterval: time.Second, MaxWorkers: 20}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := hopper.NewClient(cfg)
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, c.Stop(ctx))
		require.NoError(t, st.Close())
	})
	require.True(t, clk.runUntil(time.Minute, 100*time.Millisecond, c.IsLeader), "the client leads")
	return c
}

// run is one handler run of a clock job, in fake monotonic time.
type run struct {
	token      int64
	start, end time.Time
	cause      error // why its context ended, if it did
}

// runLog records the handler runs of the lease scenario. A job's first run blocks until its
// context ends or the test releases it; later runs return at once.
type runLog struct {
	mu      sync.Mutex
	clk     *stepClock
	runs    map[string][]*run
	release chan struct{}
}

func (l *runLog) work(ctx context.Context, job *hopper.Job[clockJob]) error {
	l.mu.Lock()
	r := &run{token: job.Token, start: l.clk.Fake.Now()}
	first := len(l.runs[job.ID]) == 0
	l.runs[job.ID] = append(l.runs[job.ID], r)
	release := l.release
	l.mu.Unlock()
	var err error
	if first {
		select {
		case <-ctx.Done():
			err = context.Cause(ctx)
		case <-release:
		}
	}
	l.mu.Lock()
	r.end, r.cause = l.clk.Fake.Now(), err
	l.mu.Unlock()
	return err
}

func (l *runLog) snapshot() map[string][]run {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string][]run{}
	for id, rs := range l.runs {
		for _, r := range rs {
			out[id] = append(out[id], *r)
		}
	}
	return out
}

func (l *runLog) running(ids []string) int {
	n := 0
	for _, id := range ids {
		rs := l.snapshot()[id]
		if len(rs) > 0 && rs[len(rs)-1].end.IsZero() {
			n++
		}
	}
	return n
}

// Leases: a jump back expires nothing early; a jump forward expires the leases, and each
// job is rescued and run again — the stale run's context is canceled (lease lost), its outcome
// refused — and completes once.
func testClockLeases(t *testing.T, cs clockStore) {
	fig := figures(t)
	clk := newStepClock(clockStart)
	st, _ := cs.open(t, clk)
	l := &runLog{clk: clk, runs: map[string][]*run{}, release: make(chan struct{})}
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, l.work)
	c := startClient(t, st, clk, clk.Fake, ws, nil) // only the store's clock steps
	t.Cleanup(func() { l.mu.Lock(); defer l.mu.Unlock(); closeOnce(l.release) })

	enqueue := func(n int) []string {
		var ids []string
		for i := range n {
			res, err := c.Enqueue(t.Context(), clockJob{N: i}, nil)
			require.NoError(t, err)
			ids = append(ids, res.Job.ID)
		}
		require.True(t, clk.runUntil(time.Minute, 100*time.Millisecond, func() bool { return l.running(ids) == n }),
			"%d jobs running", n)
		return ids
	}

	// Back: an hour back, then two minutes pass: every lease holds, no job is rescued.
	n := pick(5, 20)
	back := enqueue(n)
	clk.Step(-time.Hour)
	clk.run(2*time.Minute, time.Second)
	require.Equal(t, n, l.running(back), "after a jump back, every first run still runs")
	for _, id := range back {
		job, err := c.Get(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, hopper.StateRunning, job.State, "job %s after a jump back", id)
		attempts, err := c.Attempts(t.Context(), id)
		require.NoError(t, err)
		require.Empty(t, attempts, "job %s: no attempt ended after a jump back", id)
	}
	l.mu.Lock()
	close(l.release)
	l.release = make(chan struct{})
	l.mu.Unlock()
	waitStates(t, c, clk, back, hopper.StateCompleted)

	// Forward: an hour on. Leases are expired: the leader rescues the jobs, they run again, and
	// the stale runs are told they lost it. A renewal of a lease that expired but was not
	// rescued yet still holds (the token is current), so the jump comes just after a renewal
	// beat: the rescuer (every 5 s) then runs before the next one (10 s on). Left to chance,
	// both fall on the same tick of fake time every 10 s and the renewal sometimes wins for
	// every job, which rescues none.
	fwd := enqueue(n)
	leaseOf := func() time.Time {
		job, err := c.Get(t.Context(), fwd[0])
		require.NoError(t, err)
		return job.LeaseExpiresAt
	}
	claimed := leaseOf()
	require.True(t, clk.runUntil(time.Minute, time.Second, func() bool { return leaseOf().After(claimed) }),
		"the leases are renewed")
	clk.Step(time.Hour)
	rescued := 0
	clk.runUntil(2*time.Minute, time.Second, func() bool {
		rescued = 0
		for _, id := range fwd {
			if runs := l.snapshot()[id]; len(runs) > 1 && !runs[0].end.IsZero() {
				rescued++ // run again, and the stale run has ended
			}
		}
		return rescued == len(fwd)
	})
	l.mu.Lock()
	closeOnce(l.release) // first runs that kept their lease end now
	l.mu.Unlock()
	waitStates(t, c, clk, fwd, hopper.StateCompleted)

	var overlaps []time.Duration
	canceled, refused, twice := 0, 0, 0
	for _, id := range append(back, fwd...) {
		runs := l.snapshot()[id]
		attempts, err := c.Attempts(t.Context(), id)
		require.NoError(t, err)
		var ok []int64
		for _, a := range attempts {
			if a.Outcome == hopper.OutcomeOK {
				ok = append(ok, a.Token)
			}
		}
		require.Equal(t, []int64{runs[len(runs)-1].token}, ok, "job %s: one ok attempt, the last run's; runs %+v; attempts %s",
			id, runs, attemptsText(attempts))
		if len(runs) > 2 {
			twice++
		}
		for i := 1; i < len(runs); i++ {
			require.Greater(t, runs[i].token, runs[i-1].token, "job %s: tokens grow", id)
			// A stale run is told its lease is gone, or it finishes first and its outcome is
			// refused (the ok above is the last run's).
			if stale := runs[i-1]; errors.Is(stale.cause, hopper.ErrLeaseLost) {
				canceled++
			} else {
				refused++
			}
			if end := runs[i-1].end; end.After(runs[i].start) {
				overlaps = append(overlaps, end.Sub(runs[i].start))
			}
		}
	}
	fig.Jobs = fmt.Sprint(2 * n)
	fig.Lost = "0"
	fig.Dups = fmt.Sprintf("%d (lease_expired after the jump forward)", canceled+refused)
	fig.note("jump back 1 h + 2 min: nothing expired; jump forward 1 h: %d of %d jobs rescued and rerun (%d twice: "+
		"claimed again before the node's next heartbeat, it looked dead), %d stale runs canceled with lease lost, "+
		"%d finished first and were refused; runs overlapping their stale run (fake time): %d, longest %s",
		rescued, n, twice, canceled, refused, len(overlaps), maxDuration(overlaps))
	require.Positive(t, rescued, "a jump forward expires leases")
	// A rescued job's new run may start before its stale run hears that the lease is gone,
	// but not later than the stale run's next lease renewal (a third of the lease).
	require.LessOrEqual(t, maxDuration(overlaps), 10*time.Second, "a stale run outlives its rescue by at most one renewal")
}

func closeOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func maxDuration(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// waitStates moves time on until every job is in state.
func waitStates(t *testing.T, c *hopper.Client, clk *stepClock, ids []string, state hopper.JobState) {
	t.Helper()
	ok := clk.runUntil(5*time.Minute, 500*time.Millisecond, func() bool {
		for _, id := range ids {
			job, err := c.Get(t.Context(), id)
			if err != nil || job.State != state {
				return false
			}
		}
		return true
	})
	require.True(t, ok, "jobs %v reach %s", ids, state)
}

// Schedules: after a jump forward each schedule's catch-up policy applies (skip fires the
// on-time fire time only, last one, all every missed fire time, at most 1000 a tick); after a
// jump back no fire time fires twice, and the schedules go on once time passes their last
// fire.
func testClockSchedules(t *testing.T, cs clockStore) {
	fig := figures(t)
	clk := newStepClock(clockStart)
	st, _ := cs.open(t, clk)
	c := startClient(t, st, clk, nil, nil, nil)
	for _, s := range []hopper.Schedule{
		{Name: "skip", Cron: "* * * * *", Kind: "tick", CatchUp: hopper.CatchUpSkip, Overlap: hopper.OverlapAllow},
		{Name: "last", Cron: "* * * * *", Kind: "tick", CatchUp: hopper.CatchUpLast, Overlap: hopper.OverlapAllow},
		{Name: "all", Cron: "* * * * *", Kind: "tick", CatchUp: hopper.CatchUpAll, Overlap: hopper.OverlapAllow},
		{Name: "all-seconds", Cron: "* * * * * *", Kind: "tick", CatchUp: hopper.CatchUpAll, Overlap: hopper.OverlapAllow},
	} {
		_, err := c.AddSchedule(t.Context(), s)
		require.NoError(t, err)
	}
	// Two minutes pass: 12:01 and 12:02 fire.
	clk.run(2*time.Minute+5*time.Second, time.Second)
	before := quiesce(t, c)
	jumpAt := clk.Now()
	require.NotEmpty(t, before["skip"], "the schedules fire before the jump")

	clk.Step(time.Hour)
	ticks := 0
	clk.runUntil(time.Minute, time.Second, func() bool {
		ticks++
		return len(quiesce(t, c)["all-seconds"]) >= len(before["all-seconds"])+3600
	})
	after := quiesce(t, c)
	missed := func(name string) []time.Time {
		var out []time.Time
		for _, f := range after[name] {
			if f.After(jumpAt) && !f.After(jumpAt.Add(time.Hour)) {
				out = append(out, f)
			}
		}
		return out
	}
	t.Logf("jumped at %s; skip fired %v", jumpAt.Format(time.TimeOnly), after["skip"])
	require.Len(t, missed("skip"), 1, "skip fires the on-time fire time only: %v", missed("skip"))
	require.Len(t, missed("last"), 1, "last fires once: %v", missed("last"))
	require.Len(t, missed("all"), 60, "all fires every missed minute")
	require.Len(t, missed("all-seconds"), 3600, "all fires every missed second, 1000 a tick")

	// Back an hour: two minutes pass and nothing fires (every fire time is at or before the
	// last one); then time catches up with the last fire and the schedules go on.
	count := func(m map[string][]time.Time) int {
		n := 0
		for _, f := range m {
			n += len(f)
		}
		return n
	}
	clk.Step(-time.Hour)
	clk.run(2*time.Minute, time.Second)
	require.Equal(t, count(after), count(quiesce(t, c)), "nothing fires in the hour the clock went back")
	clk.run(time.Hour+time.Minute, 5*time.Second)
	final := quiesce(t, c)
	for name, fires := range final {
		seen := map[time.Time]bool{}
		for _, f := range fires {
			require.False(t, seen[f], "schedule %s fired %s twice", name, f)
			seen[f] = true
		}
	}
	require.Greater(t, len(final["skip"]), len(after["skip"]), "the schedules go on after the jump back")
	fig.Jobs = fmt.Sprint(count(final))
	fig.Dups = "0"
	fig.Lost = "0"
	fig.note("+1 h: skip fired %d, last %d, all %d (per minute) and %d (per second, caught up within %d s); "+
		"-1 h: nothing fired until time passed the last fire, no fire time twice",
		len(missed("skip")), len(missed("last")), len(missed("all")), len(missed("all-seconds")), ticks)
}

// quiesce waits, the clock standing still, until the leader has enqueued what is due, and
// returns the fire times of each schedule's jobs. It waits in real time: nothing says when the
// leader is done (a schedule pass that a notification brings follows on no clock), so two
// reads 100 ms apart that agree are taken for it.
func quiesce(t *testing.T, c *hopper.Client) map[string][]time.Time {
	t.Helper()
	prev, fires := -1, map[string][]time.Time{}
	still := pollUntil(30*time.Second, 100*time.Millisecond, func() bool {
		fires = scheduleFires(t, c)
		n := 0
		for _, f := range fires {
			n += len(f)
		}
		same := n == prev
		prev = n
		return same
	})
	require.True(t, still, "the leader's fires settle within 30 s, the clock standing still")
	return fires
}

// scheduleFires returns the fire times of the jobs each schedule enqueued.
func scheduleFires(t *testing.T, c *hopper.Client) map[string][]time.Time {
	t.Helper()
	out := map[string][]time.Time{}
	cursor := ""
	for {
		res, err := c.List(t.Context(), &hopper.ListParams{Limit: 10000, Ascending: true, Cursor: cursor})
		require.NoError(t, err)
		for _, j := range res.Jobs {
			if j.ScheduleID == "" {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, j.Headers[hopper.FireTimeHeader])
			require.NoError(t, err)
			out[j.ScheduleID] = append(out[j.ScheduleID], at)
		}
		if cursor = res.NextCursor; cursor == "" {
			return out
		}
	}
}

// Result TTLs: after a jump forward past the TTL, completed jobs vanish on read and the
// leader sweeps them; after the jump back they do not reappear. With beforeSweep the clock goes
// back before the sweep came round: results that were read as gone must stay gone.
func testClockTTL(t *testing.T, cs clockStore, beforeSweep bool) {
	fig := figures(t)
	clk := newStepClock(clockStart)
	st, rows := cs.open(t, clk)
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[clockJob]) error { return nil })
	c := startClient(t, st, clk, nil, ws, func(cfg *hopper.Config) { cfg.ResultTTL = 10 * time.Minute })
	var ids []string
	for i := range 3 {
		res, err := c.Enqueue(t.Context(), clockJob{N: i}, nil)
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	waitStates(t, c, clk, ids, hopper.StateCompleted)
	visible := func() int {
		n := 0
		for _, id := range ids {
			if _, err := c.Get(t.Context(), id); err == nil {
				n++
			} else {
				require.ErrorIs(t, err, hopper.ErrNotFound)
			}
		}
		return n
	}
	fig.Jobs = "3"

	clk.Step(time.Hour)
	require.Zero(t, visible(), "expired results vanish on read at once")
	if beforeSweep {
		clk.Step(-time.Hour)
		back := visible()
		fig.note("+1 h then -1 h before the sweep: %d of 3 results read as gone are back", back)
		require.Zero(t, back, "results read as gone reappear when the clock goes back before the sweep "+
			"(reads hide expired results; nothing removes them until the sweep)")
		return
	}
	require.True(t, clk.runUntil(5*time.Minute, 5*time.Second, func() bool { return rows(t) == 0 }),
		"the leader sweeps expired results")
	clk.Step(-time.Hour)
	require.Zero(t, visible(), "swept results do not reappear after a jump back")
	fig.Lost = "0"
	fig.note("+1 h: results past their TTL gone on read at once and swept within a minute; -1 h after the sweep: nothing reappears")
}

func attemptsText(as []*hopper.AttemptRecord) string {
	out := ""
	for _, a := range as {
		out += fmt.Sprintf("[token %d %s %s→%s] ", a.Token, a.Outcome, a.StartedAt.Format(time.TimeOnly), a.EndedAt.Format(time.TimeOnly))
	}
	return out
}
