package server

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/workerapi"
	"google.golang.org/protobuf/types/known/durationpb"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/hopperjobs/hopper/internal/clock"
	"golang.org/x/sync/errgroup"
)

// MaxCredit bounds a stream's credit.
const MaxCredit = workerapi.MaxStreamCredit

// defaultLease is a remote job's lease when the worker names none.
const defaultLease = 30 * time.Second

// releaseTimeout bounds giving a closed stream's jobs back.
const releaseTimeout = 10 * time.Second

// workerService implements hopper.v1.WorkerService.
type workerService struct{ s *Server }

func tooMany(what string) error {
	return connect.NewError(connect.CodeResourceExhausted,
		"too many open "+what+" for this API key; retry in "+retryAfter+"s")
}

// overLimit answers a caller over its stream or poll limit: 429 with Retry-After.
func overLimit(ctx context.Context, what string) error {
	if info, ok := connect.CallInfoForServerContext(ctx); ok {
		info.ResponseHeader().Set("Retry-After", retryAfter)
	}
	return tooMany(what)
}

func (w *workerService) Activate(ctx context.Context, req *hopperv1.ActivateRequest) (*hopperv1.ActivateResponse, error) {
	s := w.s
	wait := fromDur(req.GetRequestTimeout())
	if wait > 0 {
		release, ok := s.limits.acquire("poll", principalFrom(ctx).KeyID, s.cfg.MaxPollsPerKey)
		if !ok {
			return nil, overLimit(ctx, "long polls")
		}
		defer release()
	}
	params := workerapi.ActivateParams{
		Worker: req.GetWorker(), Queue: req.GetQueue(), Queues: req.GetQueues(), Kinds: req.GetKinds(),
		MaxJobs: int(req.GetMaxJobs()), Ahead: int(req.GetAhead()), LeaseDuration: fromDur(req.GetLeaseTimeout()), Wait: wait,
		BatchKinds: batchKinds(req.GetBatchKinds()),
	}
	if err := params.Check(); err != nil {
		return nil, rpcError("activate", err)
	}
	queues := params.QueueNames()
	callCtx := ctx
	ctx, stop := s.untilShutdown(ctx)
	defer stop()
	done := s.reg.seen(req.GetWorker(), queues, req.GetKinds(), params.BatchKinds, s.clock.Now(), false)
	claimCtx, endClaim := s.reg.untilHeld(ctx, req.GetWorker(), queues, s.clock.Now())
	defer endClaim()
	got, err := s.api.ActivateQueues(claimCtx, params)
	var jobs []*hopper.JobRow
	if got != nil {
		jobs = w.deliverable(ctx, got.Jobs)
	}
	done(jobs)
	if err != nil && claimCtx.Err() != nil && ctx.Err() == nil {
		return &hopperv1.ActivateResponse{}, nil // the worker's governor holds it back (Hold)
	}
	if err != nil && ctx.Err() != nil && !s.isReady() {
		return nil, errShuttingDown()
	}
	if err != nil {
		return nil, rpcError("activate", err)
	}
	if callCtx.Err() != nil && len(jobs) > 0 {
		// The caller gave up as the jobs were claimed: give them back rather than let them
		// wait for their leases.
		refs := make([]workerapi.LeaseRef, len(jobs))
		for i, j := range jobs {
			refs[i] = workerapi.LeaseRef{ID: j.ID, Token: j.Token}
		}
		w.release(ctx, refs, "activation abandoned by the worker")
		return nil, rpcError("activate", callCtx.Err())
	}
	out := &hopperv1.ActivateResponse{Jobs: make([]*hopperv1.ActivatedJob, len(jobs)), Restricted: got.Restricted}
	if got.FairAhead > 0 {
		out.FairAhead = durationpb.New(got.FairAhead)
	}
	for i, j := range jobs {
		out.Jobs[i] = toActivated(j, req.GetFetchFields(), s.jobTimeout)
		out.Jobs[i].BatchId = got.BatchIDs[j.ID]
	}
	if req.GetFetchParentResults() {
		w.withParents(ctx, out.Jobs)
	}
	return out, nil
}

