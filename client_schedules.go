package hopper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperjobs/hopper/internal/engine"
	"github.com/hopperjobs/hopper/internal/schedule"
	"github.com/hopperjobs/hopper/internal/store"
)

// CatchUp says what a schedule does with fire times that passed while no leader fired it
// (every process down, the schedule paused, a slow failover). The zero value is CatchUpSkip.
type CatchUp = schedule.CatchUp

// Catch-up policies (docs/schedules.md).
const (
	// CatchUpSkip runs no missed fire time; the schedule goes on with its next one.
	CatchUpSkip = schedule.CatchUpSkip
	// CatchUpLast runs the most recent missed fire time once.
	CatchUpLast = schedule.CatchUpLast
	// CatchUpAll runs every missed fire time, oldest first, at most 1000 per tick.
	CatchUpAll = schedule.CatchUpAll
)

// Overlap says whether a schedule fires while a job of an earlier fire has not ended. The
// zero value is OverlapSkip.
type Overlap = schedule.Overlap

// Overlap policies.
const (
	// OverlapSkip skips (does not postpone) a fire time while a job of the schedule is
	// scheduled, queued, running or suspended.
	OverlapSkip = schedule.OverlapSkip
	// OverlapAllow fires regardless: runs may overlap.
	OverlapAllow = schedule.OverlapAllow
)

// FireTimeHeader is the header of every job a schedule enqueues: the fire time it stands for,
// in RFC 3339 UTC. A job caught up after downtime runs later than its fire time.
const FireTimeHeader = engine.FireTimeHeader

// Sources of a schedule (ScheduleInfo.Source).
const (
	// ScheduleSourceCode: declared in Config.Schedules.
	ScheduleSourceCode = store.SourceCode
	// ScheduleSourceAPI: added with AddSchedule, the RPC API or the CLI.
	ScheduleSourceAPI = store.SourceAPI
)

// ErrScheduleInCode is returned when AddSchedule or RemoveSchedule names a schedule declared
// in some program's Config.Schedules: change it there, or it would come back at that
// program's next start. errors.Is(err, ErrDuplicate) holds for it too.
var ErrScheduleInCode error = &conflictError{"schedule is declared in code (Config.Schedules): change it there"}

type conflictError struct{ msg string }

func (e *conflictError) Error() string        { return e.msg }
func (e *conflictError) Is(target error) bool { return target == ErrDuplicate }

// Schedule enqueues a job again and again (contract 10): on a cron spec in a time zone, at a
// fixed rate, or a fixed delay after the previous run ended. Only the leader fires schedules,
// and each fire time enqueues at most one job, even across a leader failover.
type Schedule struct {
	// Name identifies the schedule: 1–128 letters, digits, '_', '-', '.' and ':'.
	Name string
	// Cron is a cron expression of 5 fields (minute hour day-of-month month day-of-week) or 6
	// (a leading seconds field), a descriptor (@yearly, @monthly, @weekly, @daily, @hourly)
	// or "@every DURATION". Set exactly one of Cron, Every and FixedDelay.
	Cron string
	// Every fires at a fixed rate: at multiples of it since the Unix epoch (at least 1 s,
	// whole milliseconds). The same as Cron "@every <Every>".
	Every time.Duration
	// FixedDelay fires this long after the previous run ended (at least 1 s, whole
	// milliseconds); the first run is this long after the schedule is created.
	FixedDelay time.Duration
	// TZ is the IANA time zone Cron is evaluated in (default UTC; "Local" is refused).
	TZ string
	// Kind is the job kind to enqueue (default: Args's Kind, when Args is a JobArgs).
	Kind string
	// Workflow, when set, is what each fire enqueues instead of a job: one workflow per fire
	// time, its steps as EnqueueWorkflow takes them (docs/schedules.md, "Starting a
	// workflow"). Then Kind, Args, Queue, Priority, MaxAttempts, Timeout and Headers stay
	// unset (each step has its own options), FixedDelay is refused, and a step's options may
	// delay it from the fire time (Delay) but not name a RunAt. Errors name the workflow's
	// fields under workflow. (workflow.steps[2].queue).
	Workflow *Workflow
	// Args is the job's payload, encoded as JSON (default {}). A json.RawMessage is used as
	// it is; in a ScheduleInfo, Args is always a json.RawMessage.
	Args any
	// Queue (default "default"), Priority, MaxAttempts (default Config.MaxAttempts), Timeout
	// and Headers are the job's, as in InsertOpts. The jobs take Config.MaxRescues.
	Queue       string
	Priority    int
	MaxAttempts int
	Timeout     time.Duration
	Headers     map[string]string
	// CatchUp is what happens to fire times missed while no leader fired the schedule.
	CatchUp CatchUp
	// Overlap is what happens to a fire time while an earlier job of the schedule has not
	// ended. A FixedDelay schedule never overlaps.
	Overlap Overlap
	// Jitter delays each run by up to this much (0 to 24 h), the same delay on every node.
	Jitter time.Duration
	// Paused creates the schedule paused, or pauses it. Adding a schedule never resumes it:
	// ResumeSchedule does.
	Paused bool
}

