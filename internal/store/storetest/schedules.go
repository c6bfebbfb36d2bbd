package storetest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testSchedules(t *testing.T, opener Opener) {
	parallel(t, opener, "UpsertGetList", schedulesUpsertGetList)
	parallel(t, opener, "UpsertKeepsFireTimes", schedulesUpsertKeepsFireTimes)
	parallel(t, opener, "UpsertNeverResumes", schedulesUpsertNeverResumes)
	parallel(t, opener, "PauseAndDelete", schedulesPauseAndDelete)
	parallel(t, opener, "Due", schedulesDue)
	parallel(t, opener, "FireCompareAndSet", schedulesFireCAS)
	parallel(t, opener, "FireTimeEnqueuesOnce", schedulesFireTimeOnce)
	parallel(t, opener, "FireRace", schedulesFireRace)
	parallel(t, opener, "FireWithoutJobs", schedulesFireWithoutJobs)
	parallel(t, opener, "LiveJob", schedulesLiveJob)
	parallel(t, opener, "FiredAt", schedulesFiredAt)
	parallel(t, opener, "Run", schedulesRun)
	parallel(t, opener, "WorkflowTemplate", schedulesWorkflowTemplate)
	parallel(t, opener, "WorkflowFireTimeOnce", schedulesWorkflowFireTimeOnce)
}

// scheduledWorkflow is a fire of schedule name at at: a workflow a → b with at's fire key,
// its steps carrying the schedule's name.
func scheduledWorkflow(t *testing.T, name string, at time.Time) *store.WorkflowInsertParams {
	p := workflowParams(t, "nightly", stepSpec{name: "a"}, stepSpec{name: "b", after: []string{"a"}})
	p.FireKey = store.FireKey(name, at)
	for _, s := range p.Steps {
		s.ScheduleID, s.RunAt = name, at
	}
	return p
}

// A workflow schedule keeps its template as given, through an upsert and every read, and a
// definition without one loses it.
func schedulesWorkflowTemplate(t *testing.T, b *bundle) {
	sc := newSchedule("w", Start)
	sc.Kind = ""
	step := params(t, inQueue("exports"))
	step.Headers = map[string]string{"team": "data"}
	step.ID, step.Step = "", "export"
	report := params(t)
	report.ID, report.Step, report.OnParentFailure = "", "report", hoppertype.ParentRun
	sc.Workflow = &store.WorkflowTemplate{Name: "nightly", Steps: []*store.TemplateStep{
		{Job: step}, {Job: report, After: []string{"export"}, Delay: time.Minute}}}
	got := b.upsertSchedule(t, sc)
	require.Equal(t, sc.Workflow, got.Workflow)
	require.Equal(t, sc.Workflow, b.getSchedule(t, "w").Workflow)
	list, err := b.scheduleStore(t).ScheduleList(t.Context())
	require.NoError(t, err)
	require.Equal(t, sc.Workflow, list[0].Workflow)
	sc.Workflow, sc.Kind = nil, defaultKind
	require.Nil(t, b.upsertSchedule(t, sc).Workflow, "replaced by a job schedule")
}

