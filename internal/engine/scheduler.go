package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/schedule"
	"github.com/hopperjobs/hopper/internal/store"
)

// FireTimeHeader is the header every job a schedule enqueues carries: the fire time it is for,
// in RFC 3339 (UTC, nanoseconds when there are any). A job caught up after downtime runs later
// than its fire time; this says which one it stands for.
const FireTimeHeader = "hopper-fire-time"

// ManualFireHeader marks the job of a manual fire ("run now"), with the value "true"; its
// FireTimeHeader is when it was asked for.
const ManualFireHeader = "hopper-manual-fire"

// Scheduler defaults.
const (
	DefaultScheduleTick = time.Second
	// scheduleBatch bounds the due schedules one tick fires.
	scheduleBatch = 100
	// parkFor is how far a schedule whose spec no longer parses is put off, so that it does not
	// come back every tick.
	parkFor = time.Hour
	// liveRecheck is how often a fixed-delay schedule whose last job has not ended looks
	// again: its next run starts at most this late after the delay.
	liveRecheck = 5 * time.Second
)

// scheduler is the leader's duty of firing recurring schedules (contract 10). It wakes at the
// earliest next fire time, when nudged (a schedule changed) and at least every tick (every
// pollWait of it while the store pushes notifications, which nudge it for every change), asks
// the store for the schedules due, computes their fire times with package schedule and
// hands each schedule's fire step to the store, which compare-and-sets the last fire time and
// inserts the jobs in one transaction. A leader that lost its lease mid-tick and its successor
// may both compute from the same last fire time: only the first fire step applies, and each
// fire time's job carries a unique idempotency key besides.
type scheduler struct {
	e     *Engine
	store store.ScheduleStore // nil when the store keeps no schedules
	tick  time.Duration
	grace time.Duration
	retry *backoff.Tracker
	// nudgeC wakes the run loop before its wait is over (nudge).
	nudgeC chan struct{}
}

func newScheduler(e *Engine) *scheduler {
	s := &scheduler{e: e, tick: e.cfg.ScheduleTick, grace: e.cfg.ScheduleGrace,
		retry: e.newTracker("fire schedules", backoff.DefaultPolicy), nudgeC: make(chan struct{}, 1)}
	s.store = e.store
	if s.tick <= 0 {
		s.tick = DefaultScheduleTick
	}
	if s.grace <= 0 {
		// A fire time this old is still on time: it may have waited for a late tick or for
		// a new leader (which takes over within about 4/3 of the lease).
		s.grace = max(3*s.tick, 2*e.cfg.LeaderTTL)
	}
	return s
}

func (s *scheduler) run(ctx context.Context) {
	e := s.e
	for s.store != nil && ctx.Err() == nil {
		elected := e.leader.wait() // before the look, as in the maintainer's loop
		if !e.leader.leading() {
			// Only the leader fires schedules; not trying, it is not failing.
			s.retry.Reset()
			select {
			case <-ctx.Done():
			case <-elected:
			}
			continue
		}
		wait := s.e.pollWait(s.tick)
		next, err := s.fireDue(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			wait = max(wait, s.retry.Fail(err)) // the store fails: back off
		default:
			s.retry.Succeed()
			switch d := next.Sub(e.clock.Now()); {
			case next.IsZero():
			case d <= 0:
				// Due already (time moved on while this pass ran): look again within a tick,
				// not after the longer wait of a store that pushes notifications.
				wait = min(wait, s.tick)
			case d < wait:
				wait = d // fire on time rather than up to a tick late
			}
		}
		t := e.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C():
		case <-s.nudgeC:
		}
		t.Stop()
	}
}

// nudge makes the scheduler look at the schedules now: one was created, changed or deleted,
// here or (with a store that pushes notifications) anywhere.
func (s *scheduler) nudge() {
	select {
	case s.nudgeC <- struct{}{}:
	default:
	}
}

// fireDue fires the schedules due now and returns the earliest next fire time of every
// schedule (zero when unknown). It
// stops at an error of the store itself (it cannot list the due schedules, or is unavailable).
func (s *scheduler) fireDue(ctx context.Context) (time.Time, error) {
	var earliest time.Time
	// Every schedule fired moves its next fire time on, so asking again brings the next
	// ones: a full batch means there may be more due this tick.
	for range maxBatchesPerTick {
		next, full, err := s.fireBatch(ctx)
		if err != nil {
			return time.Time{}, err
		}
		if !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
			earliest = next
		}
		if !full || ctx.Err() != nil {
			break
		}
	}
	return earliest, nil
}

// maxBatchesPerTick bounds one tick's work (10 × 100 schedules).
const maxBatchesPerTick = 10

