package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/jobtrace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// reportTimeout bounds sending an attempt's outcome.
const reportTimeout = 30 * time.Second

// execute runs one job's attempt with its handler and reports the outcome to the server. The
// server decides what the outcome does to the job, as the engine does for an in-process
// attempt (engine.Decide); the worker says how the attempt ended (attempt.Classify).
// handlerDone is called once the handler has returned, before the report (and at the latest
// when execute returns).
func (w *Worker) execute(ctx context.Context, job *hopperv1.ActivatedJob, handlerDone func()) {
	defer handlerDone()
	a := w.prepare(ctx, job)
	w.observeStart(a.row, hoppertype.BatchInfo{})
	var cause error
	if a.err == nil {
		tctx, stop := attempt.WithTimeout(a.ctx, w.clock, a.timeout)
		a.err = attempt.RunUnit(attempt.WithExecution(tctx, a.ex), a.unit)
		cause = context.Cause(tctx)
		stop()
	}
	w.finish(a, cause, handlerDone)
}

// prepared is one attempt ready to run: its job as a row, its handler's unit (or why it has
// none: err), its span's context.
type prepared struct {
	job     *hopperv1.ActivatedJob
	row     *hoppertype.JobRow
	ops     *rpcOps
	ex      *attempt.Execution
	ctx     context.Context // the span's
	span    trace.Span
	unit    attempt.Unit
	err     error
	timeout time.Duration
	began   time.Time
}

// prepare makes job's attempt: its row, its span, its unit (a job of a kind without a worker,
// or whose args do not decode, fails without retry).
func (w *Worker) prepare(ctx context.Context, job *hopperv1.ActivatedJob) *prepared {
	a := &prepared{job: job, row: apiview.FromActivatedJob(job, w.cfg.Name), ops: &rpcOps{w: w, job: job}}
	a.ex = attempt.NewExecution(a.row, a.ops)
	a.ctx, a.span = jobtrace.Start(ctx, w.tracer, a.row)
	h, ok := w.handlers.Handler(a.row.Kind)
	if !ok {
		a.err = &attempt.NoRetryError{Err: fmt.Errorf("no worker for kind %q", a.row.Kind)}
	} else if unit, err := h.Prepare(a.row); err != nil {
		a.err = &attempt.NoRetryError{Err: err}
	} else {
		a.unit = unit
	}
	a.timeout = attempt.AttemptTimeout(a.row, a.unit, job.GetDefaultTimeout().AsDuration())
	a.began = w.clock.Now()
	return a
}

// finish ends attempt a, whose handler returned a.err while its context (or the batch's)
// ended with cause (nil: its own context's cause counts): it classifies the outcome, calls
// handlerDone and reports to the server.
func (w *Worker) finish(a *prepared, cause error, handlerDone func()) {
	ctx, job, ops, ex, unit, err := a.ctx, a.job, a.ops, a.ex, a.unit, a.err
	if cause == nil {
		cause = context.Cause(ctx)
	}
	end := attempt.Classify(err, cause, a.timeout)
	jobtrace.End(a.span, end.Outcome, err)
	w.observeEnd(a.row, end.Outcome, end.Gone, w.clock.Now().Sub(a.began))
	handlerDone()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportTimeout)
	defer cancel()
	var report func(context.Context) error
	switch {
	case end.Gone && w.cfg.Mode == Stream:
		// The job is no longer ours. Saying so (the server answers FAILED_PRECONDITION) frees
		// its credit on the stream; if the stream itself is gone this fails harmlessly.
		report = func(ctx context.Context) error { return w.releaseCall(ctx, job, "lease lost") }
	case end.Gone:
		return // the job is no longer ours: nothing to report
	case end.Outcome == hoppertype.OutcomeOK:
		// Reported whatever ended the context meanwhile (a shutdown): a success is never
		// thrown away. The report is fenced by the token, so if the job is no longer this
		// attempt's (its lease expired and the job went to another worker, an operator
		// canceled it) the server refuses it and nothing changes.
		req := &hopperv1.CompleteRequest{Id: job.GetId(), LeaseToken: job.GetLeaseToken()}
		if r := ex.Result(); len(r) > 0 {
			req.Result = string(r)
		}
		report = func(ctx context.Context) error {
			return w.out.send(ctx, &hopperv1.Outcome{Outcome: &hopperv1.Outcome_Complete{Complete: req}})
		}
	case end.Outcome == hoppertype.OutcomeSnoozed || end.Outcome == hoppertype.OutcomeSuspended:
		// A snooze or suspension keeps its checkpoint even as the worker shuts down or its
		// stream drops (fenced likewise).
		report = func(ctx context.Context) error { return w.park(ctx, job, end) }
	case end.Outcome == hoppertype.OutcomeCanceled && w.cfg.Mode == Stream:
		w.decline(job) // shutting down: released once the stream is closed (stop.go)
		return
	case end.Outcome == hoppertype.OutcomeCanceled:
		report = func(ctx context.Context) error { return w.releaseCall(ctx, job, end.Error) }
	default:
		req := w.failRequest(job, unit, err, end)
		report = func(ctx context.Context) error {
			return w.out.send(ctx, &hopperv1.Outcome{Outcome: &hopperv1.Outcome_Fail{Fail: req}})
		}
	}
	ops.flush(rctx)
	err = w.reportWithRetry(rctx, report)
	if connect.CodeOf(err) == connect.CodeInvalidArgument {
		// The server refused the outcome as the handler gave it (a suspension deadline
		// already past, say): the attempt fails with the server's reason, rather than run
		// on until its lease expires, and then again on every retry.
		refused := err
		err = w.reportWithRetry(rctx, func(ctx context.Context) error {
			return w.out.send(ctx, &hopperv1.Outcome{Outcome: &hopperv1.Outcome_Fail{Fail: &hopperv1.FailRequest{
				Id: job.GetId(), LeaseToken: job.GetLeaseToken(),
				Error: field.Clip("the server refused the attempt's outcome: "+refused.Error(), w.maxErrorBytes())}}})
		})
	}
	if err != nil {
		w.log.Error("report job outcome", "job_id", job.GetId(), "err", err)
	}
}

