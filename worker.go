package hopper

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/attempt"
)

// JobArgs is a job's payload type; Kind names the handler that runs it ("send-invoice").
// Args are stored as JSON.
type JobArgs interface {
	Kind() string
}

// JobArgsWithInsertOpts lets an args type give defaults for every job of its kind (queue,
// max attempts…); options passed to Enqueue override them field by field.
type JobArgsWithInsertOpts interface {
	JobArgs
	InsertOpts() InsertOpts
}

// Job is a running job with its args decoded.
type Job[T JobArgs] struct {
	*JobRow
	Args T
}

// Worker works jobs of one args type. Embed WorkerDefaults[T] to implement only Work.
type Worker[T JobArgs] interface {
	// Work runs one attempt. Return nil on success, an error to retry (see RetryAfter and
	// NoRetry). ctx ends at the timeout, when the job is canceled and when the process stops.
	Work(ctx context.Context, job *Job[T]) error
	// Timeout limits one attempt; 0 defers to the job's option and then Config.JobTimeout.
	Timeout(job *Job[T]) time.Duration
	// RetryPolicy is the kind's backoff; nil fields defer to the job's policy and Config.
	RetryPolicy(job *Job[T]) *RetryPolicy
	// ResultTTL is how long the job is kept once it completes or is canceled while it runs;
	// 0 defers to InsertOpts.ResultTTL and then Config.ResultTTL. (A job's own ResultTTL wins
	// over its kind's; failed jobs follow Config.DeadLetterRetention.)
	ResultTTL(job *Job[T]) time.Duration
}

// WorkerDefaults gives a Worker the default Timeout, RetryPolicy and ResultTTL.
type WorkerDefaults[T JobArgs] struct{}

// Timeout returns 0: the job's or the client's timeout applies.
func (WorkerDefaults[T]) Timeout(*Job[T]) time.Duration { return 0 }

// RetryPolicy returns nil: the job's or the client's policy applies.
func (WorkerDefaults[T]) RetryPolicy(*Job[T]) *RetryPolicy { return nil }

// ResultTTL returns 0: the job's or the client's result TTL applies.
func (WorkerDefaults[T]) ResultTTL(*Job[T]) time.Duration { return 0 }

// Workers maps kinds to their workers. Build it before NewClient (or remote.New); it is not
// safe to change while a client uses it.
type Workers = attempt.Workers

// NewWorkers returns an empty registry.
func NewWorkers() *Workers { return attempt.NewWorkers() }

// AddWorker registers w for the kind of T. It panics when the kind is empty or registered
// twice: both are programming errors found at start-up.
func AddWorker[T JobArgs](ws *Workers, w Worker[T]) {
	var zero T
	kind := zero.Kind()
	ws.Add(kind, &handler[T]{kind: kind, w: w}, zero)
}

// AddWorkerFunc registers a function as the worker for the kind of T.
func AddWorkerFunc[T JobArgs](ws *Workers, fn func(ctx context.Context, job *Job[T]) error) {
	AddWorker[T](ws, &funcWorker[T]{fn: fn})
}

type funcWorker[T JobArgs] struct {
	WorkerDefaults[T]
	fn func(context.Context, *Job[T]) error
}

func (f *funcWorker[T]) Work(ctx context.Context, job *Job[T]) error { return f.fn(ctx, job) }

// handler adapts a typed Worker to the engine.
type handler[T JobArgs] struct {
	kind string
	w    Worker[T]
}

// Prepare decodes the args once per attempt; the engine fails a job whose args do not decode
// without retrying it.
func (h *handler[T]) Prepare(row *JobRow) (attempt.Unit, error) {
	var args T
	if err := json.Unmarshal(row.Args, &args); err != nil {
		return nil, fmt.Errorf("decode args of kind %q into %T: %w", h.kind, args, err)
	}
	return &unit[T]{w: h.w, job: &Job[T]{JobRow: row, Args: args}}, nil
}

type unit[T JobArgs] struct {
	w   Worker[T]
	job *Job[T]
}

func (u *unit[T]) Work(ctx context.Context) error { return u.w.Work(ctx, u.job) }
func (u *unit[T]) Timeout() time.Duration         { return u.w.Timeout(u.job) }
func (u *unit[T]) RetryPolicy() *RetryPolicy      { return u.w.RetryPolicy(u.job) }
func (u *unit[T]) ResultTTL() time.Duration       { return u.w.ResultTTL(u.job) }
