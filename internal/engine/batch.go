package engine

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/claim"
	"github.com/hopperjobs/hopper/internal/jobtrace"
	"github.com/hopperjobs/hopper/internal/store"
	"go.opentelemetry.io/otel/trace"
)

// Batches (docs/workers.md, "Batches"). A kind whose handler is an attempt.BatchHandler has
// its jobs claimed in batches (store.JobClaimBatch): a batch takes one slot of its queue's
// lane, and one unit of the kind's KindConcurrency. Each job of a batch is claimed, registered
// and leased as its own attempt (its token fences its outcome, the one lease keeper renews it,
// a cancel or a lost lease reaches it alone); the handler runs once for all, and each job's
// outcome goes through the one decider (Decide) as a lone attempt's does. The other kinds are
// claimed as before, in the same claim, for the slots the batches left.

// batchKind is a batch kind of this process and how its batches are claimed.
type batchKind struct {
	kind string
	opts attempt.BatchOpts
}

// splitBatchKinds splits kinds (sorted) into the batch kinds of ws and the others.
func splitBatchKinds(ws *attempt.Workers, kinds []string) (batching []batchKind, plain []string) {
	for _, k := range kinds {
		h, _ := ws.Handler(k)
		if bh, ok := h.(attempt.BatchHandler); ok {
			batching = append(batching, batchKind{kind: k, opts: bh.Batching()})
		} else {
			plain = append(plain, k)
		}
	}
	sort.Slice(batching, func(i, j int) bool { return batching[i].kind < batching[j].kind })
	return batching, plain
}

// claimWithBatches makes the claim r in a process with batch kinds: batches first, one a unit,
// then the other kinds' jobs for the units left and ahead.
func (p *producer) claimWithBatches(ctx context.Context, r claim.Request) claim.Result[*claimedJob] {
	batches, retryAt, err := p.claimBatches(ctx, r.Lane, r.Units)
	out := claim.Result[*claimedJob]{Jobs: batches, Err: err, Restricted: true}
	rest := r
	rest.Units -= len(batches)
	if err == nil && len(p.plain) > 0 && rest.Units+rest.Ahead > 0 {
		res := p.claimJobs(ctx, rest, p.plain)
		res.Jobs = append(batches, res.Jobs...)
		out = res
	}
	out.RetryBy(retryAt)
	return out
}

// claimBatches claims up to units batches in queue, trying the batch kinds in turn from the
// one after the last claim's first, and returns them with when to look again (a batch that
// lingers is ready, a cap or a rate limit that held one back lets it start; zero: nothing to
// wait for).
func (p *producer) claimBatches(ctx context.Context, queue string, units int) ([]*claimedJob, time.Time, error) {
	e := p.e
	var out []*claimedJob
	var look claim.Result[*claimedJob] // only its RetryAt
	began := e.clock.Now()
	// A cap's or a rate limit's wait counts from the store's answer.
	after := func(d time.Duration) time.Time {
		if d <= 0 {
			return time.Time{}
		}
		return e.clock.Now().Add(d)
	}
	first := int(p.next.Add(1))
	for i := range p.batching {
		bk := p.batching[(first+i)%len(p.batching)]
		for len(out) < units {
			if !e.kindCaps.Take(bk.kind) {
				break
			}
			got, err := e.store.JobClaimBatch(ctx, &store.BatchClaimParams{Queue: queue, Kind: bk.kind,
				MaxJobs: bk.opts.MaxJobs, MaxWait: bk.opts.MaxWait, Ungrouped: bk.opts.Ungrouped,
				WorkerID: e.cfg.WorkerID, LeaseDuration: e.cfg.LeaseDuration})
			if err != nil || len(got.Jobs) == 0 {
				e.kindCaps.Free(bk.kind, 1)
				if err != nil {
					return out, look.RetryAt, err
				}
				if !got.ReadyAt.IsZero() {
					// The batch lingers: look again when it is ready (never sooner than 1 ms
					// after this claim began, should the store's clock lag this one's).
					look.RetryBy(maxTime(got.ReadyAt, began.Add(time.Millisecond)))
				}
				look.RetryBy(after(got.Hold.Retry(capRetry, maxRateWait)))
				break
			}
			if hook := e.cfg.OnClaimed; hook != nil {
				hook(got.Jobs, true)
			}
			out = append(out, e.ownBatch(got.Jobs, e.kindCaps.Capped(bk.kind)))
			look.RetryBy(after(got.Hold.Retry(capRetry, maxRateWait)))
		}
	}
	return out, look.RetryAt, nil
}