// ScheduleInfo is a stored schedule with its state.
type ScheduleInfo struct {
	Schedule
	// Source is ScheduleSourceCode or ScheduleSourceAPI.
	Source string
	// LastFireAt is the fire time of LastJobID: the latest fire that enqueued a job (a fire
	// time skipped by the Overlap or CatchUp policy is none). Zero while the schedule has never
	// enqueued one.
	LastFireAt time.Time
	// NextFireAt is the next fire time. For a FixedDelay schedule whose job is still going
	// it is the earliest the next run can be.
	NextFireAt time.Time
	// LastJobID is the newest job a fire of the schedule enqueued ("" while none has).
	LastJobID string
	// LastWorkflowID is the newest workflow a fire of a workflow schedule enqueued.
	LastWorkflowID string
	// LastManualFireAt is when the schedule was last run by hand (RunSchedule), zero if never;
	// LastManualJobID is that run's job.
	LastManualFireAt time.Time
	LastManualJobID  string
	CreatedAt        time.Time
	UpdatedAt        time.Time
}

// ManualFireHeader marks the job of a manual fire (RunSchedule) with the value "true"; its
// FireTimeHeader is when the run was asked for.
const ManualFireHeader = engine.ManualFireHeader

// AddSchedule creates a schedule, or replaces the definition of the one with its name
// (keeping its fire times unless its timing changed: a new spec starts from now). It returns
// a *ValidationError for bad input, and ErrScheduleInCode when Config.Schedules declares that
// name.
func (c *Client) AddSchedule(ctx context.Context, s Schedule) (*ScheduleInfo, error) {
	ss := c.store
	sc, err := c.storedSchedule(s, store.SourceAPI)
	if err != nil {
		return nil, err
	}
	if err := notInCode(ctx, ss, s.Name); err != nil {
		return nil, err
	}
	out, err := ss.ScheduleUpsert(ctx, sc)
	if err != nil {
		return nil, err
	}
	c.engine.NotifySchedules()
	return scheduleInfo(out), nil
}

// RemoveSchedule deletes a schedule; the jobs it enqueued stay. ErrNotFound when there is
// none, ErrScheduleInCode when Config.Schedules declares it.
func (c *Client) RemoveSchedule(ctx context.Context, name string) error {
	if err := checkText("name", name); err != nil {
		return err
	}
	ss := c.store
	if err := notInCode(ctx, ss, name); err != nil {
		return err
	}
	return ss.ScheduleDelete(ctx, name)
}

// PauseSchedule stops a schedule from firing until ResumeSchedule; ErrNotFound when there is
// none. Fire times that pass while it is paused are missed: its CatchUp policy decides.
func (c *Client) PauseSchedule(ctx context.Context, name string) error {
	return c.setSchedulePaused(ctx, name, true)
}

// ResumeSchedule lets a paused schedule fire again; ErrNotFound when there is none.
func (c *Client) ResumeSchedule(ctx context.Context, name string) error {
	return c.setSchedulePaused(ctx, name, false)
}

