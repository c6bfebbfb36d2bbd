package hopper

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/schedule"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

type digest struct {
	List string `json:"list"`
}

func (digest) Kind() string { return "digest" }

// scheduleNode is one process of a schedule test: a client with maintenance on, on a SQLite
// file and a fake clock that every node of the test shares.
type scheduleNode struct {
	client  *Client
	store   *sqlite.Store
	clock   *clock.Fake
	stopped bool
}

// openNode starts a client on path; it is stopped and its store closed at cleanup (or by stop).
func openNode(t *testing.T, path string, clk *clock.Fake, ws *Workers, mutate func(*Config)) *scheduleNode {
	t.Helper()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clk})
	require.NoError(t, err)
	// The clock jumps by minutes: long leases and node TTLs keep the leader from rescuing a
	// job that is still running here before its lease keeper or heartbeat gets to run.
	cfg := Config{Store: st, Workers: ws, Clock: clk, PollInterval: time.Hour, LeaseDuration: time.Hour,
		NodeTTL: 2 * time.Hour}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := NewClient(cfg)
	require.NoError(t, err)
	n := &scheduleNode{client: c, store: st, clock: clk}
	t.Cleanup(func() { n.stop(t) })
	require.NoError(t, c.Start(context.Background()))
	require.Eventually(t, c.IsLeader, 5*time.Second, time.Millisecond)
	return n
}

func (n *scheduleNode) stop(t *testing.T) {
	t.Helper()
	if n.stopped {
		return
	}
	n.stopped = true
	stoptest.Within(t, n.client, 10*time.Second)
	require.NoError(t, n.store.Close())
}

// scheduleAt returns a started node whose fake clock starts at start.
func scheduleAt(t *testing.T, start time.Time, ws *Workers) *scheduleNode {
	t.Helper()
	return openNode(t, t.TempDir()+"/hopper.db", clock.NewFake(start), ws, nil)
}

// fireTimes returns the fire times of the jobs schedule name enqueued, oldest first.
func (n *scheduleNode) fireTimes(t *testing.T, name string) []time.Time {
	t.Helper()
	res, err := n.client.List(t.Context(), &ListParams{Limit: 10000, Ascending: true})
	require.NoError(t, err)
	var out []time.Time
	for _, j := range res.Jobs {
		if j.ScheduleID != name {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, j.Headers[FireTimeHeader])
		require.NoError(t, err)
		out = append(out, at)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// runUntil moves the fake clock in small steps until cond holds: the scheduler waits on the
// clock, and a step may land while it is busy with the previous one.
func (n *scheduleNode) runUntil(t *testing.T, cond func() bool) {
	t.Helper()
	n.stepUntil(t, 50*time.Millisecond, cond)
}

func (n *scheduleNode) stepUntil(t *testing.T, step time.Duration, cond func() bool) {
	t.Helper()
	n.stepUntilWithin(t, step, 10*time.Second, cond)
}

// stepUntilWithin is stepUntil with its own real-time budget, for tests whose scheduler has a
// lot to do each step (under -race on a busy machine a step can take tens of milliseconds).
func (n *scheduleNode) stepUntilWithin(t *testing.T, step, budget time.Duration, cond func() bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		if cond() {
			return true
		}
		n.clock.Advance(step)
		return false
	}, budget, time.Millisecond)
}

// advanceTo moves the clock to at (not back) and lets the scheduler fire what is due by
// then: it returns once the schedule's next fire time is after at.
func (n *scheduleNode) advanceTo(t *testing.T, name string, at time.Time) {
	t.Helper()
	if d := at.Sub(n.clock.Now()); d > 0 {
		n.clock.Advance(d)
	}
	n.runUntil(t, func() bool {
		info, err := n.client.GetSchedule(t.Context(), name)
		require.NoError(t, err)
		return info.NextFireAt.After(at)
	})
}

func minutes(start time.Time, ms ...int) []time.Time {
	out := make([]time.Time, len(ms))
	for i, m := range ms {
		out[i] = start.Add(time.Duration(m) * time.Minute)
	}
	return out
}

func requireTimes(t *testing.T, want, got []time.Time) {
	t.Helper()
	w, g := make([]string, len(want)), make([]string, len(got))
	for i := range want {
		w[i] = want[i].UTC().Format(time.RFC3339Nano)
	}
	for i := range got {
		g[i] = got[i].UTC().Format(time.RFC3339Nano)
	}
	require.Equal(t, w, g)
}