// A fire step of a workflow schedule inserts each fire time's workflow whole, once: a fire
// key a stored workflow has inserts nothing (also in a later step, after a re-timing), and the
// schedule names the workflow of its last fire time, whose steps are the schedule's.
func schedulesWorkflowFireTimeOnce(t *testing.T, b *bundle) {
	b.upsertSchedule(t, newSchedule("w", Start))
	b.clock.Advance(2 * time.Minute)
	t1, t2 := Start.Add(time.Minute), Start.Add(2*time.Minute)
	first := scheduledWorkflow(t, "w", t1)
	res := b.fire(t, &store.ScheduleFireParams{Name: "w", ExpectedLast: Start, NewLast: t1, NewNext: t2,
		Workflows: []*store.WorkflowInsertParams{first}, FiredAt: t1})
	require.True(t, res.Fired)
	require.Len(t, res.Jobs, 2, "the workflow's steps")
	sc := b.getSchedule(t, "w")
	require.Equal(t, first.ID, sc.LastWorkflowID)
	sameTime(t, t1, sc.FiredAt, "the fire time of the last workflow")
	require.Len(t, b.jobsOf(t, "w"), 2)
	d, err := b.store.WorkflowGet(t.Context(), first.ID)
	require.NoError(t, err)
	require.Len(t, d.Steps, 2)
	require.Equal(t, hoppertype.StateWaiting, d.Steps[1].Job.State)

	// The same fire time again (a re-timed schedule, a second leader): nothing new.
	again := scheduledWorkflow(t, "w", t1)
	second := scheduledWorkflow(t, "w", t2)
	res = b.fire(t, &store.ScheduleFireParams{Name: "w", ExpectedLast: t1, NewLast: t2, NewNext: t2.Add(time.Minute),
		Workflows: []*store.WorkflowInsertParams{again, second}, FiredAt: t2})
	require.True(t, res.Fired)
	require.Len(t, res.Jobs, 2, "only the new fire time's workflow")
	require.Equal(t, second.ID, b.getSchedule(t, "w").LastWorkflowID)
	_, err = b.store.WorkflowGet(t.Context(), again.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Len(t, b.jobsOf(t, "w"), 4)
	live, err := b.scheduleStore(t).ScheduleLiveJob(t.Context(), "w")
	require.NoError(t, err)
	require.True(t, live, "a workflow's steps are the schedule's jobs")

	// A stale step writes nothing, workflows included.
	res = b.fire(t, &store.ScheduleFireParams{Name: "w", ExpectedLast: t1, NewLast: t2, NewNext: t2.Add(time.Minute),
		Workflows: []*store.WorkflowInsertParams{scheduledWorkflow(t, "w", t2.Add(time.Minute))}, FiredAt: t2})
	require.False(t, res.Fired)
	require.Len(t, b.jobsOf(t, "w"), 4)
	_, err = b.scheduleStore(t).ScheduleFire(t.Context(), &store.ScheduleFireParams{Name: "w", ExpectedLast: t2,
		NewLast: t2, NewNext: t2, Workflows: []*store.WorkflowInsertParams{{ID: newID(t), Name: "x"}}})
	require.ErrorIs(t, err, store.ErrInvalid, "a workflow without steps or fire key is refused")
}

// FiredAt is the fire time of the last job a fire enqueued: zero for a schedule that never
// enqueued one (its LastFireAt, the cursor, is its creation), kept by a fire step that skips
// every fire time and by a definition's change, even a new timing.
func schedulesFiredAt(t *testing.T, b *bundle) {
	created := b.upsertSchedule(t, newSchedule("s", Start))
	require.True(t, created.FiredAt.IsZero(), "never fired: %v", created.FiredAt)
	sameTime(t, Start, created.LastFireAt, "the cursor starts at the creation")
	b.clock.Advance(3 * time.Minute)
	t1, t2, t3 := Start.Add(time.Minute), Start.Add(2*time.Minute), Start.Add(3*time.Minute)
	skipped := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: t1, NewNext: t2, FiredAt: t1})
	require.True(t, skipped.Fired)
	require.True(t, b.getSchedule(t, "s").FiredAt.IsZero(), "a fire time skipped is no fire")

	res := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: t1, NewLast: t3, NewNext: t3.Add(time.Minute),
		Jobs: []*store.InsertParams{fireJob(t, "s", t2, `{}`)}, FiredAt: t2})
	require.Len(t, res.Jobs, 1)
	sc := b.getSchedule(t, "s")
	sameTime(t, t2, sc.FiredAt, "the fire time of the last job")
	sameTime(t, t3, sc.LastFireAt, "the cursor goes on to the fire time skipped after it")
	require.Equal(t, res.Jobs[0].ID, sc.LastJobID)

	b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: t3, NewLast: t3.Add(time.Minute),
		NewNext: t3.Add(2 * time.Minute), FiredAt: t3.Add(time.Minute)})
	sameTime(t, t2, b.getSchedule(t, "s").FiredAt, "kept by a fire step without jobs")
	retimed := b.getSchedule(t, "s")
	retimed.Spec, retimed.LastFireAt, retimed.NextFireAt = "*/5 * * * *", b.clock.Now(), b.clock.Now().Add(time.Minute)
	got := b.upsertSchedule(t, retimed)
	sameTime(t, t2, got.FiredAt, "kept by a new timing")
	require.Equal(t, res.Jobs[0].ID, got.LastJobID)
}