// fireBatch fires one batch of due schedules and returns the earliest next fire time of those
// it fired and of those not yet due; full says the batch was full. A schedule whose
// fire step fails for a reason of its own is logged and skipped; an unavailable store ends
// the batch with its error.
func (s *scheduler) fireBatch(ctx context.Context) (time.Time, bool, error) {
	now := s.e.clock.Now()
	due, earliest, err := s.store.ScheduleDue(ctx, now, scheduleBatch)
	if err != nil {
		return time.Time{}, false, err
	}
	for _, sc := range due {
		// A leader whose lease lapsed stops here; a step already sent is safe either way.
		if ctx.Err() != nil || !s.e.leader.leading() {
			return time.Time{}, false, nil
		}
		next, err := s.fire(ctx, sc, now)
		if errors.Is(err, store.ErrUnavailable) {
			return time.Time{}, false, err
		}
		if err != nil {
			if ctx.Err() == nil {
				s.e.log.Error("fire schedule", "schedule", sc.Name, "err", err)
			}
			continue
		}
		if !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
			earliest = next
		}
	}
	return earliest, len(due) == scheduleBatch, nil
}

// fire runs one schedule's fire step and returns its next fire time (zero when unknown).
func (s *scheduler) fire(ctx context.Context, sc *store.Schedule, now time.Time) (time.Time, error) {
	spec, err := SpecOf(sc)
	if err != nil {
		s.e.log.Error("schedule has a bad spec; put off", "schedule", sc.Name, "err", err, "for", parkFor)
		return time.Time{}, s.apply(ctx, sc, nil, sc.LastFireAt, now.Add(parkFor))
	}
	if spec.FromFinish() {
		return s.fireAfterFinish(ctx, sc, spec, now)
	}
	catchUp, _ := schedule.ParseCatchUp(sc.CatchUp) // unknown values skip, as Due does
	fires, through := schedule.Due(spec, sc.LastFireAt, now, catchUp, s.grace)
	overlap, _ := schedule.ParseOverlap(sc.Overlap)
	if len(fires) > 0 && overlap == schedule.OverlapSkip {
		running, err := s.store.ScheduleLiveJob(ctx, sc.Name)
		if err != nil {
			return time.Time{}, err
		}
		if !overlap.Allows(running) {
			s.e.log.Debug("schedule skipped: its previous job has not ended", "schedule", sc.Name, "fires", len(fires))
			fires = nil
		}
		if len(fires) > 1 {
			// Catching up: each missed fire's job would overlap the one before it. Run the
			// oldest; the others are skipped like any fire that comes while a job runs.
			fires = fires[:1]
		}
	}
	next := spec.Next(through)
	return next, s.apply(ctx, sc, fires, through, next)
}

// fireAfterFinish fires a fixed-delay schedule: one interval after its last job ended, and
// never while that job has not ended.
func (s *scheduler) fireAfterFinish(ctx context.Context, sc *store.Schedule, spec *schedule.Spec, now time.Time) (time.Time, error) {
	ref := sc.LastFireAt // never fired: its creation; last job gone: its fire time
	if sc.LastJobID != "" {
		job, err := s.e.store.JobGet(ctx, sc.LastJobID)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return time.Time{}, fmt.Errorf("get its last job: %w", err)
		case !job.State.Terminal():
			// Still going: the next fire time is not known yet. Look again in a while rather
			// than every tick, so schedules waiting for their jobs never crowd the due list
			// and hold back the others.
			recheck := now.Add(liveRecheck)
			return recheck, s.apply(ctx, sc, nil, sc.LastFireAt, recheck)
		case !job.FinishedAt.IsZero():
			ref = job.FinishedAt
		default:
			ref = job.UpdatedAt
		}
	}
	fires, through := schedule.Due(spec, ref, now, schedule.CatchUpAll, s.grace)
	if len(fires) == 0 {
		next := spec.Next(ref)
		if next.Equal(sc.NextFireAt) {
			return next, nil
		}
		return next, s.apply(ctx, sc, nil, sc.LastFireAt, next)
	}
	// The real next fire time depends on when this run ends; this is its earliest.
	next := spec.Next(through)
	return next, s.apply(ctx, sc, fires, through, next)
}

// apply hands a fire step to the store and wakes whoever runs or promotes its jobs.
func (s *scheduler) apply(ctx context.Context, sc *store.Schedule, fires []time.Time, through, next time.Time) error {
	p := &store.ScheduleFireParams{Name: sc.Name, ExpectedLast: sc.LastFireAt, NewLast: through, NewNext: next}
	for _, f := range fires {
		if sc.Workflow != nil {
			p.Workflows = append(p.Workflows, FireWorkflow(sc, f))
		} else {
			p.Jobs = append(p.Jobs, fireJob(sc, f, s.e.cfg.MaxRescues))
		}
		p.FiredAt = f
	}
	res, err := s.store.ScheduleFire(ctx, p)
	if err != nil {
		return err
	}
	if !res.Fired {
		s.e.log.Debug("schedule changed since it was read; not fired", "schedule", sc.Name)
		return nil
	}
	if hook := s.e.cfg.OnInserted; hook != nil && len(res.Jobs) > 0 {
		hook(res.Jobs)
	}
	for _, j := range res.Jobs {
		s.e.log.Debug("schedule fired", "schedule", sc.Name, "job_id", j.ID, "kind", j.Kind, "queue", j.Queue,
			"fire_time", j.Headers[FireTimeHeader])
		if j.State == hoppertype.StateQueued {
			s.e.Notify(j.Queue)
		} else {
			s.e.NotifyScheduled(j.RunAt)
		}
	}
	return nil
}

