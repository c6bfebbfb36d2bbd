package hoppertype

import (
	"encoding/json"
	"time"
)

// JobRow is a job as stored. Zero times mean "not set".
type JobRow struct {
	ID       string
	Kind     string
	Queue    string
	Priority int
	Args     json.RawMessage
	Headers  map[string]string
	State    JobState

	// Attempt counts attempts that consumed the retry budget, including a running one.
	// A rescued or released attempt gives its count back.
	Attempt     int
	MaxAttempts int
	// Token is the fencing token of the current (or last) lease; it grows by one on every claim.
	Token int64
	// Rescues counts how often the job was returned to the queue because its worker was lost
	// (an expired lease, a dead node, a closed stream). MaxRescues bounds it: the loss after
	// the last rescue fails the job with OutcomeWorkerLost. -1 is unbounded.
	Rescues    int
	MaxRescues int

	RunAt          time.Time
	Timeout        time.Duration
	WorkerID       string
	LeaseExpiresAt time.Time
	HeartbeatAt    time.Time

	ProgressPercent int
	ProgressMessage string

	Result    json.RawMessage
	LastError string
	// LastErrorCode is the business error code the last attempt ended with, if any.
	LastErrorCode string
	// Checkpoint is state a suspended, snoozed or failed attempt left for the next one.
	Checkpoint json.RawMessage
	// ResumeData is what Resume handed to a suspended job for its next attempts (cleared when
	// it suspends again).
	ResumeData json.RawMessage

	RetryPolicy *RetryPolicy
	// ResultTTL is how long the job is kept once it completes or is canceled; zero defers to
	// its worker's and the client's (contract 12).
	ResultTTL time.Duration

	IdempotencyKey string
	GroupKey       string
	// FairnessKey is the tenant the job is claimed for (see InsertOpts.FairnessKey); "" for none.
	FairnessKey string
	// HasChildren: jobs were enqueued to wait for this one (InsertOpts.After); its ending
	// releases them (docs/workflows.md).
	HasChildren bool
	// WorkflowID is the workflow the job is a step of (Client.EnqueueWorkflow), Step its
	// step's name in it; both empty for a job enqueued on its own (docs/workflows.md).
	WorkflowID  string
	Step        string
	MergeKey    string
	OriginalID  string
	ReplayCount int
	ReplayedBy  string
	ScheduleID  string

	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	UpdatedAt  time.Time
	ExpiresAt  time.Time
	DeadlineAt time.Time
}

// RetryPolicy shapes the backoff between failed attempts:
// delay = min(Cap, Base·Multiplierⁿ) ± Jitter·delay, where n is the number of failed attempts
// so far minus one, and says whether business errors are retried. Zero fields take the
// defaults of the worker or the client.
type RetryPolicy struct {
	Base       time.Duration `json:"base,omitempty"`
	Multiplier float64       `json:"multiplier,omitempty"`
	Cap        time.Duration `json:"cap,omitempty"`
	// Jitter is a fraction of the delay, 0–1: 0.1 spreads retries ±10 %. Zero takes the
	// fallback's jitter; a negative value disables jitter.
	Jitter float64 `json:"jitter,omitempty"`
	// RetryBusinessErrors retries a business error (BusinessError) like any other error while
	// attempts are left, instead of failing the job at once; the code is still kept with each
	// attempt and as the job's LastErrorCode. True in the job's, the kind's or the default
	// policy retries: false cannot undo another level's true.
	RetryBusinessErrors bool `json:"retry_business_errors,omitempty"`
}

// AttemptRecord is one attempt of a job: who ran it, when, and how it ended.
type AttemptRecord struct {
	JobID     string
	Token     int64
	Attempt   int
	WorkerID  string
	StartedAt time.Time
	EndedAt   time.Time
	Outcome   Outcome
	Error     string
	Stack     string
	// ErrorCode is the business error code the attempt ended with, if any.
	ErrorCode string
}

// Event is one state transition in a job's history.
type Event struct {
	JobID  string
	Seq    int64
	At     time.Time
	From   JobState // empty for the creating event
	To     JobState
	Actor  Actor
	Reason string
}

// Node is one Hopper process registered in the store.
type Node struct {
	ID          string
	Host        string
	PID         int
	StartedAt   time.Time
	HeartbeatAt time.Time
	// Holding: the node's resource governor holds back new jobs (contract 15).
	Holding bool
	// Queues are the queues the node's workers work: its own, and those of the remote
	// workers served through it. HeldQueues are those of them where every one of the node's
	// workers is held back by its resource governor. Both sorted.
	Queues     []string
	HeldQueues []string
	// Idle: the node holds no jobs and does not heartbeat until it does; HeartbeatAt is then
	// when it went idle (or, idle for 12 hours or more, when it last said it still was). An
	// idle node is not dead, however old its heartbeat.
	Idle bool
}

// Leadership says who holds the leader lease and until when. Term grows by one each time the
// lease changes hands; it fences the leader's duties.
type Leadership struct {
	NodeID    string
	Term      int64
	ExpiresAt time.Time
}

// Stalled reports whether a running job has shown no sign of life (claim, Heartbeat,
// ReportProgress) for longer than after while its lease is still valid at now: its process
// keeps the lease but the handler may be stuck. It is a signal for operators; Hopper takes
// no action on it.
func (j *JobRow) Stalled(now time.Time, after time.Duration) bool {
	return j.State == StateRunning && after > 0 && !j.HeartbeatAt.IsZero() &&
		now.Sub(j.HeartbeatAt) > after && j.LeaseExpiresAt.After(now)
}

// StartWait is how long the job waited from becoming due (RunAt: its enqueue, the end of its
// delay, backoff or snooze, or, for a job with parents, its release from waiting, which sets
// RunAt) to the start of its latest attempt. ok is false when no attempt has started since it
// became due (it waits, is queued or scheduled, or ended without running).
func (j *JobRow) StartWait() (wait time.Duration, ok bool) {
	if j.StartedAt.IsZero() || j.State == StateWaiting || j.StartedAt.Before(j.RunAt) {
		return 0, false
	}
	return j.StartedAt.Sub(j.RunAt), true
}