// StreamJobs pushes jobs within the stream's credit until the caller goes away, the server
// shuts down or the caller's key is revoked; nothing else ends it (a failed claim is retried
// with backoff). Its claim loop (streamer, package claim) shares the credit between the
// stream's queues by weight and claims ahead. When it ends, its unfinished jobs go back to
// their queue (closeStream).
func (w *workerService) StreamJobs(ctx context.Context, req *hopperv1.StreamJobsRequest, out hopperv1connect.WorkerServiceStreamJobsServerStream) (endErr error) {
	s := w.s
	params, err := streamParams(req)
	if err != nil {
		return err
	}
	release, ok := s.limits.acquire("stream", principalFrom(ctx).KeyID, s.cfg.MaxStreamsPerKey)
	if !ok {
		return overLimit(ctx, "streams")
	}
	defer release()
	seenDone := s.reg.seen(params.Worker, params.QueueNames(), params.Kinds, params.BatchKinds, s.clock.Now(), true)
	// The stream ends when the worker goes away, when the server shuts down, or when its key
	// is revoked (the keeper cancels it with errKeyRevoked).
	ctx, stopAtShutdown := s.untilShutdown(ctx)
	defer stopAtShutdown()
	ctx, endStream := context.WithCancelCause(ctx)
	defer endStream(nil)
	sj, err := w.newStreamer(ctx, req, params, out, endStream)
	if err != nil {
		seenDone(nil)
		return rpcError("stream jobs", err)
	}
	keepCtx, stopKeeping := context.WithCancel(ctx)
	var keeper sync.WaitGroup
	keeper.Go(func() { w.watchKey(keepCtx, sj.st) })
	defer func() {
		stopKeeping()
		keeper.Wait()
		w.closeStream(ctx, sj.st, endErr) // nil endErr: the worker went away
		seenDone(nil)
	}()
	if err := out.SendHeaders(); err != nil { // the worker knows the stream is open
		return nil
	}
	if every := s.cfg.StreamKeepalive; every > 0 {
		keeper.Go(func() { sj.keepAlive(keepCtx, every) })
	}
	return sj.run()
}

// streamParams checks a stream's request.
func streamParams(req *hopperv1.StreamJobsRequest) (workerapi.ActivateParams, error) {
	if credit := req.GetCredit(); credit < 1 || credit > MaxCredit {
		return workerapi.ActivateParams{}, invalidArg("credit", "must be 1–1000")
	}
	lease := fromDur(req.GetLeaseTimeout())
	if lease == 0 {
		lease = defaultLease
	}
	params := workerapi.ActivateParams{Worker: req.GetWorker(), Queue: req.GetQueue(), Queues: req.GetQueues(),
		Kinds: req.GetKinds(), MaxJobs: 1, LeaseDuration: lease, BatchKinds: batchKinds(req.GetBatchKinds())}
	if err := params.Check(); err != nil {
		return params, rpcError("stream jobs", err)
	}
	if err := workerapi.CheckKindCaps(kindCaps(req), params.Kinds, int(req.GetCredit())); err != nil {
		return params, rpcError("stream jobs", err)
	}
	return params, nil
}

// batchKinds returns a request's batch kinds (ActivateRequest.batch_kinds).
func batchKinds(in []*hopperv1.BatchKind) []workerapi.BatchKind {
	var out []workerapi.BatchKind
	for _, bk := range in {
		out = append(out, workerapi.BatchKind{Kind: bk.GetKind(), MaxJobs: int(bk.GetMaxJobs()),
			MaxWait: fromDur(bk.GetMaxWait()), Ungrouped: bk.GetUngrouped()})
	}
	return out
}

// kindCaps returns a stream's caps per kind (StreamJobsRequest.kind_concurrency).
func kindCaps(req *hopperv1.StreamJobsRequest) map[string]int {
	caps := make(map[string]int, len(req.GetKindConcurrency()))
	for kind, n := range req.GetKindConcurrency() {
		caps[kind] = int(n)
	}
	return caps
}

// ended says why a stream whose context ended stops: an error the worker should act on, or
// nil when the worker itself went away.
func (w *workerService) ended(ctx context.Context) error {
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errKeyRevoked), errors.Is(cause, errKeyRequired):
		return lapsedError(cause)
	case !w.s.isReady() || w.s.shuttingDown():
		return errShuttingDown()
	}
	return nil
}