// A per-minute schedule enqueues one job per minute, stamped with its fire time.
func TestScheduleFiresOncePerMinute(t *testing.T) {
	t.Parallel()
	n := scheduleAt(t, testStart, nil)
	info, err := n.client.AddSchedule(t.Context(), Schedule{Name: "minutely", Cron: "* * * * *",
		Args: digest{List: "ops"}, Overlap: OverlapAllow})
	require.NoError(t, err)
	require.Equal(t, "digest", info.Kind, "from the args type")
	require.Equal(t, ScheduleSourceAPI, info.Source)
	require.Equal(t, testStart.Add(time.Minute), info.NextFireAt)
	require.True(t, info.LastFireAt.IsZero(), "never fired, not fired when saved: %v", info.LastFireAt)
	require.Empty(t, info.LastJobID)

	for m := 1; m <= 5; m++ {
		n.advanceTo(t, "minutely", testStart.Add(time.Duration(m)*time.Minute))
		requireTimes(t, minutes(testStart, 1, 2, 3, 4, 5)[:m], n.fireTimes(t, "minutely"))
	}
	n.advanceTo(t, "minutely", testStart.Add(5*time.Minute+50*time.Second))
	requireTimes(t, minutes(testStart, 1, 2, 3, 4, 5), n.fireTimes(t, "minutely"))

	info, err = n.client.GetSchedule(t.Context(), "minutely")
	require.NoError(t, err)
	require.Equal(t, testStart.Add(5*time.Minute), info.LastFireAt)
	require.Equal(t, testStart.Add(6*time.Minute), info.NextFireAt)
	job, err := n.client.Get(t.Context(), info.LastJobID)
	require.NoError(t, err)
	require.Equal(t, "digest", job.Kind)
	require.Equal(t, DefaultQueue, job.Queue)
	require.JSONEq(t, `{"list":"ops"}`, string(job.Args))
	require.Equal(t, "schedule:minutely:"+strconv.FormatInt(testStart.Add(5*time.Minute).UnixMicro(), 10), job.IdempotencyKey)
	events, err := n.client.Events(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, ActorLeader, events[0].Actor)
	require.Equal(t, "schedule minutely", events[0].Reason)
}

// After an outage (no leader for five minutes), catch-up all enqueues every missed fire time
// once, last only the latest, and skip none of them; then the schedule goes on.
func TestScheduleCatchUpAfterOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy CatchUp
		missed []int
	}{
		{CatchUpAll, []int{2, 3, 4, 5, 6}},
		{CatchUpLast, []int{6}},
		{CatchUpSkip, nil},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			t.Parallel()
			path, clk := t.TempDir()+"/hopper.db", clock.NewFake(testStart)
			a := openNode(t, path, clk, nil, nil)
			_, err := a.client.AddSchedule(t.Context(), Schedule{Name: "s", Cron: "* * * * *", Kind: "digest",
				CatchUp: tc.policy, Overlap: OverlapAllow})
			require.NoError(t, err)
			a.advanceTo(t, "s", testStart.Add(time.Minute))
			a.stop(t) // the only node goes down after the 12:01 fire

			// 12:02 to 12:06 pass unfired; at 12:06:45 even 12:06 is older than the grace (30 s).
			clk.Advance(6*time.Minute + 45*time.Second - (clk.Now().Sub(testStart)))
			b := openNode(t, path, clk, nil, nil)
			b.advanceTo(t, "s", testStart.Add(6*time.Minute+45*time.Second))
			b.advanceTo(t, "s", testStart.Add(7*time.Minute))
			want := append(append([]int{1}, tc.missed...), 7)
			requireTimes(t, minutes(testStart, want...), b.fireTimes(t, "s"))
		})
	}
}