// A manual fire inserts the job its builder makes from the schedule as stored, queued, and
// records it as the manual fire; the fire times, the last job and FiredAt are untouched, a
// paused schedule runs too, and the job counts as enqueued. An unknown name is ErrNotFound
// and inserts nothing.
func schedulesRun(t *testing.T, b *bundle) {
	ss := b.scheduleStore(t)
	stored := newSchedule("s", Start)
	stored.Queue = "reports"
	b.upsertSchedule(t, stored)
	_, err := ss.ScheduleSetPaused(t.Context(), "s", true)
	require.NoError(t, err)
	before := b.getSchedule(t, "s")
	b.clock.Advance(30 * time.Second)
	at := b.clock.Now()
	var seen *store.Schedule
	job, err := ss.ScheduleRun(t.Context(), &store.ScheduleRunParams{Name: "s", At: at, Job: func(sc *store.Schedule) *store.InsertParams {
		seen = sc
		p := params(t, withArgs(string(sc.Args)), inQueue(sc.Queue))
		p.ScheduleID, p.Actor, p.Reason = sc.Name, hoppertype.ActorOperator, "run now by ops"
		return p
	}})
	require.NoError(t, err)
	require.Equal(t, before, seen, "the builder gets the schedule as stored")
	require.Equal(t, hoppertype.StateQueued, job.State)
	require.Equal(t, "reports", job.Queue)
	require.Equal(t, "s", job.ScheduleID)
	require.JSONEq(t, `{"report":"daily"}`, string(job.Args))
	require.Equal(t, job, b.get(t, job.ID))
	evs := b.events(t, job.ID)
	require.Equal(t, hoppertype.ActorOperator, evs[0].Actor)
	require.Equal(t, "run now by ops", evs[0].Reason)

	after := b.getSchedule(t, "s")
	sameTime(t, at, after.ManualFireAt, "the manual fire")
	require.Equal(t, job.ID, after.ManualJobID)
	after.ManualFireAt, after.ManualJobID = before.ManualFireAt, before.ManualJobID
	require.Equal(t, before, after, "nothing else changes: fire times, last job, FiredAt, pause")
	rows := b.stats(t, store.StatsParams{Since: Start, Queue: "reports"})
	require.Len(t, rows, 1)
	require.Equal(t, int64(1), rows[0].Enqueued)

	_, err = ss.ScheduleRun(t.Context(), &store.ScheduleRunParams{Name: "nope", At: at, Job: func(*store.Schedule) *store.InsertParams {
		t.Fatal("no schedule, no job to build")
		return nil
	}})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Len(t, b.jobsOf(t, "s"), 1)
}

// scheduleStore is the bundle's store as a ScheduleStore: every store keeps schedules.
func (b *bundle) scheduleStore(t *testing.T) store.ScheduleStore {
	t.Helper()
	return b.store
}

// newSchedule returns a per-minute schedule created now, next due a minute from now.
func newSchedule(name string, now time.Time) *store.Schedule {
	return &store.Schedule{
		Name: name, Spec: "* * * * *", Mode: "cron", TZ: "UTC", Kind: defaultKind, Queue: defaultQueue,
		Args: json.RawMessage(`{"report":"daily"}`), MaxAttempts: 3, CatchUp: "skip", Overlap: "skip",
		Source: store.SourceAPI, LastFireAt: now, NextFireAt: now.Truncate(time.Minute).Add(time.Minute),
	}
}