// ownBatch registers the jobs of a batch, each as its own attempt, and returns the batch.
// The batch's context ends when the process stops hard and once every job's has ended.
func (e *Engine) ownBatch(rows []*hoppertype.JobRow, kindHeld bool) *claimedJob {
	ctx, cancel := context.WithCancelCause(e.workCtx)
	b := &claimedJob{row: rows[0], ctx: ctx, cancel: cancel, members: make([]*claimedJob, len(rows))}
	b.kindHeld.Store(kindHeld)
	var left atomic.Int32
	left.Store(int32(len(rows)))
	for i, row := range rows {
		m := e.own(row)
		b.members[i] = m
		context.AfterFunc(m.ctx, func() {
			if left.Add(-1) == 0 {
				cancel(context.Cause(m.ctx))
			}
		})
	}
	return b
}

// giveBackBatch returns a batch that will not start to its queue, each job as giveBack does.
func (p *producer) giveBackBatch(b *claimedJob, why, reason string) {
	for _, m := range b.members {
		p.e.giveBack(m, why, reason)
	}
	p.freeKind(b)
	b.cancel(nil)
}

// executeBatch runs a claimed batch and hands each job's outcome to the completer. Jobs whose
// args do not decode fail alone without retry; jobs whose context ended before the start do
// not join the call.
func (e *Engine) executeBatch(q *queueLane, b *claimedJob) {
	defer e.execs.Done()
	defer b.cancel(nil)
	h, _ := e.cfg.Workers.Handler(b.row.Kind)
	bh := h.(attempt.BatchHandler) // only batch kinds are claimed in batches
	jobs := make([]*batchJob, len(b.members))
	var exs []*attempt.Execution
	var units []attempt.Unit
	var in []*batchJob
	for i, m := range b.members {
		j := &batchJob{m: m, ex: attempt.NewExecution(m.row, localOps{e: e, row: m.row})}
		jobs[i] = j
		_, j.span = jobtrace.Start(m.ctx, e.cfg.Tracer, m.row)
		u, err := bh.Prepare(m.row)
		switch {
		case err != nil:
			j.err = &attempt.NoRetryError{Err: err}
		case context.Cause(m.ctx) != nil:
			j.unit, j.err = u, context.Cause(m.ctx)
		default:
			j.unit = u
			in, exs, units = append(in, j), append(exs, j.ex), append(units, u)
		}
	}
	var cause error
	if len(in) > 0 {
		tctx, stop := attempt.WithTimeout(b.ctx, e.clock, attempt.BatchTimeout(exs, units, e.cfg.JobTimeout))
		res := attempt.RunBatch(tctx, bh, units)
		cause = context.Cause(tctx)
		stop()
		for i, j := range in {
			j.err = res[i].Err
			j.ex.SetResult(res[i].Result)
		}
	}
	q.lane.Done(1) // the batch's slot
	e.producer.freeKind(b)
	var out []*store.FinishParams
	for _, j := range jobs {
		if p := e.batchOutcome(j, cause); p != nil {
			out = append(out, p)
		}
	}
	if n := len(out); n > 0 && (b.row.GroupKey != "" || q.capHeld.Load()) {
		// The group's next jobs, or a slot under a fleet-wide cap, are free once the
		// batch's last outcome is written.
		e.wakeAfterWrite(out[n-1].ID, b.row.Queue)
	}
	for _, p := range out {
		e.completer.add(p)
	}
}

// batchJob is one job of a running batch.
type batchJob struct {
	m    *claimedJob
	ex   *attempt.Execution
	unit attempt.Unit
	err  error
	span trace.Span
}

// batchOutcome decides one job's outcome, as execute does a lone job's, by its own context's
// cause first (canceled, lease lost, shutdown), else the batch's (its timeout); nil when the
// job is no longer the attempt's.
func (e *Engine) batchOutcome(j *batchJob, batchCause error) *store.FinishParams {
	row := j.m.row
	defer j.m.cancel(nil)
	cause := context.Cause(j.m.ctx)
	if cause == nil {
		cause = batchCause
	}
	var params *store.FinishParams
	if e.unregister(row.ID, row.Token) {
		params = e.outcome(j.unit, j.ex, j.err, cause)
	}
	if params == nil {
		jobtrace.End(j.span, hoppertype.OutcomeCanceled, j.err)
	} else {
		jobtrace.End(j.span, params.Outcome, j.err)
	}
	return params
}