// With overlap skip, fire times that come due while the previous job has not ended are
// skipped, not postponed: the next job is the first fire time after it ended.
func TestScheduleOverlapSkipHoldsFires(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started, release := make(chan string, 10), make(chan struct{}, 10)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[digest]) error {
		started <- job.Headers[FireTimeHeader]
		<-release
		return nil
	})
	n := scheduleAt(t, testStart, ws)
	t.Cleanup(func() { close(release) }) // before the node stops, even when the test fails
	_, err := n.client.AddSchedule(t.Context(), Schedule{Name: "s", Cron: "* * * * *", Args: digest{}})
	require.NoError(t, err)
	n.advanceTo(t, "s", testStart.Add(time.Minute))
	require.Equal(t, testStart.Add(time.Minute).Format(time.RFC3339Nano), recv(t, started))
	n.advanceTo(t, "s", testStart.Add(2*time.Minute))
	n.advanceTo(t, "s", testStart.Add(3*time.Minute))
	requireTimes(t, minutes(testStart, 1), n.fireTimes(t, "s"))

	release <- struct{}{}
	n.runUntil(t, func() bool { return n.client.Running() == 0 })
	info, err := n.client.GetSchedule(t.Context(), "s")
	require.NoError(t, err)
	(&testBundle{client: n.client, clock: n.clock}).waitFor(t, info.LastJobID, StateCompleted)
	n.advanceTo(t, "s", testStart.Add(4*time.Minute))
	requireTimes(t, minutes(testStart, 1, 4), n.fireTimes(t, "s"))
}

// A manual run enqueues the schedule's job at once, recorded as such, and its fires go on as if
// it had not run: the next fire time, the last fire and job, and a fixed-delay schedule's wait
// (which does not wait on the manual job) are untouched. Paused schedules run too.
func TestRunScheduleLeavesFiresAlone(t *testing.T) {
	t.Parallel()
	n := scheduleAt(t, testStart, nil) // no workers: jobs stay queued
	_, err := n.client.AddSchedule(t.Context(), Schedule{Name: "minutely", Cron: "* * * * *",
		Args: digest{List: "ops"}, Queue: "reports", Headers: map[string]string{"team": "ops"}, Overlap: OverlapAllow})
	require.NoError(t, err)
	n.advanceTo(t, "minutely", testStart.Add(time.Minute))
	before, err := n.client.GetSchedule(t.Context(), "minutely")
	require.NoError(t, err)
	require.Equal(t, testStart.Add(time.Minute), before.LastFireAt)

	n.clock.Advance(20 * time.Second)
	at := n.clock.Now()
	job, err := n.client.RunSchedule(t.Context(), "minutely")
	require.NoError(t, err)
	require.Equal(t, StateQueued, job.State)
	require.Equal(t, "digest", job.Kind)
	require.Equal(t, "reports", job.Queue)
	require.JSONEq(t, `{"list":"ops"}`, string(job.Args))
	require.Equal(t, "minutely", job.ScheduleID)
	require.Empty(t, job.IdempotencyKey, "no fire time's key: each run is a job of its own")
	require.Equal(t, map[string]string{"team": "ops", FireTimeHeader: at.Format(time.RFC3339Nano), ManualFireHeader: "true"},
		job.Headers)
	events, err := n.client.Events(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, ActorAPI, events[0].Actor)
	require.Equal(t, "run now", events[0].Reason)

	after, err := n.client.GetSchedule(t.Context(), "minutely")
	require.NoError(t, err)
	require.Equal(t, at, after.LastManualFireAt)
	require.Equal(t, job.ID, after.LastManualJobID)
	require.Equal(t, before.LastFireAt, after.LastFireAt, "the last fire is a fire's")
	require.Equal(t, before.LastJobID, after.LastJobID)
	require.Equal(t, before.NextFireAt, after.NextFireAt)
	again, err := n.client.RunSchedule(t.Context(), "minutely")
	require.NoError(t, err)
	require.NotEqual(t, job.ID, again.ID, "each run enqueues a job")
	n.advanceTo(t, "minutely", testStart.Add(2*time.Minute))
	requireTimes(t, []time.Time{testStart.Add(time.Minute), at, at, testStart.Add(2 * time.Minute)}, n.fireTimes(t, "minutely"))

	// A fixed-delay schedule fires one delay after its last fire's job ended: a manual job
	// that has not ended does not hold it back. Paused, it runs by hand all the same.
	_, err = n.client.AddSchedule(t.Context(), Schedule{Name: "d", FixedDelay: 5 * time.Minute, Kind: "digest"})
	require.NoError(t, err)
	d, err := n.client.GetSchedule(t.Context(), "d")
	require.NoError(t, err)
	require.NoError(t, n.client.PauseSchedule(t.Context(), "d"))
	manual, err := n.client.RunScheduleBy(t.Context(), "d", ActorOperator, "run now by alice")
	require.NoError(t, err)
	events, err = n.client.Events(t.Context(), manual.ID)
	require.NoError(t, err)
	require.Equal(t, ActorOperator, events[0].Actor)
	require.Equal(t, "run now by alice", events[0].Reason)
	require.NoError(t, n.client.ResumeSchedule(t.Context(), "d"))
	n.advanceTo(t, "d", d.NextFireAt)
	fires := n.fireTimes(t, "d")
	require.Len(t, fires, 2, "the manual run and the fire at its time")
	require.Equal(t, d.NextFireAt, fires[1])

	_, err = n.client.RunSchedule(t.Context(), "no-such")
	require.ErrorIs(t, err, ErrNotFound)
	for _, bad := range []struct {
		name   string
		actor  Actor
		reason string
		field  string
	}{{"", ActorAPI, "", "name"}, {"d", "someone", "", "actor"}, {"d", ActorAPI, string(make([]byte, MaxReasonBytes+1)), "reason"}} {
		_, err = n.client.RunScheduleBy(t.Context(), bad.name, bad.actor, bad.reason)
		var verr *ValidationError
		require.ErrorAs(t, err, &verr)
		require.Equal(t, bad.field, verr.Field)
	}
}

