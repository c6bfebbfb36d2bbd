package store

import (
	"encoding/json"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// InsertParams is one job to insert. The caller has validated and defaulted it.
type InsertParams struct {
	ID          string
	Kind        string
	Queue       string
	Priority    int
	Args        json.RawMessage
	Headers     map[string]string
	MaxAttempts int
	// MaxRescues bounds the job's rescues (see RescueBound): 0 takes DefaultMaxRescues, a
	// negative value is unbounded.
	MaxRescues int
	// RunAt in the future makes the job scheduled; zero or past makes it queued.
	RunAt       time.Time
	Timeout     time.Duration
	RetryPolicy *hoppertype.RetryPolicy
	// ResultTTL is the job's own retention once completed or canceled; zero defers.
	ResultTTL time.Duration

	IdempotencyKey string
	// IdempotencyTTL is how long the key de-duplicates, from now.
	IdempotencyTTL time.Duration

	GroupKey string
	// FairnessKey, when set, is the tenant the job is claimed for: claims share a queue's
	// slots between the keys that have queued jobs (unkeyed jobs are one more key).
	FairnessKey string
	// MergeKey, when set, merges the item into the job of the same kind and key that no
	// worker has been handed yet, as Merge says (see Merge in merge.go); without such a job
	// the item makes one.
	MergeKey string
	// Merge is the policy of a merge, required with MergeKey. With MergeAppend, Args is a JSON
	// array: a new job stores it, a merge adds its items to the job's.
	Merge hoppertype.MergePolicy
	// MaxArgsBytes bounds the args a merge makes; 0 is unbounded.
	MaxArgsBytes int
	ScheduleID   string

	// After names the jobs this one waits for (deps.go): it is inserted waiting and released
	// when they have all ended. Each must exist or be an earlier item of the same call; an
	// unknown one is a *hoppertype.ValidationError naming after[i], and nothing is inserted.
	// Not with MergeKey (callers refuse it).
	After []string
	// OnParentFailure is the policy when a parent ends failed or canceled; empty is cancel.
	OnParentFailure hoppertype.ParentPolicy
	// WorkflowID and Step name the workflow the job is a step of and its step in it
	// (workflows.go); only WorkflowInsert sets them.
	WorkflowID string
	Step       string

	Actor  hoppertype.Actor
	Reason string
}

// InsertResult is the job an insert produced, the existing one an idempotency key named
// (Existing), or the one a merge key merged the item into (Merged), as the merge left it.
type InsertResult struct {
	Job      *hoppertype.JobRow
	Existing bool
	Merged   bool
}

// ListParams filters and pages JobList. Zero fields don't filter.
type ListParams struct {
	States        []hoppertype.JobState
	Queues        []string
	Kinds         []string
	CreatedAfter  time.Time // inclusive
	CreatedBefore time.Time // exclusive
	// FinishedAfter (inclusive) and FinishedBefore (exclusive) bound when a job ended.
	FinishedAfter  time.Time
	FinishedBefore time.Time
	// ArgsContains keeps the jobs whose args, as stored JSON bytes, contain it (case
	// sensitive; "" doesn't filter). No index serves it: the list scans until its page is full.
	ArgsContains string
	// ErrorCodes keeps the jobs whose last attempt ended with one of these business error
	// codes (JobRow.LastErrorCode); empty doesn't filter.
	ErrorCodes []string
	// FairnessKeys keeps the jobs of these fairness keys; empty doesn't filter. No index
	// serves it: the list scans until its page is full.
	FairnessKeys []string
	// ExcludeReplayed leaves out the jobs a replay names as its source: the dead letters that
	// have been dealt with (DeadLetterStore).
	ExcludeReplayed bool
	// Cursor is the NextCursor of the previous page; empty for the first page.
	Cursor string
	// Limit is the page size (default 100, at most 10,000).
	Limit int
	// Ascending lists oldest first; the default is newest first.
	Ascending bool
}

// ListResult is one page of jobs; NextCursor is empty on the last page.
type ListResult struct {
	Jobs       []*hoppertype.JobRow
	NextCursor string
}

// CancelParams cancels one job.
type CancelParams struct {
	ID     string
	Actor  hoppertype.Actor
	Reason string
	// ExpiresAt is when the canceled record may be removed; zero leaves it unset.
	ExpiresAt time.Time
}

// ClaimParams claims jobs for one worker process.
type ClaimParams struct {
	Queue string
	// Kinds restricts the claim to jobs of these kinds; empty claims every kind.
	Kinds []string
	Limit int
	// Ahead is how many of Limit the claimer asks for ahead of its free slots: jobs it will
	// start as slots free up. A claim that a fleet-wide cap, a rate limit or a disabled kind
	// applies to takes at most Limit-Ahead and says so (Hold.Restricted), so that jobs claimed
	// ahead never hold a cap's slots or a rate limit's starts unused.
	Ahead         int
	WorkerID      string
	LeaseDuration time.Duration
}

// FinishParams ends one running attempt, fenced by its token.
type FinishParams struct {
	ID    string
	Token int64
	// State is the job's next state: completed, failed, scheduled (retry, snooze, suspend until a
	// time), queued (released) or suspended.
	State   hoppertype.JobState
	Outcome hoppertype.Outcome
	// RunAt is when a scheduled job becomes visible again.
	RunAt time.Time
	// GiveBack returns the attempt to the retry budget (snooze, suspend, release).
	GiveBack bool
	// MaxAttempts, when positive, replaces the job's attempt budget (a remote worker's
	// "retries left" override); zero keeps it.
	MaxAttempts int
	Error       string
	Stack       string
	Result      json.RawMessage
	Checkpoint  json.RawMessage // nil keeps the previous checkpoint
	// ErrorCode is a business error's code, kept with the attempt and as the job's
	// last_error_code; empty clears the job's.
	ErrorCode string
	ExpiresAt time.Time // when a terminal record may be removed; zero keeps it
	// ExpiresAfter, when ExpiresAt is zero and this is positive, sets the expiry to now plus
	// the job's own result TTL, or plus ExpiresAfter when it has none: for a caller that
	// does not hold the row (a remote worker's Complete), without reading it first.
	ExpiresAfter time.Duration
	DeadlineAt   time.Time // for suspended jobs: when waiting ends in failure
	Actor        hoppertype.Actor
	Reason       string
	// Released is an output: a store that does not push notifications (SQLite) sets it to the
	// queues in which the ending made children claimable, queued or scheduled (deps.go), each
	// once, so that the caller wakes the workers of those queues alone (a wake-up makes a
	// queue claim at once, with few free slots).
	Released []string
	// Job is the attempt's job as it was claimed, when whoever decided the outcome has it
	// (nil otherwise). It tells the engine's OnOutcome which kind and queue the outcome is
	// about, and when the attempt started; the SQLite store counts the minute stats from it
	// (queue, kind, the attempt's wait) instead of reading the row.
	Job *hoppertype.JobRow
}

// ExtendParams moves one lease's expiry to Duration from now.
type ExtendParams struct {
	ID       string
	Token    int64
	Duration time.Duration
}

// HeartbeatParams records a sign of life.
type HeartbeatParams struct {
	ID    string
	Token int64
}

// ProgressParams records progress of a running attempt.
type ProgressParams struct {
	ID      string
	Token   int64
	Percent int
	Message string
}

// RescueParams bounds one rescue pass.
type RescueParams struct {
	Limit int
	// ExpiresAt is when a job the pass fails (out of rescues) may be removed: the dead-letter
	// retention. Zero keeps none.
	ExpiresAt time.Time
}

// RescueResult says what a rescue pass did: JobIDs went back to the queues Queues, Failed ran
// out of rescues and failed with outcome worker_lost. Jobs lists every job of both, with its
// kind and queue, in the order the store returned them.
type RescueResult struct {
	JobIDs []string
	Queues []string
	Failed []string
	Jobs   []RescuedJob
}

// RescuedJob is one job a rescue moved: back to its queue (State queued) or, out of rescues,
// to failed.
type RescuedJob struct {
	ID, Kind, Queue string
	State           hoppertype.JobState
}

// PromoteParams bounds one promotion pass.
type PromoteParams struct {
	Limit int
}

// PromoteResult says what a promotion pass queued and when the next scheduled job is due.
type PromoteResult struct {
	Promoted int
	Queues   []string
	// NextRunAt is the earliest run_at still scheduled; zero when none is.
	NextRunAt time.Time
}

// LeaderParams asks for (or renews) the leader lease.
type LeaderParams struct {
	NodeID string
	TTL    time.Duration
	// SweptBefore, when set, is when the sweep's last complete walk known to this process
	// began (the store's time): the lease row keeps the latest such time any election brought
	// (LeaderDue counts expiries after it).
	SweptBefore time.Time
}

// RescueDeadParams bounds one dead-node rescue pass.
type RescueDeadParams struct {
	// NodeTTL: a node whose heartbeat is older than this is dead.
	NodeTTL time.Duration
	// Self is the calling process's own node ID: it is alive, however old its heartbeat (a
	// process that was paused, or whose clock jumped, runs its rescue before its next
	// heartbeat). Its jobs are left to their leases and its registration stays.
	Self  string
	Limit int
	// ExpiresAt is as in RescueParams.
	ExpiresAt time.Time
}

// RescuePassParams names the parts of a rescue pass to run (JobRescuePass); a nil part is
// skipped.
type RescuePassParams struct {
	Expired *RescueParams
	Dead    *RescueDeadParams
	Overdue *OverdueParams
}

// RescuePassResult is what each part of a rescue pass did; nil (empty) for a part skipped.
type RescuePassResult struct {
	Expired *RescueResult
	Dead    *RescueResult
	Overdue []string // the jobs failed at their suspension's deadline
}

// LimitScope says what a fleet-wide cap applies to.
type LimitScope string

// The scopes of a cap.
const (
	LimitQueue LimitScope = "queue"
	LimitKind  LimitScope = "kind"
)

// LimitParams is one fleet-wide cap: at most MaxRunning running jobs of the queue or kind, or,
// PerKey, at most MaxRunning running jobs of each fairness key of them (keylimits.go).
type LimitParams struct {
	Scope      LimitScope
	Name       string
	MaxRunning int
	PerKey     bool
}