// lapsedError is what a stream whose caller's authorization lapsed (cause: errKeyRevoked or
// errKeyRequired) ends with.
func lapsedError(cause error) error {
	if errors.Is(cause, errKeyRequired) {
		return connect.NewError(connect.CodeUnauthenticated,
			"an API key was created: this server now requires one (Authorization: Bearer <key>)")
	}
	return connect.NewError(connect.CodeUnauthenticated, "the stream's API key was revoked")
}

// stillAllowed reports whether caller may still use a stream it opened: its key is not
// revoked or, for a caller without a key, no key exists yet. The answer is cached per key for
// a few seconds (KeyAuth.StillValid), so asking for each message costs no store read. An
// error reading the keys allows: an outage must not end streams.
func (w *workerService) stillAllowed(ctx context.Context, caller *Principal) bool {
	rv, ok := w.s.cfg.Auth.(Revalidator)
	if !ok {
		return true
	}
	valid, err := rv.StillValid(ctx, caller)
	return err != nil || valid
}

// refsOf names the attempts of jobs.
func refsOf(jobs []*hopper.JobRow) []workerapi.LeaseRef {
	refs := make([]workerapi.LeaseRef, len(jobs))
	for i, j := range jobs {
		refs[i] = workerapi.LeaseRef{ID: j.ID, Token: j.Token}
	}
	return refs
}

// holdAll records jobs as held by the stream.
func (w *workerService) holdAll(st *stream, jobs []*hopper.JobRow) {
	for _, j := range jobs {
		st.hold(j)
	}
}

// maxPushBytes is about how much a stream puts in one message: a message holds at least one
// job, and more while they fit.
const maxPushBytes = 256 << 10

// errKeyRevoked ends a stream whose API key was revoked; errKeyRequired one opened without a
// key once a key exists.
var (
	errKeyRevoked  = errors.New("API key revoked")
	errKeyRequired = errors.New("an API key is required now")
)

// keyRecheck is how often a stream checks that its caller may still have it: that its key is
// not revoked or, for a stream opened without a key, that no key exists yet. A key created or
// revoked through this server ends the streams it concerns at once (Server.keysChanged).
const keyRecheck = 2 * time.Second

// watchKey ends the stream once its caller may no longer have it, checking every keyRecheck.
// (The leases of a stream's jobs are its worker's to renew: a worker that hangs loses them
// within one lease.)
func (w *workerService) watchKey(ctx context.Context, st *stream) {
	if _, ok := w.s.cfg.Auth.(Revalidator); !ok {
		return
	}
	for clock.Sleep(ctx, w.s.clock, keyRecheck) {
		if !w.stillAllowed(ctx, st.caller) {
			st.end(authEnded(st.caller))
			return
		}
	}
}

// authEnded is why a stream of caller ends when its authorization lapses.
func authEnded(caller *Principal) error {
	if caller.KeyID == "" {
		return errKeyRequired
	}
	return errKeyRevoked
}