// Contract 10's DST rule, end to end: "30 2 * * *" in New York runs once on 2026-03-08, at
// 03:00 EDT (the first instant after the skipped 02:30), and at 02:30 EDT the next day.
func TestScheduleDSTSpringForward(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 7, 12, 0, 0, 0, time.UTC)
	n := scheduleAt(t, start, nil)
	info, err := n.client.AddSchedule(t.Context(), Schedule{Name: "nightly", Cron: "30 2 * * *",
		TZ: "America/New_York", Kind: "digest", Overlap: OverlapAllow})
	require.NoError(t, err)
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	jump := time.Date(2026, 3, 8, 3, 0, 0, 0, ny)
	require.Equal(t, "2026-03-08T03:00:00-04:00", jump.Format(time.RFC3339))
	require.True(t, info.NextFireAt.Equal(jump), "next fire %s", info.NextFireAt)

	n.advanceTo(t, "nightly", jump.Add(-time.Second))
	require.Empty(t, n.fireTimes(t, "nightly"))
	n.advanceTo(t, "nightly", jump)
	n.advanceTo(t, "nightly", time.Date(2026, 3, 9, 2, 29, 59, 0, ny))
	requireTimes(t, []time.Time{jump}, n.fireTimes(t, "nightly"))
	n.advanceTo(t, "nightly", time.Date(2026, 3, 9, 2, 30, 0, 0, ny))
	requireTimes(t, []time.Time{jump, time.Date(2026, 3, 9, 2, 30, 0, 0, ny)}, n.fireTimes(t, "nightly"))
}

// A fixed-delay schedule fires one delay after its previous job ended, and never while that
// job is going.
func TestScheduleFixedDelay(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started, release := make(chan struct{}, 10), make(chan struct{}, 10)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[digest]) error {
		started <- struct{}{}
		<-release
		return nil
	})
	n := scheduleAt(t, testStart, ws)
	t.Cleanup(func() { close(release) }) // before the node stops, even when the test fails
	info, err := n.client.AddSchedule(t.Context(), Schedule{Name: "d", FixedDelay: 5 * time.Minute, Args: digest{}})
	require.NoError(t, err)
	require.Equal(t, 5*time.Minute, info.FixedDelay)
	require.Equal(t, testStart.Add(5*time.Minute), info.NextFireAt)

	n.advanceTo(t, "d", testStart.Add(5*time.Minute))
	recv(t, started)
	requireTimes(t, minutes(testStart, 5), n.fireTimes(t, "d"))
	// The job runs for 7 minutes, while the leader ticks: nothing fires meanwhile.
	n.stepUntil(t, 5*time.Second, func() bool { return !n.clock.Now().Before(testStart.Add(12 * time.Minute)) })
	requireTimes(t, minutes(testStart, 5), n.fireTimes(t, "d"))
	release <- struct{}{}
	info, err = n.client.GetSchedule(t.Context(), "d")
	require.NoError(t, err)
	first := (&testBundle{client: n.client, clock: n.clock}).waitFor(t, info.LastJobID, StateCompleted)
	require.True(t, first.FinishedAt.After(testStart.Add(12*time.Minute)) || first.FinishedAt.Equal(testStart.Add(12*time.Minute)))

	n.clock.Advance(first.FinishedAt.Add(5 * time.Minute).Sub(n.clock.Now()))
	n.runUntil(t, func() bool { return len(n.fireTimes(t, "d")) == 2 })
	requireTimes(t, []time.Time{testStart.Add(5 * time.Minute), first.FinishedAt.Add(5 * time.Minute)}, n.fireTimes(t, "d"))
}