// reportRetry spaces the tries of an outcome report: 50 ms doubling to 2 s, ±20 %.
var reportRetry = hoppertype.RetryPolicy{Base: 50 * time.Millisecond, Multiplier: 2, Cap: 2 * time.Second, Jitter: 0.2}

// The server takes delays and times within its MaxRunAtFuture (a job that far off is as
// good as never; limits.go) and none in the past: outcomes are
// reported within them, so that a handler's Snooze(100 years), RetryAfter of a huge delay or
// suspension until 1970 ends its attempt as it would in process.

// boundDelay is d within 0 and the server's MaxRunAtFuture.
func (w *Worker) boundDelay(d time.Duration) *durationpb.Duration {
	return durationpb.New(min(max(d, 0), w.maxRunAtFuture()))
}

// clockSlack leaves room for the server's clock to be ahead of this one.
const clockSlack = time.Hour

// boundUntil is t within now (a time past runs the job at once, as in process) and the
// server's MaxRunAtFuture from now.
func (w *Worker) boundUntil(t, now time.Time) *timestamppb.Timestamp {
	if t.Before(now) {
		t = now
	}
	if latest := now.Add(w.maxRunAtFuture() - clockSlack); t.After(latest) {
		t = latest
	}
	return timestamppb.New(t)
}

// reportWithRetry sends an outcome until the server gives a verdict: a lost report would
// leave the job running on the server (a stream keeps renewing its lease) with nobody on it.
// A verdict is success or an answer about the job itself (its lease is gone, it is unknown,
// the request is invalid); an unavailable server, a connection lost mid-call (a server crash
// reads as "protocol error: incomplete envelope") and other transport errors are retried
// with backoff until ctx ends.
func (w *Worker) reportWithRetry(ctx context.Context, report func(context.Context) error) error {
	for n := 1; ; n++ {
		err := unavailable(report(ctx))
		switch connect.CodeOf(err) {
		case connect.CodeFailedPrecondition, connect.CodeNotFound:
			return nil // the job is no longer this attempt's: nothing left to say
		case connect.CodePermissionDenied, connect.CodeUnauthenticated:
			w.giveUp(err) // the key is refused: nor will any other call pass
			return err
		case connect.CodeInvalidArgument:
			return err // retrying cannot help
		}
		if err == nil {
			return nil
		}
		if !clock.Sleep(ctx, w.clock, backoff.Delay(reportRetry, n, nil)) {
			return errors.Join(err, ctx.Err())
		}
	}
}

// releaseCall releases job with reason why, cleaned and cut to what the server takes.
func (w *Worker) releaseCall(ctx context.Context, job *hopperv1.ActivatedJob, why string) error {
	return w.out.send(ctx, &hopperv1.Outcome{Outcome: &hopperv1.Outcome_Release{Release: &hopperv1.ReleaseRequest{
		Id: job.GetId(), LeaseToken: job.GetLeaseToken(), Reason: field.Clip(why, w.maxReasonBytes())}}})
}

