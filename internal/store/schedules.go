package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// ScheduleStore keeps recurring schedules and fires them (contract 10). It is separate from
// Store because only the client (declarations, API) and the leader's scheduler need it. Both
// stores implement it; implementations are safe for concurrent use and take times from the
// store's clock.
//
// The store knows nothing of cron: callers compute fire times (package schedule) and hand
// the store the results. What the store guarantees is that a fire step is atomic and
// compare-and-set on the last fire time, so two leaders racing on one schedule enqueue its
// jobs once.
type ScheduleStore interface {
	// ScheduleUpsert creates the schedule or replaces the definition of the one with its name
	// and returns it as stored. A new schedule starts with LastFireAt and NextFireAt as given.
	// An existing one keeps them, its LastJobID and its CreatedAt, unless its timing (Spec,
	// Mode, Interval, TZ) changed: then it takes the given LastFireAt and NextFireAt, so a new
	// spec starts from now instead of catching up on fire times of the old one. Paused=false
	// never resumes a paused schedule (ScheduleSetPaused does).
	ScheduleUpsert(ctx context.Context, s *Schedule) (*Schedule, error)
	// ScheduleGet returns one schedule or ErrNotFound.
	ScheduleGet(ctx context.Context, name string) (*Schedule, error)
	// ScheduleList returns every schedule, by name.
	ScheduleList(ctx context.Context) ([]*Schedule, error)
	// ScheduleDelete removes a schedule (its jobs stay); ErrNotFound when there is none.
	ScheduleDelete(ctx context.Context, name string) error
	// ScheduleSetPaused pauses or resumes a schedule and returns it; ErrNotFound when there
	// is none. A paused schedule is never due.
	ScheduleSetPaused(ctx context.Context, name string, paused bool) (*Schedule, error)
	// ScheduleDue returns up to limit schedules that are not paused and whose NextFireAt is
	// at or before now, earliest first, and the earliest NextFireAt after now among the other
	// unpaused schedules (zero when there is none, or when more than limit are due), so the
	// leader can sleep until then.
	ScheduleDue(ctx context.Context, now time.Time, limit int) (due []*Schedule, next time.Time, err error)
	// ScheduleFire is one fire step, in one transaction: it sets the schedule's LastFireAt and
	// NextFireAt if its LastFireAt is still ExpectedLast, and inserts Jobs. If the schedule
	// changed meanwhile (another leader fired it, it was deleted or re-timed) nothing is
	// written and Fired is false. A job whose idempotency key is live is not inserted again
	// (whatever its payload): each job of a fire time carries the key of that fire time, so a
	// fire time enqueues at most one job. LastJobID becomes the newest job of Jobs, inserted
	// or found by its key, and FiredAt p.FiredAt.
	ScheduleFire(ctx context.Context, p *ScheduleFireParams) (*ScheduleFireResult, error)
	// ScheduleRun is a manual fire ("run now", contract 10), in one transaction: it reads the
	// schedule, inserts the job p.Job builds from it and records it as the schedule's
	// ManualFireAt (p.At) and ManualJobID. The schedule's fire times, LastJobID and FiredAt
	// are left alone, so its fires go on as if it had not run; a paused schedule runs too.
	// ErrNotFound when there is no schedule of p.Name.
	ScheduleRun(ctx context.Context, p *ScheduleRunParams) (*hoppertype.JobRow, error)
	// ScheduleLiveJob reports whether a job of the schedule is scheduled, queued, running or
	// suspended (the overlap check).
	ScheduleLiveJob(ctx context.Context, name string) (bool, error)
}

// Schedule sources: who owns a schedule's definition.
const (
	// SourceCode: declared in a program's Config.Schedules and reconciled when it starts.
	SourceCode = "code"
	// SourceAPI: added through the Go API, the RPC API or the CLI.
	SourceAPI = "api"
)

