package hopper

import (
	"context"
	"log/slog"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// Observer hears what happens to jobs through a Client: the jobs it enqueues, the attempts it
// starts (its own workers' and the remote workers' it serves through the server), the attempt
// outcomes it writes and the rescues its leader makes. It is the seam for metrics (`hopper
// serve` builds its Prometheus counters and histograms on it) without Hopper depending on a
// metrics library. See Config.Observers and docs/observability.md.
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
	// (Remote). Wait is set.
	JobStarted JobEventType = "started"
	// JobEnded: an attempt's outcome was written (a refused one is not reported). State and
	// Outcome say how it ended; Run is set when this process saw the attempt start.
	JobEnded JobEventType = "ended"
	// JobRescued: the leader or the server returned the job to its queue because its worker
	// was lost (a job out of rescues fails instead: a JobEnded with OutcomeWorkerLost).
	JobRescued JobEventType = "rescued"
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
	// Remote is true for the attempts of remote workers served through the server (hopper serve).
	Remote bool
	// ErrorCode is the business error code an ended attempt failed with (BusinessError); ""
	// for any other end.
	ErrorCode string
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
		o.emit(ctx, JobEvent{Type: JobEnqueued, JobID: j.ID, Kind: j.Kind, Queue: j.Queue, State: j.State})
	}
}

// claimed reports attempts that start, for remote workers or not.
func (o *observers) claimed(rows []*JobRow, remote bool) {
	if !o.enabled() {
		return
	}
	ctx := context.Background()
	for _, r := range rows {
		o.emit(ctx, JobEvent{Type: JobStarted, JobID: r.ID, Kind: r.Kind, Queue: r.Queue, Attempt: r.Attempt,
			State: StateRunning, Wait: max(r.StartedAt.Sub(r.RunAt), 0), Remote: remote})
	}
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