// park reports a snooze or a suspension.
func (w *Worker) park(ctx context.Context, job *hopperv1.ActivatedJob, end attempt.Ending) error {
	if end.Outcome == hoppertype.OutcomeSnoozed {
		return w.out.send(ctx, &hopperv1.Outcome{Outcome: &hopperv1.Outcome_Snooze{Snooze: &hopperv1.SnoozeRequest{
			Id: job.GetId(), LeaseToken: job.GetLeaseToken(), Delay: w.boundDelay(end.Snooze)}}})
	}
	req := &hopperv1.SuspendRequest{Id: job.GetId(), LeaseToken: job.GetLeaseToken()}
	if su := end.Suspend; su != nil {
		req.Checkpoint = string(su.Checkpoint)
		if !su.Until.IsZero() {
			req.Until = w.boundUntil(su.Until, w.clock.Now())
		}
		if !su.Deadline.IsZero() {
			req.Deadline = timestamppb.New(su.Deadline)
		}
	}
	return w.out.send(ctx, &hopperv1.Outcome{Outcome: &hopperv1.Outcome_Suspend{Suspend: req}})
}

// failRequest says how an attempt failed (end, of the handler's error err); the server
// decides what follows, with the kind's backoff the worker sends along. The texts are the
// handler's: bytes the server would refuse (not UTF-8, NUL) become U+FFFD, and text past the
// server's MaxErrorBytes is cut, so an odd or huge error message never makes the report
// itself fail.
func (w *Worker) failRequest(job *hopperv1.ActivatedJob, unit attempt.Unit, err error, end attempt.Ending) *hopperv1.FailRequest {
	req := &hopperv1.FailRequest{Id: job.GetId(), LeaseToken: job.GetLeaseToken(),
		Error: field.Clip(end.Error, w.maxErrorBytes()), Outcome: string(end.Outcome),
		Stack: field.Clip(end.Stack, w.maxErrorBytes()), NoRetry: end.NoRetry,
		Checkpoint: string(end.Checkpoint), ErrorCode: end.ErrorCode}
	if req.Error == "" { // the server requires error text
		req.Error = fmt.Sprintf("%T with an empty message", err)
	}
	if end.RetryAfter != nil {
		req.RetryBackoff = w.boundDelay(*end.RetryAfter)
	}
	if unit != nil {
		req.RetryPolicy = apiview.RetryPolicy(unit.RetryPolicy())
	}
	return req
}

func durationOf(d time.Duration) *durationpb.Duration { return durationpb.New(d) }

// rpcOps sends a handler's calls about its attempt to the server.
type rpcOps struct {
	w   *Worker
	job *hopperv1.ActivatedJob
	// Signs of life the server could not be reached for (an outage, a restart): kept, the
	// latest progress winning, and sent with the handler's next call or before the attempt's
	// outcome, so that a handler reporting progress through an outage neither fails nor
	// loses its last report.
	mu      sync.Mutex
	pending *hopperv1.ReportProgressRequest
	beat    bool // a heartbeat is owed (a progress sent pays it too)
}

// Progress reports progress; a message longer than the server takes is cut rather than
// refused. While the server is unreachable it is kept, not failed (see rpcOps).
func (o *rpcOps) Progress(ctx context.Context, percent int, message string) error {
	req := &hopperv1.ReportProgressRequest{Id: o.job.GetId(), LeaseToken: o.job.GetLeaseToken(),
		Percent: int32(percent), Message: field.Clip(message, o.w.maxProgressMessageBytes())}
	o.mu.Lock()
	o.pending = req // the latest wins
	o.mu.Unlock()
	return o.err(o.kept(o.sendPending(ctx)))
}

// Heartbeat records a sign of life; while the server is unreachable it is kept, not failed.
func (o *rpcOps) Heartbeat(ctx context.Context) error {
	o.mu.Lock()
	o.beat = true
	o.mu.Unlock()
	return o.err(o.kept(o.sendPending(ctx)))
}

// sendPending sends the kept progress, or else the owed heartbeat, and forgets what it sent
// unless the server was unreachable.
func (o *rpcOps) sendPending(ctx context.Context) error {
	o.mu.Lock()
	req, beat := o.pending, o.beat
	o.mu.Unlock()
	var err error
	switch {
	case req != nil:
		_, err = o.w.api.ReportProgress(ctx, req)
	case beat:
		_, err = o.w.api.Heartbeat(ctx, &hopperv1.HeartbeatRequest{Id: o.job.GetId(), LeaseToken: o.job.GetLeaseToken()})
	default:
		return nil
	}
	if err != nil && ctx.Err() == nil && connectionLost(err) {
		// A call cut by a dying server can read as canceled (a broken pipe): the handler
		// did not cancel it, so it is the outage it looks like.
		err = connect.NewError(connect.CodeUnavailable, "connection to the server lost: "+err.Error()).WithCause(err)
	}
	if err = unavailable(err); connect.CodeOf(err) == connect.CodeUnavailable {
		return err // kept for the next try
	}
	o.mu.Lock()
	if o.pending == req { // not replaced meanwhile
		o.pending, o.beat = nil, false
	}
	o.mu.Unlock()
	return err
}

