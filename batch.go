package hopper

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/attempt"
)

// DefaultBatchMaxJobs is BatchOpts.MaxJobs when it is 0.
const DefaultBatchMaxJobs = 100

// BatchOpts says how a batch kind's jobs are claimed together (AddBatchWorker).
type BatchOpts struct {
	// MaxJobs bounds the jobs of one batch (default DefaultBatchMaxJobs). A batch is up to
	// MaxJobs consecutive queued jobs of one group (InsertOpts.GroupKey), in the group's order.
	MaxJobs int
	// MaxWait is the linger: a group with fewer than MaxJobs queued jobs is claimed once its
	// oldest job has been due (its run_at) for MaxWait, so that a batch may fill meanwhile.
	// Nothing is held while it lingers. 0 (the default) claims at once whatever is there.
	MaxWait time.Duration
	// Ungrouped batches the kind's jobs without a group key too, up to MaxJobs of them;
	// without it they are not claimed by this worker.
	Ungrouped bool
}

// BatchWorker works jobs of one args type in batches. Embed WorkerDefaults[T] to implement
// only WorkBatch.
type BatchWorker[T JobArgs] interface {
	// WorkBatch runs one attempt of every job of batch. Each job's outcome is its own: a job
	// failed with batch.Fail ends as Work's error would (retry, NoRetry, Snooze, Suspend,
	// business errors), the others complete. A returned error, or a panic, fails every job of
	// the batch, each as its own attempt. ctx ends at the shortest of the jobs' timeouts, when
	// every job of the batch was canceled, and when the process stops; a job canceled (or
	// whose lease was lost) meanwhile records no outcome whatever the batch says.
	WorkBatch(ctx context.Context, batch *Batch[T]) error
	// Timeout, RetryPolicy and ResultTTL are per job, as for Worker.
	Timeout(job *Job[T]) time.Duration
	RetryPolicy(job *Job[T]) *RetryPolicy
	ResultTTL(job *Job[T]) time.Duration
}

// Batch is the jobs one WorkBatch call runs, and what it says of each. It is not safe for
// concurrent use unless the calls are for different jobs.
type Batch[T JobArgs] struct {
	// Jobs are the batch's jobs: a group's in the group's order, or the kind's ungrouped jobs
	// in claim order.
	Jobs    []*Job[T]
	results []attempt.BatchResult
}

// Fail sets the outcome of Jobs[i] to err, as a Worker's Work returning err would (nil: it
// succeeds). It panics when i is out of range.
func (b *Batch[T]) Fail(i int, err error) { b.results[i].Err = err }

// SetResult stores v, as JSON, with Jobs[i] when it succeeds (SetResult's rules).
func (b *Batch[T]) SetResult(i int, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode job result: %w", err)
	}
	if err := checkJSON("result", raw); err != nil {
		return err
	}
	b.results[i].Result = raw
	return nil
}

// AddBatchWorker registers w for the kind of T, its jobs claimed and run in batches by opts.
// A worker process claims a batch for one of its slots (Config.MaxWorkers): a batch is one
// slot, and one unit of the kind's KindConcurrency in this process. Fleet-wide caps and rate
// limits count each job. A remote worker (package remote) given ws takes the kind's jobs in
// batches over the worker protocol; a worker that does not batch runs them one at a time, each
// as a batch of one. It panics when the kind is empty or registered twice, or
// when opts are negative.
func AddBatchWorker[T JobArgs](ws *Workers, w BatchWorker[T], opts BatchOpts) {
	if opts.MaxJobs < 0 || opts.MaxWait < 0 {
		panic(fmt.Sprintf("hopper: BatchOpts %+v must not be negative", opts))
	}
	if opts.MaxJobs == 0 {
		opts.MaxJobs = DefaultBatchMaxJobs
	}
	var zero T
	kind := zero.Kind()
	ws.Add(kind, &batchHandler[T]{kind: kind, w: w, opts: attempt.BatchOpts(opts)}, zero)
}

// AddBatchWorkerFunc registers a function as the batch worker for the kind of T.
func AddBatchWorkerFunc[T JobArgs](ws *Workers, opts BatchOpts, fn func(ctx context.Context, batch *Batch[T]) error) {
	AddBatchWorker[T](ws, &funcBatchWorker[T]{fn: fn}, opts)
}

type funcBatchWorker[T JobArgs] struct {
	WorkerDefaults[T]
	fn func(context.Context, *Batch[T]) error
}

func (f *funcBatchWorker[T]) WorkBatch(ctx context.Context, b *Batch[T]) error { return f.fn(ctx, b) }

// batchHandler adapts a typed BatchWorker to the engine (attempt.BatchHandler).
type batchHandler[T JobArgs] struct {
	kind string
	w    BatchWorker[T]
	opts attempt.BatchOpts
}

func (h *batchHandler[T]) Batching() attempt.BatchOpts { return h.opts }

// Prepare decodes one job's args; its unit's Work runs a batch of that job alone.
func (h *batchHandler[T]) Prepare(row *JobRow) (attempt.Unit, error) {
	var args T
	if err := json.Unmarshal(row.Args, &args); err != nil {
		return nil, fmt.Errorf("decode args of kind %q into %T: %w", h.kind, args, err)
	}
	return &batchUnit[T]{h: h, job: &Job[T]{JobRow: row, Args: args}}, nil
}

// WorkBatch runs units, each a *batchUnit of this handler.
func (h *batchHandler[T]) WorkBatch(ctx context.Context, units []attempt.Unit) ([]attempt.BatchResult, error) {
	b := &Batch[T]{Jobs: make([]*Job[T], len(units)), results: make([]attempt.BatchResult, len(units))}
	for i, u := range units {
		b.Jobs[i] = u.(*batchUnit[T]).job
	}
	if err := h.w.WorkBatch(ctx, b); err != nil {
		return nil, err
	}
	return b.results, nil
}

type batchUnit[T JobArgs] struct {
	h   *batchHandler[T]
	job *Job[T]
}

// Work runs the job as a batch of one, its result set through the handler's context.
func (u *batchUnit[T]) Work(ctx context.Context) error {
	res := attempt.RunBatch(ctx, u.h, []attempt.Unit{u})
	if res[0].Err == nil && res[0].Result != nil {
		if ex := attempt.ExecutionFrom(ctx); ex != nil {
			ex.SetResult(res[0].Result)
		}
	}
	return res[0].Err
}
func (u *batchUnit[T]) Timeout() time.Duration    { return u.h.w.Timeout(u.job) }
func (u *batchUnit[T]) RetryPolicy() *RetryPolicy { return u.h.w.RetryPolicy(u.job) }
func (u *batchUnit[T]) ResultTTL() time.Duration  { return u.h.w.ResultTTL(u.job) }