func (b *bundle) upsertSchedule(t *testing.T, sc *store.Schedule) *store.Schedule {
	t.Helper()
	out, err := b.scheduleStore(t).ScheduleUpsert(t.Context(), sc)
	require.NoError(t, err)
	return out
}

func (b *bundle) getSchedule(t *testing.T, name string) *store.Schedule {
	t.Helper()
	sc, err := b.scheduleStore(t).ScheduleGet(t.Context(), name)
	require.NoError(t, err)
	return sc
}

// fireJob returns the job a schedule's fire time enqueues, as the scheduler builds it.
func fireJob(t *testing.T, name string, at time.Time, args string) *store.InsertParams {
	p := params(t, withArgs(args), withRunAt(at))
	p.IdempotencyKey, p.IdempotencyTTL, p.ScheduleID = store.FireKey(name, at), store.FireKeyRetention, name
	p.Actor, p.Reason = hoppertype.ActorLeader, "schedule "+name
	return p
}

func (b *bundle) fire(t *testing.T, p *store.ScheduleFireParams) *store.ScheduleFireResult {
	t.Helper()
	res, err := b.scheduleStore(t).ScheduleFire(t.Context(), p)
	require.NoError(t, err)
	return res
}

// jobsOf returns the jobs of a schedule, oldest first.
func (b *bundle) jobsOf(t *testing.T, name string) []*hoppertype.JobRow {
	t.Helper()
	var out []*hoppertype.JobRow
	for _, j := range b.listAll(t, store.ListParams{Ascending: true}) {
		if j.ScheduleID == name {
			out = append(out, j)
		}
	}
	return out
}

// A schedule is stored with every field and listed by name; unknown names are ErrNotFound.
func schedulesUpsertGetList(t *testing.T, b *bundle) {
	ss := b.scheduleStore(t)
	sc := newSchedule("nightly", Start)
	sc.Spec, sc.TZ, sc.Queue, sc.Priority, sc.Timeout = "30 2 * * *", "America/New_York", "reports", 7, time.Minute
	sc.Headers, sc.CatchUp, sc.Overlap, sc.Jitter = map[string]string{"team": "ops"}, "all", "allow", 90*time.Second
	sc.Source = store.SourceCode
	got := b.upsertSchedule(t, sc)
	require.Equal(t, "nightly", got.Name)
	require.Equal(t, "30 2 * * *", got.Spec)
	require.Equal(t, "cron", got.Mode)
	require.Equal(t, "America/New_York", got.TZ)
	require.Equal(t, defaultKind, got.Kind)
	require.Equal(t, "reports", got.Queue)
	require.JSONEq(t, `{"report":"daily"}`, string(got.Args))
	require.Equal(t, map[string]string{"team": "ops"}, got.Headers)
	require.Equal(t, 7, got.Priority)
	require.Equal(t, 3, got.MaxAttempts)
	require.Equal(t, time.Minute, got.Timeout)
	require.Equal(t, "all", got.CatchUp)
	require.Equal(t, "allow", got.Overlap)
	require.Equal(t, 90*time.Second, got.Jitter)
	require.False(t, got.Paused)
	require.Equal(t, store.SourceCode, got.Source)
	sameTime(t, Start, got.LastFireAt, "last fire")
	sameTime(t, Start.Add(time.Minute), got.NextFireAt, "next fire")
	sameTime(t, Start, got.CreatedAt, "created from the store's clock")
	require.Empty(t, got.LastJobID)
	require.Equal(t, got, b.getSchedule(t, "nightly"))

	delay := newSchedule("cleanup", Start)
	delay.Spec, delay.Mode, delay.Interval = "", "fixed-delay", 5*time.Minute
	b.upsertSchedule(t, delay)
	list, err := ss.ScheduleList(t.Context())
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "cleanup", list[0].Name, "by name")
	require.Equal(t, "fixed-delay", list[0].Mode)
	require.Equal(t, 5*time.Minute, list[0].Interval)
	require.Nil(t, list[0].Headers)

	_, err = ss.ScheduleGet(t.Context(), "no-such-schedule")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// Replacing a definition keeps the fire times, the last job and the creation time, unless the