func (c *Client) setSchedulePaused(ctx context.Context, name string, paused bool) error {
	if err := checkText("name", name); err != nil {
		return err
	}
	if _, err := c.store.ScheduleSetPaused(ctx, name, paused); err != nil {
		return err
	}
	if !paused {
		c.engine.NotifySchedules()
	}
	return nil
}

// RunSchedule enqueues the job of schedule name now, outside its timing ("run now"), recorded
// as done by the API: see RunScheduleBy.
func (c *Client) RunSchedule(ctx context.Context, name string) (*JobRow, error) {
	return c.RunScheduleBy(ctx, name, ActorAPI, "run now")
}

// RunScheduleBy enqueues the job of schedule name now, outside its timing, with actor and
// reason recorded in the job's history (the dashboard and the server record an operator and
// who it was). The job is the one a fire would enqueue (kind, args, queue, priority, headers,
// and FireTimeHeader: now), queued at once, marked with ManualFireHeader and without a fire
// time's idempotency key, so each call enqueues a job. The schedule records it as its
// LastManualFireAt and LastManualJobID and nothing else changes: its next fire times, its
// catch-up, its last fire and last job (which a FixedDelay schedule waits on) stay as they
// were. A paused schedule runs too. The Overlap policy does not hold back a manual run, but
// while its job has not ended a fire of an OverlapSkip schedule is skipped, as for any of the
// schedule's jobs. ErrNotFound when there is no such schedule.
func (c *Client) RunScheduleBy(ctx context.Context, name string, actor Actor, reason string) (*JobRow, error) {
	if err := checkScheduleName(name); err != nil {
		return nil, err
	}
	if err := checkLimited("reason", reason, MaxReasonBytes); err != nil {
		return nil, err
	}
	if err := checkActor(actor); err != nil {
		return nil, err
	}
	at := c.clock.Now()
	sc, err := c.store.ScheduleGet(ctx, name)
	if err != nil {
		return nil, err
	}
	if sc.Workflow != nil {
		return c.runWorkflowSchedule(ctx, sc, at, actor, reason)
	}
	job, err := c.store.ScheduleRun(ctx, &store.ScheduleRunParams{Name: name, At: at,
		Job: func(sc *store.Schedule) *store.InsertParams {
			return engine.ManualFireJob(sc, at, c.cfg.MaxRescues, actor, reason)
		}})
	if err != nil {
		return nil, err
	}
	c.obs.inserted(ctx, job)
	c.engine.Notify(job.Queue)
	return job, nil
}

// Schedules returns every schedule, by name, with its last and next fire times.
func (c *Client) Schedules(ctx context.Context) ([]*ScheduleInfo, error) {
	ss := c.store
	list, err := ss.ScheduleList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*ScheduleInfo, len(list))
	for i, sc := range list {
		out[i] = scheduleInfo(sc)
	}
	return out, nil
}

// GetSchedule returns one schedule, or ErrNotFound.
func (c *Client) GetSchedule(ctx context.Context, name string) (*ScheduleInfo, error) {
	if err := checkText("name", name); err != nil {
		return nil, err
	}
	ss := c.store
	sc, err := ss.ScheduleGet(ctx, name)
	if err != nil {
		return nil, err
	}
	return scheduleInfo(sc), nil
}

// notInCode refuses to change a schedule that a program declares.
func notInCode(ctx context.Context, ss store.ScheduleStore, name string) error {
	sc, err := ss.ScheduleGet(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return err
	case sc.Source == store.SourceCode:
		return fmt.Errorf("schedule %q: %w", name, ErrScheduleInCode)
	}
	return nil
}

