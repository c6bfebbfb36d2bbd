package hopper

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// Observer hears what happens to jobs through a Client: the jobs it enqueues, the attempts it
// starts (its own workers' and the remote workers' it serves through the server), the attempt
// outcomes it writes and the rescues its leader makes; a remote worker's observers
// (remote.Config.Observers) hear the attempts it runs. It is the seam for metrics (`hopper
// serve` builds its Prometheus counters and histograms on it) without Hopper depending on a
// metrics library. See Config.Observers and docs/observability.md. The type is
// hoppertype.Observer, which a remote worker shares without linking this package.
type Observer = hoppertype.Observer

// Observer, its event and its adapter, re-exported from hoppertype.
type (
	ObserverFunc = hoppertype.ObserverFunc
	JobEventType = hoppertype.JobEventType
	JobEvent     = hoppertype.JobEvent
	BatchInfo    = hoppertype.BatchInfo
)

// Job events; see hoppertype.JobEventType.
const (
	JobEnqueued = hoppertype.JobEnqueued
	JobStarted  = hoppertype.JobStarted
	JobEnded    = hoppertype.JobEnded
	JobRescued  = hoppertype.JobRescued
	// WorkflowEnqueued, WorkflowCancel and WorkflowEnded: see hoppertype.
	WorkflowEnqueued = hoppertype.WorkflowEnqueued
	WorkflowCancel   = hoppertype.WorkflowCancel
	WorkflowEnded    = hoppertype.WorkflowEnded
)

// observers calls a client's observers. Its zero value, with none, does nothing and costs a
// length check per event.
type observers struct {
	list  []Observer
	clock clock.Clock
	log   *slog.Logger
}

func (o *observers) enabled() bool { return len(o.list) > 0 }

func (o *observers) emit(ctx context.Context, ev JobEvent) {
	for _, obs := range o.list {
		o.call(ctx, obs, ev)
	}
}

func (o *observers) call(ctx context.Context, obs Observer, ev JobEvent) {
	defer func() {
		if v := recover(); v != nil {
			o.log.Error("job observer panicked", "event", ev.Type, "job_id", ev.JobID, "panic", v)
		}
	}()
	obs.ObserveJob(ctx, ev)
}

// enqueued reports the new jobs among res.
func (o *observers) enqueued(ctx context.Context, res []*InsertResult) {
	if !o.enabled() {
		return
	}
	for _, r := range res {
		if !r.Existing && !r.Merged {
			o.inserted(ctx, r.Job)
		}
	}
}

// inserted reports new jobs (enqueued, fired by a schedule, replays of dead letters).
func (o *observers) inserted(ctx context.Context, jobs ...*JobRow) {
	if !o.enabled() {
		return
	}
	for _, j := range jobs {
		o.emit(ctx, JobEvent{Type: JobEnqueued, JobID: j.ID, Kind: j.Kind, Queue: j.Queue, State: j.State,
			WorkflowID: j.WorkflowID})
	}
}

// claimed reports attempts that start, for remote workers or not, with the batch of each
// job claimed in one (batchOf, by job id; nil for none).
func (o *observers) claimed(rows []*JobRow, remote bool, batchOf map[string]string) {
	if !o.enabled() {
		return
	}
	ctx := context.Background()
	batches := attempt.Batches(rows, batchOf)
	for _, r := range rows {
		wait, _ := r.StartWait()
		o.emit(ctx, JobEvent{Type: JobStarted, JobID: r.ID, Kind: r.Kind, Queue: r.Queue, Attempt: r.Attempt,
			State: StateRunning, Wait: wait, Remote: remote, WorkflowID: r.WorkflowID, Batch: batches[r.ID]})
	}
}

// batchID names a batch, of jobs as claimed: its first job's id and lease token
// (ActivatedJob.batch_id, JobEvent.Batch).
func batchID(jobs []*JobRow) string { return fmt.Sprintf("%s.%d", jobs[0].ID, jobs[0].Token) }

// oneBatch says that jobs are one batch (attempt.Batches's batchOf).
func oneBatch(jobs []*JobRow) map[string]string {
	id := batchID(jobs)
	out := make(map[string]string, len(jobs))
	for _, j := range jobs {
		out[j.ID] = id
	}
	return out
}

// outcome reports each outcome the store accepted; remote says it ended an attempt claimed
// for a remote worker.
func (o *observers) outcome(p *store.FinishParams, err error, remote bool) {
	if !o.enabled() || err != nil {
		return
	}
	job := p.Job
	ev := JobEvent{Type: JobEnded, JobID: p.ID, State: p.State, Outcome: p.Outcome, Remote: remote,
		ErrorCode: p.ErrorCode}
	if job != nil {
		ev.Kind, ev.Queue, ev.Attempt = job.Kind, job.Queue, job.Attempt
		if !job.StartedAt.IsZero() {
			ev.Run = max(o.clock.Now().Sub(job.StartedAt), 0)
		}
	}
	o.emit(context.Background(), ev)
}

// workflow reports a workflow event (WorkflowEnqueued, WorkflowCancel, WorkflowEnded) of wf.
func (o *observers) workflow(ctx context.Context, typ JobEventType, wf *WorkflowRow) {
	if !o.enabled() {
		return
	}
	o.emit(ctx, JobEvent{Type: typ, WorkflowID: wf.ID, Workflow: wf.Name, WorkflowState: wf.State})
}

// workflowsEnded is the engine's OnWorkflowsEnded: a WorkflowEnded each.
func (o *observers) workflowsEnded(ws []*WorkflowRow) {
	ctx := context.Background()
	for _, wf := range ws {
		o.workflow(ctx, WorkflowEnded, wf)
	}
}

// rescued is the engine's OnRescued.
func (o *observers) rescued(jobs []store.RescuedJob) {
	if !o.enabled() {
		return
	}
	ctx := context.Background()
	for _, j := range jobs {
		o.emit(ctx, JobEvent{Type: JobRescued, JobID: j.ID, Kind: j.Kind, Queue: j.Queue, State: hoppertype.StateQueued})
	}
}