// fireJob is the job of fire time at: it runs at the fire time plus the schedule's jitter and
// carries the fire time's idempotency key, so a fire time enqueues at most one job. Schedules
// have no rescue bound of their own: their jobs take maxRescues, the client's default.
func fireJob(sc *store.Schedule, at time.Time, maxRescues int) *store.InsertParams {
	headers := make(map[string]string, len(sc.Headers)+1)
	for k, v := range sc.Headers {
		headers[k] = v
	}
	headers[FireTimeHeader] = at.UTC().Format(time.RFC3339Nano)
	return &store.InsertParams{
		ID: uuid.Must(uuid.NewV7()).String(), Kind: sc.Kind, Queue: sc.Queue, Priority: sc.Priority,
		Args: sc.Args, Headers: headers, MaxAttempts: sc.MaxAttempts, MaxRescues: maxRescues, Timeout: sc.Timeout,
		RunAt: at.Add(schedule.Jitter(at, sc.Jitter, sc.Name)), IdempotencyKey: store.FireKey(sc.Name, at),
		IdempotencyTTL: store.FireKeyRetention, ScheduleID: sc.Name, Actor: hoppertype.ActorLeader,
		Reason: "schedule " + sc.Name,
	}
}

// ManualFireJob is the job of a manual fire of sc at at ("run now"): the job a fire at at
// would enqueue, but due at once (no jitter), marked with ManualFireHeader, and without the
// fire time's idempotency key, so that each manual fire enqueues its own job and takes no
// fire time's place. actor and reason go into the job's history.
func ManualFireJob(sc *store.Schedule, at time.Time, maxRescues int, actor hoppertype.Actor, reason string) *store.InsertParams {
	p := fireJob(sc, at, maxRescues)
	p.RunAt, p.IdempotencyKey, p.IdempotencyTTL = time.Time{}, "", 0
	p.Headers[ManualFireHeader] = "true"
	p.Actor, p.Reason = actor, reason
	return p
}

// FireWorkflow is the workflow of fire time at of a workflow schedule: its template's steps,
// each a new job due at the fire time plus the schedule's jitter and the step's delay (a step
// with parents waits for them as well), under a new workflow id with the fire time's key, so a
// fire time starts at most one workflow. Each step carries FireTimeHeader and the schedule's
// name, so the overlap policy sees the workflow while a step of it has not ended.
func FireWorkflow(sc *store.Schedule, at time.Time) *store.WorkflowInsertParams {
	t := sc.Workflow
	p := &store.WorkflowInsertParams{ID: uuid.Must(uuid.NewV7()).String(), Name: t.Name, FireKey: store.FireKey(sc.Name, at),
		Steps: make([]*store.InsertParams, len(t.Steps))}
	ids := make(map[string]string, len(t.Steps))
	runAt := at.Add(schedule.Jitter(at, sc.Jitter, sc.Name))
	for i, st := range t.Steps {
		j := *st.Job
		j.ID, j.WorkflowID, j.ScheduleID = uuid.Must(uuid.NewV7()).String(), p.ID, sc.Name
		j.RunAt = runAt.Add(st.Delay)
		j.Headers = make(map[string]string, len(st.Job.Headers)+1)
		for k, v := range st.Job.Headers {
			j.Headers[k] = v
		}
		j.Headers[FireTimeHeader] = at.UTC().Format(time.RFC3339Nano)
		j.After = make([]string, len(st.After))
		for k, name := range st.After {
			j.After[k] = ids[name] // parents come first in a template
		}
		j.Actor, j.Reason = hoppertype.ActorLeader, "schedule "+sc.Name
		ids[j.Step] = j.ID
		p.Steps[i] = &j
	}
	return p
}

// ManualFireWorkflow is the workflow of a manual fire of a workflow schedule at at ("run
// now"): the workflow a fire at at would enqueue, due at once, marked with ManualFireHeader,
// without the fire time's key, with actor and reason in its steps' history.
func ManualFireWorkflow(sc *store.Schedule, at time.Time, actor hoppertype.Actor, reason string) *store.WorkflowInsertParams {
	jitterless := *sc
	jitterless.Jitter = 0
	p := FireWorkflow(&jitterless, at)
	p.FireKey = ""
	for _, j := range p.Steps {
		j.Headers[ManualFireHeader] = "true"
		j.Actor, j.Reason = actor, reason
	}
	return p
}

// SpecOf parses a stored schedule's timing: its cron or "@every" spec in its time zone, or its
// fixed-delay interval. Errors wrap schedule.ErrInvalidSpec.
func SpecOf(sc *store.Schedule) (*schedule.Spec, error) {
	if sc.Mode == schedule.KindFixedDelay.String() {
		return schedule.NewInterval(sc.Interval, schedule.KindFixedDelay)
	}
	return schedule.Parse(sc.Spec, sc.TZ)
}