// deliverable returns the claimed jobs that can be sent to a remote worker. Each of the others
// (a stored value the wire cannot carry: see undeliverable) fails alone, at once and for
// good, into the dead-letter queue: sent, it would fail the whole answer and strand the good
// jobs with it; given back, it would be claimed again forever.
func (w *workerService) deliverable(ctx context.Context, jobs []*hopper.JobRow) []*hopper.JobRow {
	var ok, bad []*hopper.JobRow
	var whys []string
	for _, j := range jobs {
		if why := undeliverable(j); why != "" {
			bad, whys = append(bad, j), append(whys, why)
		} else {
			ok = append(ok, j)
		}
	}
	if len(bad) == 0 {
		return jobs
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	concurrently(len(bad), 32, func(i int) {
		if err := w.s.api.FailUndeliverable(ctx, bad[i], whys[i]); err != nil {
			w.s.log.Error("fail undeliverable job", "job_id", apiview.Text(bad[i].ID), "why", whys[i], "err", err)
			return
		}
		w.s.log.Warn("job cannot be delivered to a remote worker; failed", "job_id", apiview.Text(bad[i].ID),
			"kind", apiview.Text(bad[i].Kind), "queue", apiview.Text(bad[i].Queue), "why", whys[i])
	})
	return ok
}

// releaseUnsent wraps Activate's stream so that jobs of an answer that could not be sent
// (marshalling or writing it failed) go back to their queue at once, instead of staying
// running, with nobody on them, until their leases expire. (A stream's jobs need no such
// guard: StreamJobs holds them and gives back what it held when a send fails.)
func (s *Server) releaseUnsent(next connect.ServerFunc) connect.ServerFunc {
	return func(ctx context.Context, spec connect.Spec, stream connect.ServerStream) error {
		if spec.Procedure == hopperv1connect.WorkerServiceActivateProcedure {
			stream = &activateStream{ServerStream: stream, ctx: ctx, w: &workerService{s}}
		}
		return next(ctx, spec, stream)
	}
}

type activateStream struct {
	connect.ServerStream
	ctx context.Context
	w   *workerService
}

func (a *activateStream) Send(msg any) error {
	err := a.ServerStream.Send(msg)
	res, ok := msg.(*hopperv1.ActivateResponse)
	if err == nil || !ok || len(res.GetJobs()) == 0 {
		return err
	}
	refs := make([]workerapi.LeaseRef, len(res.GetJobs()))
	for i, j := range res.GetJobs() {
		refs[i] = workerapi.LeaseRef{ID: j.GetId(), Token: j.GetLeaseToken()}
	}
	a.w.s.log.Warn("activated jobs could not be sent; released", "jobs", len(refs), "err", err)
	a.w.handBack(a.ctx, refs, "the answer to the worker could not be sent", a.w.s.api.ReturnJob)
	return err
}

// concurrently calls fn(0) … fn(n-1), up to limit at a time, and waits for them: outcomes
// written concurrently share the completer's transactions instead of one commit each.
func concurrently(n, limit int, fn func(i int)) {
	var g errgroup.Group
	g.SetLimit(limit)
	for i := range n {
		g.Go(func() error { fn(i); return nil })
	}
	_ = g.Wait() // fn reports its own errors
}

// finished updates the stream registry after a call that ends or may end an attempt.
func (w *workerService) finished(ref workerapi.LeaseRef, o outcome, err error) {
	switch {
	case err == nil:
		w.s.reg.done(ref, o)
	case errors.Is(err, hopper.ErrLeaseLost), errors.Is(err, hopper.ErrNotFound):
		w.s.reg.done(ref, outcomeLost)
	}
}

func (w *workerService) Complete(ctx context.Context, req *hopperv1.CompleteRequest) (*hopperv1.CompleteResponse, error) {
	var result json.RawMessage
	if req.GetResult() != "" {
		result = json.RawMessage(req.GetResult())
	}
	ref := workerapi.LeaseRef{ID: req.GetId(), Token: req.GetLeaseToken()}
	w.s.reg.reporting(ref)
	err := w.s.api.CompleteJob(ctx, ref.ID, ref.Token, result)
	w.finished(ref, outcomeCompleted, err)
	if err != nil {
		return nil, rpcError("complete job", err)
	}
	return &hopperv1.CompleteResponse{}, nil
}

func (w *workerService) Fail(ctx context.Context, req *hopperv1.FailRequest) (*hopperv1.FailResponse, error) {
	p := workerapi.FailParams{Error: req.GetError(), Outcome: hopper.Outcome(req.GetOutcome()),
		Stack: req.GetStack(), NoRetry: req.GetNoRetry(), KindPolicy: fromPolicy(req.GetRetryPolicy()),
		ErrorCode: req.GetErrorCode()}
	if req.GetCheckpoint() != "" {
		p.Checkpoint = json.RawMessage(req.GetCheckpoint())
	}
	if req.Retries != nil {
		n := int(req.GetRetries())
		p.RetriesLeft = &n
	}
	if req.GetRetryBackoff() != nil {
		d := req.GetRetryBackoff().AsDuration()
		p.Backoff = &d
	}
	ref := workerapi.LeaseRef{ID: req.GetId(), Token: req.GetLeaseToken()}
	w.s.reg.reporting(ref)
	res, err := w.s.api.FailJob(ctx, ref.ID, ref.Token, p)
	w.finished(ref, outcomeFailed, err)
	if err != nil {
		return nil, rpcError("fail job", err)
	}
	return &hopperv1.FailResponse{State: string(res.State), RunAt: apiview.Time(res.RunAt)}, nil
}

func (w *workerService) Release(ctx context.Context, req *hopperv1.ReleaseRequest) (*hopperv1.ReleaseResponse, error) {
	ref := workerapi.LeaseRef{ID: req.GetId(), Token: req.GetLeaseToken()}
	w.s.reg.reporting(ref)
	err := w.s.api.ReleaseJob(ctx, ref.ID, ref.Token, req.GetReason())
	w.finished(ref, outcomeReleased, err)
	if err != nil {
		return nil, rpcError("release job", err)
	}
	return &hopperv1.ReleaseResponse{}, nil
}

func (w *workerService) Snooze(ctx context.Context, req *hopperv1.SnoozeRequest) (*hopperv1.SnoozeResponse, error) {
	ref := workerapi.LeaseRef{ID: req.GetId(), Token: req.GetLeaseToken()}
	w.s.reg.reporting(ref)
	err := w.s.api.SnoozeJob(ctx, ref.ID, ref.Token, fromDur(req.GetDelay()))
	w.finished(ref, outcomeReleased, err)
	if err != nil {
		return nil, rpcError("snooze job", err)
	}
	return &hopperv1.SnoozeResponse{}, nil
}

func (w *workerService) Suspend(ctx context.Context, req *hopperv1.SuspendRequest) (*hopperv1.SuspendResponse, error) {
	ref := workerapi.LeaseRef{ID: req.GetId(), Token: req.GetLeaseToken()}
	w.s.reg.reporting(ref)
	var opts workerapi.SuspendParams
	if t := req.GetUntil(); t != nil {
		opts.Until = t.AsTime()
	}
	if t := req.GetDeadline(); t != nil {
		opts.Deadline = t.AsTime()
	}
	var checkpoint json.RawMessage
	if req.GetCheckpoint() != "" {
		checkpoint = json.RawMessage(req.GetCheckpoint())
	}
	err := w.s.api.SuspendJob(ctx, ref.ID, ref.Token, checkpoint, opts)
	w.finished(ref, outcomeReleased, err)
	if err != nil {
		return nil, rpcError("suspend job", err)
	}
	return &hopperv1.SuspendResponse{}, nil
}

func (w *workerService) ExtendLease(ctx context.Context, req *hopperv1.ExtendLeaseRequest) (*hopperv1.ExtendLeaseResponse, error) {
	d := fromDur(req.GetDuration())
	until, err := w.s.api.ExtendJobLease(ctx, req.GetId(), req.GetLeaseToken(), d)
	if errors.Is(err, hopper.ErrLeaseLost) {
		w.finished(workerapi.LeaseRef{ID: req.GetId(), Token: req.GetLeaseToken()}, outcomeLost, err)
	}
	if err != nil {
		return nil, rpcError("extend lease", err)
	}
	return &hopperv1.ExtendLeaseResponse{LeaseExpiresAt: apiview.Time(until)}, nil
}

func (w *workerService) Heartbeat(ctx context.Context, req *hopperv1.HeartbeatRequest) (*hopperv1.HeartbeatResponse, error) {
	if err := w.s.api.HeartbeatJob(ctx, req.GetId(), req.GetLeaseToken()); err != nil {
		return nil, rpcError("heartbeat", err)
	}
	return &hopperv1.HeartbeatResponse{}, nil
}

func (w *workerService) ReportProgress(ctx context.Context, req *hopperv1.ReportProgressRequest) (*hopperv1.ReportProgressResponse, error) {
	err := w.s.api.ReportJobProgress(ctx, req.GetId(), req.GetLeaseToken(), int(req.GetPercent()), req.GetMessage())
	if err != nil {
		return nil, rpcError("report progress", err)
	}
	return &hopperv1.ReportProgressResponse{}, nil
}

// maxReportItems bounds the outcomes and renewals of one Report.
const maxReportItems = 1000

// Report does what Complete, Fail, Release, Snooze, Suspend and ExtendLease do for many items
// at once, each answered on its own: the items run concurrently, so the engine's completer
// writes their outcomes in a few shared transactions.
func (w *workerService) Report(ctx context.Context, req *hopperv1.ReportRequest) (*hopperv1.ReportResponse, error) {
	if err := checkReportSize(req); err != nil {
		return nil, err
	}
	return w.report(ctx, req), nil
}

// report applies the items of req (at most maxReportItems) and answers each.
func (w *workerService) report(ctx context.Context, req *hopperv1.ReportRequest) *hopperv1.ReportResponse {
	outcomes, renewals := req.GetOutcomes(), req.GetRenewals()
	res := &hopperv1.ReportResponse{Outcomes: make([]*hopperv1.Verdict, len(outcomes)),
		Renewals: make([]*hopperv1.Verdict, len(renewals))}
	refs := make([]workerapi.LeaseRef, 0, len(outcomes))
	for _, o := range outcomes {
		if ref, ok := refOf(o); ok {
			refs = append(refs, ref)
		}
	}
	w.s.reg.reporting(refs...)
	// Every item at once (at most maxReportItems), the outcomes as one batch: the completer
	// writes them together.
	batch := w.s.api.Batch(len(outcomes))
	concurrently(len(outcomes)+len(renewals), maxReportItems, func(i int) {
		if i < len(outcomes) {
			ctx, end := batch.Item(ctx)
			defer end()
			fail, err := w.outcome(ctx, outcomes[i])
			res.Outcomes[i] = w.verdict(ctx, fail, err)
			return
		}
		r := renewals[i-len(outcomes)]
		ext, err := w.ExtendLease(ctx, r)
		v := w.verdict(ctx, nil, err)
		if err == nil {
			v.LeaseExpiresAt = ext.GetLeaseExpiresAt()
		}
		res.Renewals[i-len(outcomes)] = v
	})
	return res
}

// outcome applies one outcome of a Report; the FailResponse of an accepted fail.
func (w *workerService) outcome(ctx context.Context, o *hopperv1.Outcome) (*hopperv1.FailResponse, error) {
	var err error
	switch x := o.GetOutcome().(type) {
	case *hopperv1.Outcome_Complete:
		_, err = w.Complete(ctx, x.Complete)
	case *hopperv1.Outcome_Fail:
		return w.Fail(ctx, x.Fail)
	case *hopperv1.Outcome_Release:
		_, err = w.Release(ctx, x.Release)
	case *hopperv1.Outcome_Snooze:
		_, err = w.Snooze(ctx, x.Snooze)
	case *hopperv1.Outcome_Suspend:
		_, err = w.Suspend(ctx, x.Suspend)
	default:
		err = connect.NewError(connect.CodeInvalidArgument, "outcome: set one of complete, fail, release, snooze, suspend")
	}
	return nil, err
}

// refOf names the attempt an outcome is about.
func refOf(o *hopperv1.Outcome) (workerapi.LeaseRef, bool) {
	var m interface {
		GetId() string
		GetLeaseToken() int64
	}
	switch x := o.GetOutcome().(type) {
	case *hopperv1.Outcome_Complete:
		m = x.Complete
	case *hopperv1.Outcome_Fail:
		m = x.Fail
	case *hopperv1.Outcome_Release:
		m = x.Release
	case *hopperv1.Outcome_Snooze:
		m = x.Snooze
	case *hopperv1.Outcome_Suspend:
		m = x.Suspend
	default:
		return workerapi.LeaseRef{}, false
	}
	return workerapi.LeaseRef{ID: m.GetId(), Token: m.GetLeaseToken()}, true
}

// verdict is the answer to one item that ended with err, as the single-item call would have
// answered it (an internal error is logged and answered with the request id only).
func (w *workerService) verdict(ctx context.Context, fail *hopperv1.FailResponse, err error) *hopperv1.Verdict {
	if err == nil {
		return &hopperv1.Verdict{Code: "ok", Fail: fail}
	}
	err = w.s.itemAnswer(ctx, hopperv1connect.WorkerServiceReportProcedure, err)
	var ce *connect.Error
	msg := err.Error()
	if errors.As(err, &ce) {
		msg = ce.Message()
	}
	return &hopperv1.Verdict{Code: connect.CodeOf(err).String(), Message: msg}
}