// timing changed: a new spec starts from the given times instead of catching up on the old.
func schedulesUpsertKeepsFireTimes(t *testing.T, b *bundle) {
	b.upsertSchedule(t, newSchedule("s", Start))
	next := Start.Add(time.Minute)
	fired := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: next,
		NewNext: next.Add(time.Minute), Jobs: []*store.InsertParams{fireJob(t, "s", next, `{}`)}})
	require.True(t, fired.Fired)

	b.clock.Advance(time.Hour)
	now := b.clock.Now()
	same := newSchedule("s", now)
	same.Args, same.Queue, same.Source = json.RawMessage(`{"v":2}`), "other", store.SourceCode
	got := b.upsertSchedule(t, same)
	require.JSONEq(t, `{"v":2}`, string(got.Args))
	require.Equal(t, "other", got.Queue)
	require.Equal(t, store.SourceCode, got.Source)
	sameTime(t, next, got.LastFireAt, "last fire kept")
	sameTime(t, next.Add(time.Minute), got.NextFireAt, "next fire kept")
	require.Equal(t, fired.Jobs[0].ID, got.LastJobID)
	sameTime(t, Start, got.CreatedAt, "created_at kept")
	sameTime(t, now, got.UpdatedAt, "updated_at")

	for _, change := range []func(*store.Schedule){
		func(s *store.Schedule) { s.Spec = "*/5 * * * *" },
		func(s *store.Schedule) { s.TZ = "Europe/Berlin" },
		func(s *store.Schedule) { s.Spec, s.Mode, s.Interval = "@every 1m0s", "fixed-rate", time.Minute },
		func(s *store.Schedule) { s.Spec, s.Mode, s.Interval = "", "fixed-delay", time.Minute },
		func(s *store.Schedule) { s.Spec, s.Mode, s.Interval = "", "fixed-delay", 2*time.Minute },
	} {
		b.clock.Advance(time.Minute)
		now := b.clock.Now()
		sc := b.getSchedule(t, "s")
		sc.LastFireAt, sc.NextFireAt = now, now.Add(time.Second)
		change(sc)
		got := b.upsertSchedule(t, sc)
		sameTime(t, now, got.LastFireAt, "a new timing starts from the given last fire")
		sameTime(t, now.Add(time.Second), got.NextFireAt, "and next fire")
	}
}

// Upserting with Paused=false leaves a paused schedule paused; Paused=true pauses it.
func schedulesUpsertNeverResumes(t *testing.T, b *bundle) {
	ss := b.scheduleStore(t)
	b.upsertSchedule(t, newSchedule("s", Start))
	_, err := ss.ScheduleSetPaused(t.Context(), "s", true)
	require.NoError(t, err)
	require.True(t, b.upsertSchedule(t, newSchedule("s", Start)).Paused, "an upsert does not resume")
	resumed, err := ss.ScheduleSetPaused(t.Context(), "s", false)
	require.NoError(t, err)
	require.False(t, resumed.Paused)
	sc := newSchedule("s", Start)
	sc.Paused = true
	require.True(t, b.upsertSchedule(t, sc).Paused)
}