// Jitter delays a run by the same hash-derived amount on every node; the job waits as
// scheduled until then.
func TestScheduleJitter(t *testing.T) {
	t.Parallel()
	n := scheduleAt(t, testStart, nil)
	_, err := n.client.AddSchedule(t.Context(), Schedule{Name: "j", Every: time.Minute, Kind: "digest",
		Jitter: 40 * time.Second, Overlap: OverlapAllow})
	require.NoError(t, err)
	fire := testStart.Add(time.Minute)
	n.advanceTo(t, "j", fire)
	info, err := n.client.GetSchedule(t.Context(), "j")
	require.NoError(t, err)
	job, err := n.client.Get(t.Context(), info.LastJobID)
	require.NoError(t, err)
	delay := schedule.Jitter(fire, 40*time.Second, "j")
	require.Greater(t, delay, time.Second, "jitter of this fire time (a hash)")
	require.Equal(t, fire.Add(delay).Truncate(time.Microsecond), job.RunAt)
	require.Equal(t, StateScheduled, job.State)
}

// Schedules declared in Config.Schedules are stored on Start, updated and removed with the
// declaration; schedules added through the API are left alone and cannot shadow them.
func TestScheduleReconcileDeclared(t *testing.T) {
	t.Parallel()
	path, clk := t.TempDir()+"/hopper.db", clock.NewFake(testStart)
	declare := func(ss ...Schedule) func(*Config) { return func(c *Config) { c.Schedules = ss } }
	a := openNode(t, path, clk, nil, declare(
		Schedule{Name: "daily", Cron: "@daily", Kind: "digest", Args: digest{List: "v1"}},
		Schedule{Name: "hourly", Cron: "@hourly", Kind: "digest"}))
	_, err := a.client.AddSchedule(t.Context(), Schedule{Name: "adhoc", Every: time.Hour, Kind: "digest"})
	require.NoError(t, err)
	_, err = a.client.AddSchedule(t.Context(), Schedule{Name: "daily", Every: time.Hour, Kind: "digest"})
	require.ErrorIs(t, err, ErrScheduleInCode)
	require.ErrorIs(t, err, ErrDuplicate)
	require.ErrorIs(t, a.client.RemoveSchedule(t.Context(), "hourly"), ErrScheduleInCode)
	require.NoError(t, a.client.PauseSchedule(t.Context(), "hourly"), "operators may pause a declared schedule")
	require.Equal(t, map[string]string{"adhoc": "api", "daily": "code", "hourly": "code"}, sources(t, a.client))
	a.stop(t)

	b := openNode(t, path, clk, nil, declare(Schedule{Name: "hourly", Cron: "@hourly", Kind: "digest", Queue: "q2"},
		Schedule{Name: "adhoc", Cron: "@daily", Kind: "digest"}))
	require.Equal(t, map[string]string{"adhoc": "code", "hourly": "code"}, sources(t, b.client),
		"daily is no longer declared; the declaration takes adhoc over")
	hourly, err := b.client.GetSchedule(t.Context(), "hourly")
	require.NoError(t, err)
	require.Equal(t, "q2", hourly.Queue)
	require.True(t, hourly.Paused, "a restart does not undo an operator's pause")
	b.stop(t)

	c := openNode(t, path, clk, nil, nil)
	require.Len(t, sources(t, c.client), 2, "a client declaring nothing (nil) leaves schedules alone")
	c.stop(t)

	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clk})
	require.NoError(t, err)
	defer st.Close()
	bad, err := NewClient(Config{Store: st, Clock: clk, Schedules: []Schedule{{Name: "x", Cron: "61 * * * *", Kind: "k"}}})
	require.NoError(t, err)
	err = bad.Start(t.Context())
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "Config.Schedules[0].cron", ve.Field)
	stoptest.Within(t, bad, 10*time.Second)
}

func sources(t *testing.T, c *Client) map[string]string {
	t.Helper()
	list, err := c.Schedules(t.Context())
	require.NoError(t, err)
	out := map[string]string{}
	for _, s := range list {
		out[s.Name] = s.Source
	}
	return out
}

