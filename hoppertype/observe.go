package hoppertype

import (
	"context"
	"time"
)

// Observer hears what happens to jobs: through a hopper.Client (hopper.Config.Observers) or
// in a remote worker (remote.Config.Observers). See hopper.Observer and
// docs/observability.md.
//
// ObserveJob is called synchronously on the goroutine that made the event (an enqueuer's, a
// producer's, the completer's, the leader's): it must be fast, must not block and must be
// safe for concurrent use. A panic is recovered and logged. ctx is the enqueuer's for
// JobEnqueued (it carries the caller's trace span), else a background context.
type Observer interface {
	ObserveJob(ctx context.Context, ev JobEvent)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(ctx context.Context, ev JobEvent)

// ObserveJob calls f.
func (f ObserverFunc) ObserveJob(ctx context.Context, ev JobEvent) { f(ctx, ev) }

// JobEventType says what happened to a job.
type JobEventType string

// Job events.
const (
	// JobEnqueued: a new job was inserted by this client: an enqueue (not an idempotent
	// repeat, nor one merged into a waiting job), a schedule's fire (by its leader) or a
	// replay of a dead letter. Jobs inserted with EnqueueTx are reported when inserted,
	// whether or not the application's transaction commits.
	JobEnqueued JobEventType = "enqueued"
	// JobStarted: an attempt was claimed, by this process's workers or for a remote worker
	// (Remote). Wait is set, and Batch for a job claimed in a batch.
	JobStarted JobEventType = "started"
	// JobEnded: an attempt's outcome was written (a refused one is not reported). State and
	// Outcome say how it ended; Run is set when this process saw the attempt start.
	JobEnded JobEventType = "ended"
	// JobRescued: the leader or the server returned the job to its queue because its worker
	// was lost (a job out of rescues fails instead: a JobEnded with OutcomeWorkerLost).
	JobRescued JobEventType = "rescued"
	// WorkflowEnqueued: this client inserted a workflow (Client.EnqueueWorkflow), once per
	// workflow; WorkflowID and Workflow (its name) are set, JobID is empty. Each of its steps
	// is a JobEnqueued too.
	WorkflowEnqueued JobEventType = "workflow_enqueued"
	// WorkflowCancel: this client canceled a workflow's steps that had not ended
	// (Client.CancelWorkflow), once per workflow: a second cancel is refused. WorkflowID,
	// Workflow and WorkflowState (its state after the cancel: canceled, or failed when a
	// step had failed before) are set.
	WorkflowCancel JobEventType = "workflow_cancel"
	// WorkflowEnded: this client's leader marked a workflow ended, once per workflow, when its
	// steps had all ended: WorkflowID, Workflow and WorkflowState (completed, failed or
	// canceled: a step was canceled or skipped, none failed) are set. A workflow canceled
	// whole (WorkflowCancel) is ended by its cancel and is not reported again here. A
	// workflow retried in place after it ended (a failed step's retry) is reported again when
	// it ends again.
	WorkflowEnded JobEventType = "workflow_ended"
)

// JobEvent is one thing that happened to one job.
type JobEvent struct {
	Type  JobEventType
	JobID string
	// Kind and Queue are "" when this process does not know them: the outcome of a remote
	// worker's attempt claimed through another node and reported to this one, a suspended
	// job failed at its deadline.
	Kind, Queue string
	// Attempt is the job's attempt count when known (JobStarted: the attempt that starts).
	Attempt int
	// State is the job's state after the event: queued or scheduled (JobEnqueued), running
	// (JobStarted), what the outcome made it (JobEnded: completed, failed, scheduled for a
	// retry or a snooze, queued when released, suspended), queued (JobRescued).
	State JobState
	// Outcome is an ended attempt's outcome (OutcomeOK, OutcomeError, OutcomeTimeout…).
	Outcome Outcome
	// Wait is how long a started job waited to start since it became due (its run_at: when it
	// was enqueued, or its delay, backoff or snooze ended). Never negative.
	Wait time.Duration
	// Run is how long an ended attempt ran, from its claim to its outcome being written; 0
	// when unknown.
	Run time.Duration
	// Remote is true for the attempts of remote workers: served through the server (hopper
	// serve), or run by the remote worker that reports them.
	Remote bool
	// ErrorCode is the business error code an ended attempt failed with (BusinessError); ""
	// for any other end.
	ErrorCode string
	// WorkflowID is the workflow the job is a step of, on JobEnqueued and JobStarted ("" for a
	// job enqueued on its own), and the workflow of a workflow event. On JobStarted of a step,
	// Wait runs from its release (the last of its parents ended) for a step with parents.
	WorkflowID string
	// Workflow is the workflow's name, on the workflow events.
	Workflow string
	// WorkflowState is the workflow's state after a WorkflowCancel, and the state a
	// WorkflowEnded marked it with.
	WorkflowState WorkflowState
	// Batch says, on JobStarted, which batch the job was claimed in: a batch kind's
	// (hopper.AddBatchWorker in this process, or a remote worker's batch_kinds served through
	// the server, which a remote worker's own observers see too, with Linger 0). Its zero value
	// (ID "") is a job claimed alone.
	Batch BatchInfo
}

// BatchInfo is the batch a started job was claimed in, with the other jobs of one group (or
// of a kind's ungrouped jobs). Every job of a batch starts in one claim, so every one of its
// JobStarted events carries the same ID, Size and Linger; count a batch once, on Index 0.
type BatchInfo struct {
	// ID names the batch: its first job's id and lease token ("<id>.<token>"), as a remote
	// worker's ActivatedJob.batch_id does.
	ID string
	// Size is how many jobs the batch has; Index is the job's place in it (0 for the first).
	Size, Index int
	// Linger is how long the batch's longest-waiting job had been due (its run_at) when the
	// batch was claimed: the wait of a batch held back to fill (BatchOpts.MaxWait) or by a
	// lack of workers. Never negative.
	Linger time.Duration
}

// Retried reports whether ev is an attempt that failed and will be retried: it ended with an
// error, a panic or a timeout and the job went back to scheduled.
func (ev JobEvent) Retried() bool {
	if ev.Type != JobEnded || ev.State != StateScheduled {
		return false
	}
	switch ev.Outcome {
	case OutcomeError, OutcomePanic, OutcomeTimeout:
		return true
	}
	return false
}