// Pausing hides a schedule from the due query; deleting removes it but not its jobs.
func schedulesPauseAndDelete(t *testing.T, b *bundle) {
	ss := b.scheduleStore(t)
	b.upsertSchedule(t, newSchedule("s", Start))
	b.clock.Advance(time.Minute)
	now := b.clock.Now()
	due, _, err := ss.ScheduleDue(t.Context(), now, 10)
	require.NoError(t, err)
	require.Len(t, due, 1)

	b.clock.Advance(time.Second)
	paused, err := ss.ScheduleSetPaused(t.Context(), "s", true)
	require.NoError(t, err)
	require.True(t, paused.Paused)
	sameTime(t, b.clock.Now(), paused.UpdatedAt, "updated_at")
	due, next, err := ss.ScheduleDue(t.Context(), now, 10)
	require.NoError(t, err)
	require.Empty(t, due, "a paused schedule is never due")
	require.True(t, next.IsZero(), "nor next: %v", next)
	_, err = ss.ScheduleSetPaused(t.Context(), "nope", true)
	require.ErrorIs(t, err, store.ErrNotFound)

	step := func() *store.ScheduleFireParams {
		return &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: now, NewNext: now.Add(time.Minute),
			Jobs: []*store.InsertParams{fireJob(t, "s", now, `{}`)}}
	}
	res := b.fire(t, step())
	require.False(t, res.Fired, "a schedule paused after the due read does not fire")
	require.Empty(t, res.Jobs)
	_, err = ss.ScheduleSetPaused(t.Context(), "s", false)
	require.NoError(t, err)
	res = b.fire(t, step())
	require.True(t, res.Fired)
	require.NoError(t, ss.ScheduleDelete(t.Context(), "s"))
	_, err = ss.ScheduleGet(t.Context(), "s")
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, ss.ScheduleDelete(t.Context(), "s"), store.ErrNotFound)
	b.get(t, res.Jobs[0].ID) // the job stays
	list, err := ss.ScheduleList(t.Context())
	require.NoError(t, err)
	require.Empty(t, list)
}

// The due query returns unpaused schedules whose next fire time has come, earliest first, up to
// the limit.
func schedulesDue(t *testing.T, b *bundle) {
	ss := b.scheduleStore(t)
	for i, name := range []string{"c", "a", "b", "later"} {
		sc := newSchedule(name, Start)
		sc.NextFireAt = Start.Add(time.Duration(3-i) * time.Second)
		if name == "later" {
			sc.NextFireAt = Start.Add(time.Hour)
		}
		b.upsertSchedule(t, sc)
	}
	due, next, err := ss.ScheduleDue(t.Context(), Start.Add(3*time.Second), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a", "c"}, scheduleNames(due))
	sameTime(t, Start.Add(time.Hour), next, "the next fire time after now")
	due, next, err = ss.ScheduleDue(t.Context(), Start.Add(2*time.Second), 10)
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a"}, scheduleNames(due), "next_fire_at <= now")
	sameTime(t, Start.Add(3*time.Second), next, "the next fire time after now")
	due, next, err = ss.ScheduleDue(t.Context(), Start.Add(3*time.Second), 1)
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, scheduleNames(due))
	require.True(t, next.IsZero(), "more are due than the limit: no next fire time, %v", next)
	due, next, err = ss.ScheduleDue(t.Context(), Start, 10)
	require.NoError(t, err)
	require.Empty(t, due)
	sameTime(t, Start.Add(time.Second), next, "nothing due: the earliest fire time")
}

func scheduleNames(ss []*store.Schedule) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

