package remote

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/attempt"
)

// Batches over the wire (docs/workers.md, "Batches"). A kind whose handler in Workers is an
// attempt.BatchHandler is declared in the worker's requests (batch_kinds, from its
// BatchOpts); the server claims its jobs in batches and sends a batch's jobs together, each
// with the batch's id and its own lease token. The worker runs a batch in one slot, with
// the handler called once for all by attempt.RunBatch, as the engine does; each job is its
// own attempt: its own context (a lost lease cancels it alone), its own lease renewal, and
// its own fenced report of the outcome the one classifier gives it (attempt.Classify; the
// server's decider does the rest).

// batchKinds returns the worker's batch kinds as its requests declare them.
func batchKinds(ws *attempt.Workers, kinds []string) []*hopperv1.BatchKind {
	var out []*hopperv1.BatchKind
	for _, k := range kinds {
		h, _ := ws.Handler(k)
		if bh, ok := h.(attempt.BatchHandler); ok {
			o := bh.Batching()
			out = append(out, &hopperv1.BatchKind{Kind: k, MaxJobs: int32(min(o.MaxJobs, maxBatchJobs)),
				MaxWait: durationOf(o.MaxWait), Ungrouped: o.Ungrouped})
		}
	}
	return out
}

// maxBatchJobs is the most jobs a request's batch may ask for (BatchKind.max_jobs).
const maxBatchJobs = 1000

// grouped splits jobs as the server sent them into units to run: each job alone, and the jobs
// of each batch together, in order.
func grouped(jobs []*hopperv1.ActivatedJob) [][]*hopperv1.ActivatedJob {
	var out [][]*hopperv1.ActivatedJob
	at := map[string]int{}
	for _, j := range jobs {
		b := j.GetBatchId()
		if i, ok := at[b]; ok && b != "" {
			out[i] = append(out[i], j)
			continue
		}
		if b != "" {
			at[b] = len(out)
		}
		out = append(out, []*hopperv1.ActivatedJob{j})
	}
	return out
}

// newBatch makes the attempts of a batch's jobs, not started: the first holds them all
// (run.batch).
func (w *Worker) newBatch(jobs []*hopperv1.ActivatedJob) *run {
	runs := make([]*run, len(jobs))
	for i, j := range jobs {
		runs[i] = w.newAttempt(j)
	}
	runs[0].batch = runs
	return runs[0]
}

// runs returns the attempts a holds: its batch's, or itself.
func (a *run) runs() []*run {
	if a.batch != nil {
		return a.batch
	}
	return []*run{a}
}

// alive reports whether any attempt of a's is still this worker's.
func (a *run) alive() bool {
	for _, r := range a.runs() {
		if r.ctx.Err() == nil {
			return true
		}
	}
	return false
}

// startBatchLocked runs the batch b leads in its own goroutine (w.mu held), calling done once
// its handler has returned.
func (w *Worker) startBatchLocked(b *run, done func()) {
	for _, a := range b.batch {
		w.running[keyOf(a.job)] = a
	}
	w.jobs.Go(func() {
		defer func() {
			for _, a := range b.batch {
				a.cancel(nil)
				close(a.done)
			}
		}()
		w.executeBatch(b.batch, sync.OnceFunc(done))
		w.mu.Lock()
		for _, a := range b.batch {
			delete(w.running, keyOf(a.job))
		}
		w.mu.Unlock()
	})
}

// executeBatch runs a batch's attempts with one call of their kind's batch handler and
// reports each job's outcome. A job whose args do not decode fails alone without retry; a job
// whose context ended before the start (its lease was lost) does not join the call. The
// call's context ends when every job's has, at the batch's timeout (the shortest of its
// jobs'), and at a hard stop.
func (w *Worker) executeBatch(runs []*run, handlerDone func()) {
	defer handlerDone()
	bctx, cancel := context.WithCancelCause(w.workCtx)
	defer cancel(nil)
	var left atomic.Int32
	left.Store(int32(len(runs)))
	all := make([]*prepared, len(runs))
	var in []*prepared
	var exs []*attempt.Execution
	var units []attempt.Unit
	for i, r := range runs {
		context.AfterFunc(r.ctx, func() {
			if left.Add(-1) == 0 {
				cancel(context.Cause(r.ctx))
			}
		})
		a := w.prepare(r.ctx, r.job)
		all[i] = a
		if a.err == nil && context.Cause(r.ctx) != nil {
			a.err = context.Cause(r.ctx)
		}
		if a.err == nil {
			in, exs, units = append(in, a), append(exs, a.ex), append(units, a.unit)
		}
	}
	w.observeBatchStart(all)
	var cause error
	if len(in) > 0 {
		h, _ := w.handlers.Handler(runs[0].job.GetKind())
		bh, _ := h.(attempt.BatchHandler)
		timeout := attempt.BatchTimeout(exs, units, runs[0].job.GetDefaultTimeout().AsDuration())
		tctx, stop := attempt.WithTimeout(bctx, w.clock, timeout)
		var res []attempt.BatchResult
		if bh != nil {
			res = attempt.RunBatch(tctx, bh, units)
		} else { // the kind has no batch worker here (the server batched for another process)
			res = make([]attempt.BatchResult, len(units))
			for i, u := range units {
				res[i].Err = attempt.RunUnit(attempt.WithExecution(tctx, exs[i]), u)
			}
		}
		cause = context.Cause(tctx)
		stop()
		for i, a := range in {
			a.err = res[i].Err
			a.ex.SetResult(res[i].Result)
			a.timeout = timeout
		}
	}
	handlerDone()
	var reports sync.WaitGroup
	for _, a := range all {
		reports.Go(func() {
			c := context.Cause(a.ctx) // the job's own context first (its lease, a hard stop)
			if c == nil {
				c = cause
			}
			w.finish(a, c, func() {})
		})
	}
	reports.Wait()
}

// batchingOf returns the worker's batch kinds among kinds (a poll may leave some out).
func (w *Worker) batchingOf(kinds []string) []*hopperv1.BatchKind {
	var out []*hopperv1.BatchKind
	for _, bk := range w.batching {
		if slices.Contains(kinds, bk.GetKind()) {
			out = append(out, bk)
		}
	}
	return out
}