// kept hides an unreachable server from the handler: what it sent is kept for later.
func (o *rpcOps) kept(err error) error {
	if connect.CodeOf(err) == connect.CodeUnavailable {
		return nil
	}
	return err
}

// flush sends what is kept, retried until the server answers (within ctx), before the
// attempt's outcome: after it, a progress would be refused (the lease is gone).
func (o *rpcOps) flush(ctx context.Context) {
	if err := o.w.reportWithRetry(ctx, o.sendPending); err != nil && !errors.Is(err, hoppertype.ErrLeaseLost) {
		o.w.log.Warn("report kept progress", "job_id", o.job.GetId(), "err", err)
	}
}

func (o *rpcOps) ExtendLease(ctx context.Context, d time.Duration) error {
	_, err := o.w.api.ExtendLease(ctx, &hopperv1.ExtendLeaseRequest{Id: o.job.GetId(),
		LeaseToken: o.job.GetLeaseToken(), Duration: durationpb.New(d)})
	if err == nil {
		o.w.mu.Lock()
		if a := o.w.running[keyOf(o.job)]; a != nil {
			a.lease = d // later renewals keep this duration
		}
		o.w.mu.Unlock()
		o.w.keeper.Shortened()
	}
	return o.err(err)
}

// ParentResults reads the job's parents: those its activation carried (FetchParentResults),
// else with a call. An empty list in the activation is not trusted: the job may have no
// parents, or the server left them out (a server older than fetch_parent_results sends none).
func (o *rpcOps) ParentResults(ctx context.Context) ([]*hoppertype.ParentResult, error) {
	if got := o.job.GetParentResults(); len(got) > 0 && !o.job.GetParentResultsOmitted() {
		return apiview.FromParentResults(got), nil
	}
	res, err := o.w.api.ParentResults(ctx, &hopperv1.ParentResultsRequest{Id: o.job.GetId(), LeaseToken: o.job.GetLeaseToken()})
	if err != nil {
		return nil, o.err(fmt.Errorf("read parent results: %w", err))
	}
	return apiview.FromParentResults(res.GetParents()), nil
}

// Spawn adds jobs with WorkerService.Spawn (docs/workflows.md, "Fan-out at run time"). The
// server validates them: an INVALID_ARGUMENT naming a field comes back as the
// *ValidationError it names, as in process.
func (o *rpcOps) Spawn(ctx context.Context, jobs []*attempt.SpawnJob) ([]*attempt.Spawned, error) {
	req := &hopperv1.SpawnRequest{Id: o.job.GetId(), LeaseToken: o.job.GetLeaseToken(), Jobs: make([]*hopperv1.SpawnJob, len(jobs))}
	for i, j := range jobs {
		s, err := apiview.SpawnJob(j)
		if err != nil {
			var ve *hoppertype.ValidationError
			if errors.As(err, &ve) {
				return nil, &hoppertype.ValidationError{Field: fmt.Sprintf("jobs[%d].%s", i, ve.Field), Reason: ve.Reason}
			}
			return nil, err
		}
		req.Jobs[i] = s
	}
	res, err := o.w.api.Spawn(ctx, req)
	if err != nil {
		if connect.CodeOf(err) == connect.CodeInvalidArgument {
			var ce *connect.Error
			if errors.As(err, &ce) {
				if ve := apiview.ValidationError(ce.Message()); ve != nil {
					return nil, ve
				}
			}
			return nil, fmt.Errorf("spawn: %w: %w", hoppertype.ErrInvalid, err)
		}
		return nil, o.err(fmt.Errorf("spawn: %w", err))
	}
	out := make([]*attempt.Spawned, len(res.GetResults()))
	for i, r := range res.GetResults() {
		out[i] = &attempt.Spawned{Job: apiview.FromJob(r.GetJob()), Existing: r.GetExisting()}
	}
	return out, nil
}

// err maps a refused lease (or a job the server no longer has) to hoppertype.ErrLeaseLost and
// cancels the attempt, as in process.
func (o *rpcOps) err(err error) error {
	if err == nil {
		return nil
	}
	if code := connect.CodeOf(err); code == connect.CodeFailedPrecondition || code == connect.CodeNotFound {
		o.w.mu.Lock()
		a := o.w.running[keyOf(o.job)]
		o.w.mu.Unlock()
		if a != nil {
			a.cancel(hoppertype.ErrLeaseLost)
		}
		return fmt.Errorf("job %s: %w", o.job.GetId(), hoppertype.ErrLeaseLost)
	}
	return err
}