// A fire step applies only from the last fire time it computed from: a second step from the
// same (now stale) time, as a second leader would take, inserts nothing and changes nothing.
func schedulesFireCAS(t *testing.T, b *bundle) {
	b.upsertSchedule(t, newSchedule("s", Start))
	b.clock.Advance(3 * time.Minute)
	t1, t2, t3 := Start.Add(time.Minute), Start.Add(2*time.Minute), Start.Add(3*time.Minute)
	res := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: t3, NewNext: t3.Add(time.Minute),
		Jobs: []*store.InsertParams{fireJob(t, "s", t1, `{}`), fireJob(t, "s", t2, `{}`), fireJob(t, "s", t3.Add(time.Hour), `{}`)}})
	require.True(t, res.Fired)
	require.Len(t, res.Jobs, 3)
	for _, j := range res.Jobs {
		require.Equal(t, "s", j.ScheduleID)
	}
	require.Equal(t, hoppertype.StateQueued, res.Jobs[0].State)
	require.Equal(t, hoppertype.StateScheduled, res.Jobs[2].State, "a run time ahead (jitter) makes it scheduled")
	sc := b.getSchedule(t, "s")
	sameTime(t, t3, sc.LastFireAt, "last fire")
	sameTime(t, t3.Add(time.Minute), sc.NextFireAt, "next fire")
	require.Equal(t, res.Jobs[2].ID, sc.LastJobID)
	jobs := b.jobsOf(t, "s")
	require.Len(t, jobs, 3)
	require.Equal(t, store.FireKey("s", t1), jobs[0].IdempotencyKey)

	stale := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: t3.Add(time.Minute),
		NewNext: t3.Add(2 * time.Minute), Jobs: []*store.InsertParams{fireJob(t, "s", t3.Add(time.Minute), `{}`)}})
	require.False(t, stale.Fired)
	require.Empty(t, stale.Jobs)
	require.Equal(t, sc, b.getSchedule(t, "s"), "a stale fire changes nothing")
	require.Len(t, b.jobsOf(t, "s"), 3, "and inserts nothing")

	gone := b.fire(t, &store.ScheduleFireParams{Name: "no-such", ExpectedLast: Start, NewLast: t1, NewNext: t2,
		Jobs: []*store.InsertParams{fireJob(t, "no-such", t1, `{}`)}})
	require.False(t, gone.Fired, "an unknown (deleted) schedule does not fire")
	require.Empty(t, b.jobsOf(t, "no-such"))
}

// A fire time whose key is live enqueues nothing more, even from a fire step that wins its
// compare-and-set (a schedule re-created under the same name) and with other args; the key
// de-duplicates for FireKeyRetention.
func schedulesFireTimeOnce(t *testing.T, b *bundle) {
	ss := b.scheduleStore(t)
	b.upsertSchedule(t, newSchedule("s", Start))
	t1, t2 := Start.Add(time.Minute), Start.Add(2*time.Minute)
	b.clock.Advance(2 * time.Minute)
	first := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: t1, NewNext: t2,
		Jobs: []*store.InsertParams{fireJob(t, "s", t1, `{"v":1}`)}})
	require.Len(t, first.Jobs, 1)

	require.NoError(t, ss.ScheduleDelete(t.Context(), "s"))
	b.upsertSchedule(t, newSchedule("s", Start))
	again := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: t2, NewNext: t2.Add(time.Minute),
		Jobs: []*store.InsertParams{fireJob(t, "s", t1, `{"v":2}`), fireJob(t, "s", t2, `{"v":2}`)}})
	require.True(t, again.Fired)
	require.Len(t, again.Jobs, 1, "t1 already has its job")
	jobs := b.jobsOf(t, "s")
	require.Len(t, jobs, 2)
	require.Equal(t, first.Jobs[0].ID, jobs[0].ID)
	require.Equal(t, store.FireKey("s", t2), jobs[1].IdempotencyKey)
	require.Equal(t, again.Jobs[0].ID, b.getSchedule(t, "s").LastJobID)

	// Only the key's job: the last job is the one the key names when it is the newest.
	onlyOld := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: t2, NewLast: t2, NewNext: t2.Add(time.Minute),
		Jobs: []*store.InsertParams{fireJob(t, "s", t1, `{}`)}})
	require.True(t, onlyOld.Fired)
	require.Empty(t, onlyOld.Jobs)
	require.Equal(t, first.Jobs[0].ID, b.getSchedule(t, "s").LastJobID)

	b.clock.Advance(store.FireKeyRetention)
	late := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: t2, NewLast: t2, NewNext: t2.Add(time.Minute),
		Jobs: []*store.InsertParams{fireJob(t, "s", t1, `{}`)}})
	require.Len(t, late.Jobs, 1, "past its retention the key de-duplicates no more")
}