func TestAddScheduleValidates(t *testing.T) {
	t.Parallel()
	n := scheduleAt(t, testStart, nil)
	ok := Schedule{Name: "s", Cron: "* * * * *", Kind: "digest"}
	for _, tc := range []struct {
		field  string
		mutate func(*Schedule)
	}{
		{"name", func(s *Schedule) { s.Name = "" }},
		{"name", func(s *Schedule) { s.Name = "has space" }},
		{"cron", func(s *Schedule) { s.Cron = "" }},
		{"cron", func(s *Schedule) { s.Every = time.Minute }},
		{"cron", func(s *Schedule) { s.Cron = "61 * * * *" }},
		{"tz", func(s *Schedule) { s.TZ = "Mars/Olympus" }}, // not "cron": found by FuzzFlags (internal/cli)
		{"tz", func(s *Schedule) { s.TZ = "Local" }},
		{"tz", func(s *Schedule) { s.Cron, s.Every, s.TZ = "", time.Minute, "Mars/Olympus" }},
		{"every", func(s *Schedule) { s.Cron, s.Every = "", 500*time.Millisecond }},
		{"every", func(s *Schedule) { s.Cron, s.Every = "", time.Second+time.Microsecond }},
		{"fixed_delay", func(s *Schedule) { s.Cron, s.FixedDelay = "", -time.Minute }},
		{"kind", func(s *Schedule) { s.Kind = "" }},
		{"queue", func(s *Schedule) { s.Queue = "no spaces" }},
		{"args", func(s *Schedule) { s.Args = json.RawMessage(`{`) }},
		{"args", func(s *Schedule) { s.Args = func() {} }},
		{"priority", func(s *Schedule) { s.Priority = 5000 }},
		{"max_attempts", func(s *Schedule) { s.MaxAttempts = -1 }},
		{"timeout", func(s *Schedule) { s.Timeout = -time.Second }},
		{"headers", func(s *Schedule) { s.Headers = map[string]string{"": "x"} }},
		{"catch_up", func(s *Schedule) { s.CatchUp = "some" }},
		{"overlap", func(s *Schedule) { s.Overlap = "maybe" }},
		{"jitter", func(s *Schedule) { s.Jitter = -time.Second }},
	} {
		s := ok
		tc.mutate(&s)
		_, err := n.client.AddSchedule(t.Context(), s)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "%+v", s)
		require.Equal(t, tc.field, ve.Field, "%+v: %v", s, err)
	}
	list, err := n.client.Schedules(t.Context())
	require.NoError(t, err)
	require.Empty(t, list, "nothing stored")

	require.ErrorIs(t, n.client.RemoveSchedule(t.Context(), "nope"), ErrNotFound)
	require.ErrorIs(t, n.client.PauseSchedule(t.Context(), "nope"), ErrNotFound)
	require.ErrorIs(t, n.client.ResumeSchedule(t.Context(), "nope"), ErrNotFound)
	_, err = n.client.GetSchedule(t.Context(), "nope")
	require.ErrorIs(t, err, ErrNotFound)
}

// A paused schedule does not fire; resumed, its catch-up policy decides about the fire times
// it missed (skip by default).
func TestSchedulePauseResume(t *testing.T) {
	t.Parallel()
	n := scheduleAt(t, testStart, nil)
	_, err := n.client.AddSchedule(t.Context(), Schedule{Name: "s", Cron: "* * * * *", Kind: "digest", Overlap: OverlapAllow})
	require.NoError(t, err)
	require.NoError(t, n.client.PauseSchedule(t.Context(), "s"))
	// Paused past 12:03 and its grace: on resume, 12:01 to 12:03 are missed.
	n.stepUntil(t, 5*time.Second, func() bool { return n.clock.Now().After(testStart.Add(3*time.Minute + 40*time.Second)) })
	require.Empty(t, n.fireTimes(t, "s"))

	info, err := n.client.AddSchedule(t.Context(), Schedule{Name: "s", Cron: "* * * * *", Kind: "digest", Queue: "other"})
	require.NoError(t, err)
	require.True(t, info.Paused, "adding never resumes")
	require.NoError(t, n.client.ResumeSchedule(t.Context(), "s"))
	n.advanceTo(t, "s", testStart.Add(4*time.Minute))
	requireTimes(t, minutes(testStart, 4), n.fireTimes(t, "s"))
	require.NoError(t, n.client.RemoveSchedule(t.Context(), "s"))
	list, err := n.client.Schedules(t.Context())
	require.NoError(t, err)
	require.Empty(t, list)
}