// scheduleInfo converts a stored schedule.
func scheduleInfo(sc *store.Schedule) *ScheduleInfo {
	s := Schedule{
		Name: sc.Name, TZ: sc.TZ, Kind: sc.Kind, Args: sc.Args, Queue: sc.Queue, Priority: sc.Priority,
		MaxAttempts: sc.MaxAttempts, Timeout: sc.Timeout, Headers: sc.Headers, CatchUp: CatchUp(sc.CatchUp),
		Overlap: Overlap(sc.Overlap), Jitter: sc.Jitter, Paused: sc.Paused,
	}
	if sc.Workflow != nil {
		s.Workflow = templateWorkflow(sc.Workflow)
	}
	switch sc.Mode {
	case schedule.KindFixedDelay.String():
		s.FixedDelay = sc.Interval
	case schedule.KindFixedRate.String():
		s.Every = sc.Interval
	default:
		s.Cron = sc.Spec
	}
	// sc.LastFireAt is the fire step's cursor (at creation, the creation time): what a user
	// calls the last fire is the fire time of the last job, FiredAt.
	return &ScheduleInfo{Schedule: s, Source: sc.Source, LastFireAt: sc.FiredAt, NextFireAt: sc.NextFireAt,
		LastJobID: sc.LastJobID, LastWorkflowID: sc.LastWorkflowID, LastManualFireAt: sc.ManualFireAt, LastManualJobID: sc.ManualJobID,
		CreatedAt: sc.CreatedAt, UpdatedAt: sc.UpdatedAt}
}

// reconcileSchedules makes the stored code-declared schedules what Config.Schedules declares:
// it upserts each (taking over an API schedule of the same name) and deletes the
// code-declared ones no longer declared. Schedules added through the API are left alone. A
// nil Config.Schedules leaves every schedule alone.
func (c *Client) reconcileSchedules(ctx context.Context) error {
	if c.cfg.Schedules == nil {
		return nil
	}
	ss := c.store
	declared, err := c.declaredSchedules()
	if err != nil {
		return err
	}
	stored, err := ss.ScheduleList(ctx)
	if err != nil {
		return fmt.Errorf("reconcile schedules: %w", err)
	}
	for _, sc := range stored {
		_, keep := declared[sc.Name]
		switch {
		case keep && sc.Source == store.SourceAPI:
			c.scheduleLog().Warn("schedule added through the API is now declared in code; the declaration wins",
				"schedule", sc.Name)
		case !keep && sc.Source == store.SourceCode:
			if err := ss.ScheduleDelete(ctx, sc.Name); err != nil && !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("reconcile schedules: %w", err)
			}
			c.scheduleLog().Info("schedule no longer declared; removed", "schedule", sc.Name)
		}
	}
	for _, sc := range declared {
		if _, err := ss.ScheduleUpsert(ctx, sc); err != nil {
			return fmt.Errorf("reconcile schedules: %w", err)
		}
	}
	return nil
}

// declaredSchedules validates Config.Schedules; a bad one is a *ValidationError whose field
// names it.
func (c *Client) declaredSchedules() (map[string]*store.Schedule, error) {
	out := make(map[string]*store.Schedule, len(c.cfg.Schedules))
	for i, s := range c.cfg.Schedules {
		sc, err := c.storedSchedule(s, store.SourceCode)
		if err != nil {
			return nil, prefixField(fmt.Sprintf("Config.Schedules[%d].", i), err)
		}
		if _, dup := out[sc.Name]; dup {
			return nil, invalid(fmt.Sprintf("Config.Schedules[%d].name", i), "%q is declared twice", sc.Name)
		}
		out[sc.Name] = sc
	}
	return out, nil
}

func (c *Client) scheduleLog() *slog.Logger { return logger(c.cfg.Logger) }

// NextFireTimes returns up to n fire times from NextFireAt on, NextFireAt first, in the
// schedule's time zone. A FixedDelay schedule has only NextFireAt: its later times depend on
// when its runs end. It returns nil for n < 1, a schedule that has no next fire time, or one
// whose timing does not parse.
func (s *ScheduleInfo) NextFireTimes(n int) []time.Time {
	if n < 1 || s.NextFireAt.IsZero() {
		return nil
	}
	spec, err := scheduleSpec(s.Schedule)
	if err != nil {
		return nil
	}
	loc := spec.Location()
	out := []time.Time{s.NextFireAt.In(loc)}
	if s.FixedDelay != 0 {
		return out
	}
	for len(out) < n {
		next := spec.Next(out[len(out)-1])
		if next.IsZero() {
			break
		}
		out = append(out, next)
	}
	return out
}
