package hopper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Batches with a callback (Celery's chord, Oban Pro's Batch): many jobs and one callback job
// that runs once they have all ended, whatever they did. A batch is a workflow and nothing
// more: its jobs are steps without parents, its callback a step after all of them with
// policy ParentRun, so everything a workflow has (one transaction, one id, Workflow,
// ListWorkflows, CancelWorkflow, the state) a batch has too (docs/workflows.md, "Batches").

// The step names of a batch's workflow: its jobs are BatchJobStep(0), BatchJobStep(1)…, its
// callback BatchCallbackStep.
const BatchCallbackStep = "callback"

// BatchJobStep is the step name of a batch's job i ("job-0", "job-1"…).
func BatchJobStep(i int) string { return "job-" + strconv.Itoa(i) }

// MaxBatchJobs bounds the jobs of one batch: with its callback, a batch is a workflow of at
// most MaxWorkflowSteps steps (InputLimits.MaxWorkflowSteps).
const MaxBatchJobs = MaxWorkflowSteps - 1

// JobBatch is a batch to enqueue (Client.EnqueueBatch): jobs, and a callback that runs once
// every one of them has ended, completed, failed or canceled.
type JobBatch struct {
	// Name says what the batch is: its workflow's name (listings filter by it). 1–128
	// letters, digits, '_', '-', '.' and ':'. Required.
	Name string
	// Jobs are the batch's jobs, 1 to MaxBatchJobs. They start at once (each by its own
	// options: a run-at or a delay holds it back) and run in any order, in parallel.
	Jobs []BatchJob
	// Callback is the job that runs once every job of Jobs has ended, even if some failed or
	// were canceled (policy ParentRun; a Callback.Opts.OnParentFailure of another policy is
	// refused). Its handler reads how they ended with BatchCounts, and their results with
	// ParentResults, in the order of Jobs.
	Callback BatchJob
}

// BatchJob is one job of a batch, or its callback: what Enqueue would take. Opts may not set
// After, IdempotencyKey or MergeKey (a batch's job is its own, as a workflow step's).
type BatchJob struct {
	Args JobArgs
	Opts *InsertOpts
}

// EnqueueBatch stores a batch (its jobs and its callback) as one workflow, in one
// transaction, all or none, and returns it: WorkflowResult.Workflow.ID is the batch's id (for
// Workflow, CancelWorkflow…), Job(BatchCallbackStep) its callback's job. Bad input is a
// *ValidationError naming the field (name, jobs, jobs[3].queue, callback.args,
// callback.on_parent_failure) and stores nothing.
func (c *Client) EnqueueBatch(ctx context.Context, b JobBatch) (*WorkflowResult, error) {
	wf, err := b.Workflow()
	if err != nil {
		return nil, err
	}
	res, err := c.EnqueueWorkflow(ctx, wf)
	return res, b.Refusal(err)
}

// Workflow returns the workflow that is batch b: its jobs as steps BatchJobStep(i), its
// callback as step BatchCallbackStep after all of them with policy ParentRun. Client.EnqueueBatch
// enqueues it; another client of workflows (hopperclient) enqueues it with its EnqueueWorkflow
// and names the fields of a refusal with b.Refusal. Bad input (the number of jobs, a nil args,
// a callback with another parent policy) is a *ValidationError naming the batch's field.
func (b JobBatch) Workflow() (Workflow, error) {
	if len(b.Jobs) == 0 || len(b.Jobs) > MaxBatchJobs {
		return Workflow{}, invalid("jobs", "%d jobs, want 1–%d", len(b.Jobs), MaxBatchJobs)
	}
	if o := b.Callback.Opts; o != nil && o.OnParentFailure != "" && o.OnParentFailure != ParentRun {
		return Workflow{}, invalid("callback.on_parent_failure", "%q: a batch's callback runs whatever its jobs did (run)", o.OnParentFailure)
	}
	wf := Workflow{Name: b.Name, Steps: make([]WorkflowStep, 0, len(b.Jobs)+1)}
	after := make([]string, len(b.Jobs))
	for i, j := range b.Jobs {
		after[i] = BatchJobStep(i)
		wf.Steps = append(wf.Steps, WorkflowStep{Name: after[i], Args: j.Args, Opts: j.Opts})
	}
	wf.Steps = append(wf.Steps, WorkflowStep{Name: BatchCallbackStep, Args: b.Callback.Args, Opts: b.Callback.Opts,
		After: after, OnParentFailure: ParentRun})
	return wf, nil
}

// Refusal names the field of a refusal of b's workflow (Workflow) as the batch's: steps[3].queue
// is jobs[3].queue, the callback's step's callback.queue. Other errors, and nil, pass through.
func (b JobBatch) Refusal(err error) error {
	var ve *ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	name := ve.Field
	if rest, ok := strings.CutPrefix(name, "steps["); ok {
		if n, tail, ok := strings.Cut(rest, "]"); ok {
			i, convErr := strconv.Atoi(n)
			tail = strings.TrimPrefix(strings.TrimPrefix(tail, "."), "job.") // the API names a step's job options under steps[i].job
			switch {
			case convErr != nil:
			case i == len(b.Jobs):
				name = joinField(BatchCallbackStep, tail)
			case i < len(b.Jobs):
				name = joinField(fmt.Sprintf("jobs[%d]", i), tail)
			}
		}
	}
	if name == "steps" {
		name = "jobs"
	}
	return &ValidationError{Field: name, Reason: ve.Reason}
}

func joinField(prefix, tail string) string {
	if tail == "" {
		return prefix
	}
	return prefix + "." + tail
}

// BatchOutcome is how a batch's jobs ended, as its callback reads it (BatchCounts).
type BatchOutcome struct {
	// Jobs is the number of the batch's jobs. In the callback every one has ended, so it is
	// Completed + Failed + Canceled.
	Jobs int
	// Completed, Failed and Canceled count the jobs by how they ended: completed, failed (a
	// dead letter) or canceled (also by their own skip policy).
	Completed int
	Failed    int
	Canceled  int
	// Results are the jobs, in the order of JobBatch.Jobs, with their outcomes, results and
	// errors, as ParentResults reads them.
	Results []ParentResult
}

// BatchCounts reads, in a batch's callback (JobBatch.Callback), how the batch's jobs ended:
// how many completed, failed and were canceled, and each one's result, in the batch's order.
// It is ParentResults, counted, so it works in any job with parents (it counts them) and
// returns what ParentResults returns: ErrLeaseLost when the attempt no longer owns the job,
// ErrNotInHandler when ctx is not a handler's.
func BatchCounts(ctx context.Context) (*BatchOutcome, error) {
	parents, err := ParentResults(ctx)
	if err != nil {
		return nil, err
	}
	return CountBatch(parents), nil
}

// CountBatch counts parents by how they ended, as BatchCounts does.
func CountBatch(parents []ParentResult) *BatchOutcome {
	out := &BatchOutcome{Jobs: len(parents), Results: parents}
	for _, p := range parents {
		switch p.Outcome {
		case ParentCompleted:
			out.Completed++
		case ParentFailed:
			out.Failed++
		case ParentCanceled, ParentSkipped:
			out.Canceled++
		}
	}
	return out
}