// Fixed-delay schedules waiting for their jobs must not crowd the due list: 100 of them, with
// jobs that never end, and a per-minute cron schedule still fires every minute.
func TestScheduleWaitingFixedDelaysDoNotStarveOthers(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 5, 1, 12, 0, 0, 300_000_000, time.UTC)
	n := scheduleAt(t, start, nil) // no workers: jobs stay queued, as on a paused queue
	ctx := context.Background()
	for i := range 100 {
		_, err := n.client.AddSchedule(ctx, Schedule{Name: fmt.Sprintf("slow-%03d", i), FixedDelay: time.Minute, Kind: "slow"})
		require.NoError(t, err)
	}
	// Catch-up all: the fake clock may run ahead of a busy scheduler, and a late fire must
	// still count.
	_, err := n.client.AddSchedule(ctx, Schedule{Name: "every-minute", Cron: "* * * * *", Kind: "digest",
		Overlap: OverlapAllow, CatchUp: CatchUpAll})
	require.NoError(t, err)
	// Before the fix the 100 waiting schedules took every batch and this never fired. (The
	// fake clock may run ahead of the scheduler here, so fires are counted, not timed.)
	// Each step re-reads 100 waiting schedules' jobs: give it time on a loaded machine.
	n.stepUntilWithin(t, time.Second, time.Minute, func() bool { return len(n.fireTimes(t, "every-minute")) >= 5 })
}

// Catching up a `skip` schedule: each missed fire would overlap the one before it, so only the
// oldest missed fire runs (and, no worker taking it, it holds the later ones off).
func TestScheduleCatchUpAllWithOverlapSkipRunsOnlyTheOldest(t *testing.T) {
	t.Parallel()
	path, clk := t.TempDir()+"/hopper.db", clock.NewFake(testStart)
	a := openNode(t, path, clk, nil, nil)
	_, err := a.client.AddSchedule(t.Context(), Schedule{Name: "s", Cron: "* * * * *", Kind: "digest",
		CatchUp: CatchUpAll, Overlap: OverlapSkip})
	require.NoError(t, err)
	a.advanceTo(t, "s", testStart.Add(time.Minute))
	jobs, err := a.client.List(t.Context(), &ListParams{Kinds: []string{"digest"}})
	require.NoError(t, err)
	require.Len(t, jobs.Jobs, 1)
	_, err = a.client.Cancel(t.Context(), jobs.Jobs[0].ID) // the 12:01 run ends
	require.NoError(t, err)
	a.stop(t)

	clk.Advance(6*time.Minute + 10*time.Second - (clk.Now().Sub(testStart)))
	b := openNode(t, path, clk, nil, nil)
	b.advanceTo(t, "s", testStart.Add(6*time.Minute+10*time.Second))
	b.advanceTo(t, "s", testStart.Add(7*time.Minute))
	requireTimes(t, minutes(testStart, 1, 2), b.fireTimes(t, "s"))
}

// NextFireTimes lists the coming fire times in the schedule's zone; a fixed-delay schedule
// knows only its next one.
func TestScheduleNextFireTimes(t *testing.T) {
	t.Parallel()
	b := setup(t, NewWorkers(), nil)
	hourly, err := b.client.AddSchedule(t.Context(), Schedule{Name: "hourly", Cron: "30 * * * *", TZ: "Asia/Kolkata", Kind: "report"})
	require.NoError(t, err)
	times := hourly.NextFireTimes(3)
	require.Len(t, times, 3)
	require.Equal(t, hourly.NextFireAt.UTC(), times[0].UTC())
	require.Equal(t, "Asia/Kolkata", times[0].Location().String())
	require.Equal(t, time.Hour, times[1].Sub(times[0]))
	require.Equal(t, time.Hour, times[2].Sub(times[1]))
	require.Equal(t, 30, times[1].Minute())

	delay, err := b.client.AddSchedule(t.Context(), Schedule{Name: "delay", FixedDelay: time.Minute, Kind: "report"})
	require.NoError(t, err)
	require.Len(t, delay.NextFireTimes(3), 1)
	require.Nil(t, delay.NextFireTimes(0))
}