// Schedule is a stored recurring schedule. Its fields mirror the schedules table.
type Schedule struct {
	Name string
	// Spec is a cron expression, a descriptor or "@every DURATION"; empty for fixed-delay.
	Spec string
	// Mode is "cron", "fixed-rate" or "fixed-delay" (schedule.Kind's names).
	Mode string
	// Interval is the interval of a fixed-rate or fixed-delay schedule; 0 for cron.
	Interval time.Duration
	// TZ is the IANA time zone ("" and "UTC" are UTC).
	TZ string

	// The job each fire enqueues.
	Kind        string
	Queue       string
	Args        json.RawMessage
	Headers     map[string]string
	Priority    int
	MaxAttempts int
	Timeout     time.Duration
	// Workflow, when set, is what each fire enqueues instead of the job above (whose Kind is
	// then empty): one workflow per fire time. LastWorkflowID is the newest workflow a fire
	// enqueued (or found by its fire key).
	Workflow       *WorkflowTemplate
	LastWorkflowID string

	// CatchUp ("skip", "last", "all") and Overlap ("skip", "allow") are schedule.CatchUp
	// and schedule.Overlap values; Jitter is the maximum delay added to each run.
	CatchUp string
	Overlap string
	Jitter  time.Duration
	Paused  bool
	// Source is SourceCode or SourceAPI.
	Source string

	// LastFireAt is the latest fire time accounted for (schedule.Due's through), the cursor
	// of the fire step's compare-and-set; at creation (and re-timing), that moment. NextFireAt
	// is the next fire time as last computed: what the leader's due query and listings use.
	// LastJobID is the newest job a fire enqueued, FiredAt its fire time (zero while no fire
	// has enqueued a job): what listings show as the last fire.
	LastFireAt time.Time
	NextFireAt time.Time
	LastJobID  string
	FiredAt    time.Time
	// ManualFireAt is the latest manual fire (ScheduleRun), zero if none; ManualJobID its job.
	ManualFireAt time.Time
	ManualJobID  string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// ScheduleRunParams is one manual fire of a schedule.
type ScheduleRunParams struct {
	Name string
	// At is the time of the manual fire (the schedule's ManualFireAt).
	At time.Time
	// Job builds the job to insert from the schedule as the transaction read it.
	Job func(*Schedule) *InsertParams
}

// ScheduleFireParams is one fire step of a schedule.
type ScheduleFireParams struct {
	Name string
	// ExpectedLast is the LastFireAt the caller computed from; the step applies only if the
	// stored one is still this.
	ExpectedLast time.Time
	NewLast      time.Time
	NewNext      time.Time
	// Jobs are the fire's jobs, oldest fire time first, each with its fire time's idempotency
	// key (FireKey) and ScheduleID set. Empty advances the schedule without enqueuing.
	Jobs []*InsertParams
	// Workflows are the fire's workflows (a workflow schedule's, instead of Jobs), oldest fire
	// time first, each with its fire time's FireKey: a workflow whose key a stored workflow
	// has is not inserted again. The schedule's LastWorkflowID becomes the last one's id.
	Workflows []*WorkflowInsertParams
	// FiredAt is the fire time of the last of Jobs (the schedule's FiredAt, with its job as
	// LastJobID); ignored without Jobs.
	FiredAt time.Time
}

// ScheduleFireResult says what a fire step did.
type ScheduleFireResult struct {
	// Fired is false when ExpectedLast no longer matched: nothing was written.
	Fired bool
	// Jobs are the jobs inserted (not those an idempotency key found), the steps of the
	// workflows inserted among them.
	Jobs []*hoppertype.JobRow
}

// FireKeyRetention is how long a fire time's idempotency key de-duplicates.
const FireKeyRetention = 7 * 24 * time.Hour

// FireKey is the idempotency key of the job schedule name enqueues for fire time at:
// "schedule:<name>:<fire time in unix microseconds>".
func FireKey(name string, at time.Time) string {
	return "schedule:" + name + ":" + strconv.FormatInt(at.UnixMicro(), 10)
}

// WorkflowTemplate is what a workflow schedule enqueues at each fire: a workflow's name and
// its steps, parents first, checked and defaulted when the schedule was added. Stores keep it
// as JSON.
type WorkflowTemplate struct {
	Name  string          `json:"name"`
	Steps []*TemplateStep `json:"steps"`
}

// TemplateStep is one step of a WorkflowTemplate: its job without an id, a run-at, parents or
// a workflow (each fire gives them), the names of the steps it runs after, and its delay after
// the fire time.
type TemplateStep struct {
	Job   *InsertParams `json:"job"`
	After []string      `json:"after,omitempty"`
	Delay time.Duration `json:"delay,omitempty"`
}

// EncodeTemplate is t as the stores keep it (nil for no template).
func EncodeTemplate(t *WorkflowTemplate) []byte {
	if t == nil {
		return nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		panic(fmt.Sprintf("encode workflow template: %v", err)) // plain values: cannot fail
	}
	return b
}

// DecodeTemplate reads what EncodeTemplate wrote (nil for empty).
func DecodeTemplate(b []byte) (*WorkflowTemplate, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var t WorkflowTemplate
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("decode workflow template: %w", err)
	}
	return &t, nil
}

// CheckFire checks the workflows of a fire step as WorkflowInsert checks one.
func CheckFire(p *ScheduleFireParams) error {
	for _, wp := range p.Workflows {
		if wp.FireKey == "" {
			return fmt.Errorf("workflow %s: %w: no fire key", wp.ID, ErrInvalid)
		}
		if err := CheckWorkflow(wp); err != nil {
			return err
		}
		if err := CheckBatch(wp.Steps); err != nil {
			return err
		}
	}
	return nil
}

// SplitDue splits schedules in next fire time order (up to limit+1 of them, as a store's
// ScheduleDue reads them) into those due at now (at most limit) and the next fire time after
// now: zero when none is after now among them.
func SplitDue(ordered []*Schedule, now time.Time, limit int) (due []*Schedule, next time.Time) {
	for _, sc := range ordered {
		if sc.NextFireAt.After(now) {
			return due, sc.NextFireAt
		}
		if len(due) < limit {
			due = append(due, sc)
		}
	}
	return due, time.Time{}
}