// Leaders racing to fire one schedule from the same last fire time (a failover mid-tick):
// exactly one fire step applies and each fire time has one job.
func schedulesFireRace(t *testing.T, b *bundle) {
	b.upsertSchedule(t, newSchedule("s", Start))
	b.clock.Advance(3 * time.Minute)
	const leaders = 8
	ps := make([]*store.ScheduleFireParams, leaders)
	for i := range ps {
		ps[i] = &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: Start.Add(3 * time.Minute),
			NewNext: Start.Add(4 * time.Minute)}
		for m := 1; m <= 3; m++ {
			ps[i].Jobs = append(ps[i].Jobs, fireJob(t, "s", Start.Add(time.Duration(m)*time.Minute), `{}`))
		}
	}
	results := make([]*store.ScheduleFireResult, leaders)
	errs := make([]error, leaders)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range leaders {
		wg.Go(func() {
			<-start
			results[i], errs[i] = b.scheduleStore(t).ScheduleFire(t.Context(), ps[i])
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i := range leaders {
		require.NoError(t, errs[i], "leader %d", i)
		if results[i].Fired {
			won++
			require.Len(t, results[i].Jobs, 3)
		}
	}
	require.Equal(t, 1, won, "one fire step wins")
	jobs := b.jobsOf(t, "s")
	require.Len(t, jobs, 3)
	for i, j := range jobs {
		require.Equal(t, store.FireKey("s", Start.Add(time.Duration(i+1)*time.Minute)), j.IdempotencyKey)
	}
}

// A fire step without jobs (every fire time skipped) only moves the fire times.
func schedulesFireWithoutJobs(t *testing.T, b *bundle) {
	b.upsertSchedule(t, newSchedule("s", Start))
	b.clock.Advance(10 * time.Minute)
	res := b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: Start.Add(10 * time.Minute),
		NewNext: Start.Add(11 * time.Minute)})
	require.True(t, res.Fired)
	require.Empty(t, res.Jobs)
	sc := b.getSchedule(t, "s")
	sameTime(t, Start.Add(10*time.Minute), sc.LastFireAt, "last fire")
	sameTime(t, Start.Add(11*time.Minute), sc.NextFireAt, "next fire")
	sameTime(t, Start.Add(10*time.Minute), sc.UpdatedAt, "updated_at")
	require.Empty(t, sc.LastJobID)
	require.Empty(t, b.jobsOf(t, "s"))
}

// A schedule has a live job while one of its jobs is scheduled, queued, running or suspended.
func schedulesLiveJob(t *testing.T, b *bundle) {
	ss := b.scheduleStore(t)
	live := func() bool {
		t.Helper()
		ok, err := ss.ScheduleLiveJob(t.Context(), "s")
		require.NoError(t, err)
		return ok
	}
	require.False(t, live(), "no jobs")
	b.upsertSchedule(t, newSchedule("s", Start))
	queue := "q-" + newID(t)
	j := fireJob(t, "s", Start, `{}`)
	j.Queue = queue
	b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: Start, NewNext: Start.Add(time.Minute),
		Jobs: []*store.InsertParams{j}})
	require.True(t, live(), "queued")
	b.insert(t, inQueue(queue)) // a job of no schedule changes nothing
	running := b.claimOne(t, queue)
	require.Equal(t, j.ID, running.ID)
	require.True(t, live(), "running")
	require.NoError(t, b.finish(t, finishing(running, hoppertype.StateCompleted)))
	require.False(t, live(), "completed")

	later := fireJob(t, "s", Start.Add(time.Minute), `{}`)
	later.RunAt = Start.Add(time.Hour)
	b.fire(t, &store.ScheduleFireParams{Name: "s", ExpectedLast: Start, NewLast: Start.Add(time.Minute),
		NewNext: Start.Add(2 * time.Minute), Jobs: []*store.InsertParams{later}})
	require.True(t, live(), "scheduled")
	_, err := b.store.JobCancel(t.Context(), &store.CancelParams{ID: later.ID, Actor: hoppertype.ActorOperator})
	require.NoError(t, err)
	require.False(t, live(), "canceled")
	other, err := ss.ScheduleLiveJob(t.Context(), "other")
	require.NoError(t, err)
	require.False(t, other)
}
