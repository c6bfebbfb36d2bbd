package hopper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/engine"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/workerapi"
)

// workerAPI is the client's side of the remote-worker protocol (workerapi.API): what `hopper
// serve` does on a remote worker's behalf through this client. See package workerapi.
type workerAPI struct{ c *Client }

var _ workerapi.API = (*workerAPI)(nil)

func init() {
	// The server reaches a client's worker API through package workerapi, which cannot import
	// this one: it is told how here.
	workerapi.Register(func(c any) workerapi.API { return c.(*Client).workerAPI })
}

// SetRemoteQueues tells the client which queues the remote workers it serves work, and
// which of them are held back by the workers' resource governors (WorkerService.Hold), so
// that its node heartbeats record them with its own and they count for awaiting compute
// (QueueInfo.AwaitingCompute). f is called once per heartbeat and must not block; call
// RemoteQueuesChanged when its answer changes, for a heartbeat at once.
func (a *workerAPI) SetRemoteQueues(f func() (queues, held []string)) { a.c.engine.SetRemoteQueues(f) }

// RemoteQueuesChanged asks for a node heartbeat now, to record a change of SetRemoteQueues's
// answer. It never blocks.
func (a *workerAPI) RemoteQueuesChanged() { a.c.engine.Beat() }

// Activate claims up to p.MaxJobs jobs for a remote worker. When none is available it waits
// up to p.Wait for one, woken within milliseconds by an enqueue through this client or a
// notification from another node (and polling the store every second meanwhile, or as soon as
// a rate limit that held the claim back allows another start), and returns as soon as it has
// claimed at least one; after p.Wait it returns no jobs and no error.
//
// With several queues (p.Queue and p.Queues), the queues share p.MaxJobs by weight
// (contract 14): each queue's stored weight (SetQueueWeight), else this process's
// QueueConfig.Weight, else 1. A queue's part is its weighted share of p.MaxJobs and the jobs
// the worker holds of the queues (p.Held), less those it holds of it (a queue that holds more
// than its share gets none); a job that does not divide evenly goes to a queue drawn at random
// by the fractions, so that each queue gets its share on average even of one-job claims. A
// queue with fewer ready jobs than its part gives the rest to the others, claimed at once in
// the same call: Activate never returns fewer jobs than the queues together had ready because
// of the split. A wake-up of any of the queues ends a wait.
//
// A claim is not cut off by ctx (see claim): when ctx ends while a claim runs, Activate still
// returns the jobs that claim took, with no error, and a caller that can no longer hand them
// on must give them back (ReleaseJob). Once ctx has ended it claims nothing more. A claim that
// fails after others of the call took jobs ends the call: those jobs are returned, with no
// error (a lasting failure will fail the next call).
func (a *workerAPI) Activate(ctx context.Context, p workerapi.ActivateParams) ([]*JobRow, error) {
	got, err := a.ActivateQueues(ctx, p)
	if got == nil {
		return nil, err
	}
	return got.Jobs, err
}

// claimTimeout bounds one claim of Activate (as the engine's producers bound theirs).
const claimTimeout = 30 * time.Second

// claim runs one claim of Activate on a context of its own, bounded by claimTimeout but not
// canceled with ctx: a claim whose commit goes through as its caller gives up (PostgreSQL may
// commit a transaction whose client was canceled) would leave its jobs running, with nobody
// on them, until their leases expire, and their rescue would count against MaxRescues. The
// engine's producers claim the same way.
//
// With batch kinds (p.BatchKinds) it claims batches first, as the engine does, then the other
// kinds' jobs for what is left (claimBatches).
func (a *workerAPI) claim(ctx context.Context, p workerapi.ActivateParams) (claimed, error) {
	c := a.c
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	got, err := a.claimBatches(ctx, p)
	if len(got.jobs) > 0 {
		a.claimed(got.jobs, p.LeaseDuration, got.batchOf)
	}
	if err != nil || len(p.BatchKinds) > 0 && (got.full || len(got.plain) == 0) {
		// Batches are never claimed ahead: the claim took none of p.Ahead, as a restricted
		// one does, so that its caller counts it full on the jobs it can start (a stream's
		// loop that saw it short would think the queue ran dry, and wait).
		got.hold.Restricted = true
		return got, err
	}
	jobs, hold, err := c.store.JobClaim(ctx, &store.ClaimParams{
		Queue: p.Queue, Kinds: got.plain, Limit: p.MaxJobs - len(got.jobs), Ahead: p.Ahead,
		WorkerID: p.Worker, LeaseDuration: p.LeaseDuration,
	})
	if len(jobs) > 0 {
		a.claimed(jobs, p.LeaseDuration, nil)
	}
	got.jobs = append(got.jobs, jobs...)
	got.hold = mergeHold(got.hold, hold)
	return got, err
}

// claimed records jobs claimed for a remote worker, with the batch of each job claimed in
// one (by id; nil for none).
func (a *workerAPI) claimed(jobs []*JobRow, lease time.Duration, batchOf map[string]string) {
	c := a.c
	c.remote.add(jobs, c.clock.Now(), lease)
	c.engine.Claimed()
	c.obs.claimed(jobs, true, batchOf)
}

// claimed is what one claim of Activate took: its jobs (batches first), the batch of each job
// claimed in one (by id), what held it back, and how soon a batch that lingers is ready.
type claimed struct {
	jobs    []*JobRow
	batchOf map[string]string
	hold    store.Hold
	readyAt time.Time
	plain   []string // the kinds claimed one by one
	full    bool     // the batches took every job the claim may start
}

// claimBatches claims batches of p's batch kinds in p.Queue, in turn, while p.MaxJobs less
// p.Ahead (batches are never claimed ahead) has room: each batch is cut to that room. A
// batch's id is its first job's id and lease token.
func (a *workerAPI) claimBatches(ctx context.Context, p workerapi.ActivateParams) (claimed, error) {
	var got claimed
	if len(p.BatchKinds) == 0 {
		got.plain = p.Kinds
		return got, nil
	}
	batching := map[string]bool{}
	for _, bk := range p.BatchKinds {
		batching[bk.Kind] = true
	}
	for _, k := range p.Kinds {
		if !batching[k] {
			got.plain = append(got.plain, k)
		}
	}
	room := p.MaxJobs - p.Ahead
	for _, bk := range p.BatchKinds {
		for room-len(got.jobs) > 0 {
			res, err := a.c.store.JobClaimBatch(ctx, &store.BatchClaimParams{Queue: p.Queue, Kind: bk.Kind,
				MaxJobs: min(bk.MaxJobs, room-len(got.jobs)), MaxWait: bk.MaxWait, Ungrouped: bk.Ungrouped,
				WorkerID: p.Worker, LeaseDuration: p.LeaseDuration})
			if err != nil {
				return got, err
			}
			got.hold = mergeHold(got.hold, res.Hold)
			if !res.ReadyAt.IsZero() && (got.readyAt.IsZero() || res.ReadyAt.Before(got.readyAt)) {
				got.readyAt = res.ReadyAt
			}
			if len(res.Jobs) == 0 {
				break
			}
			if got.batchOf == nil {
				got.batchOf = map[string]string{}
			}
			id := batchID(res.Jobs)
			for _, j := range res.Jobs {
				got.batchOf[j.ID] = id
			}
			got.jobs = append(got.jobs, res.Jobs...)
		}
	}
	got.full = len(got.jobs) >= room
	return got, nil
}

// mergeHold is what two claims' holds say together.
func mergeHold(a, b store.Hold) store.Hold {
	out := store.Hold{Capped: a.Capped || b.Capped, Restricted: a.Restricted || b.Restricted,
		QueueWide: a.QueueWide || b.QueueWide, Wait: a.Wait}
	if b.Wait > 0 && (out.Wait == 0 || b.Wait < out.Wait) {
		out.Wait = b.Wait
	}
	out.FairAhead = store.ShorterSet(a.FairAhead, b.FairAhead)
	return out
}

// CompleteJob ends a remote worker's attempt successfully, storing result (a JSON value, or
// nil). Concurrent calls share transactions.
func (a *workerAPI) CompleteJob(ctx context.Context, id string, token int64, result json.RawMessage) error {
	c := a.c
	if err := checkID("id", id); err != nil {
		return err
	}
	if len(result) > 0 {
		if err := checkJSON("result", result); err != nil {
			return err
		}
	}
	if len(result) > c.cfg.MaxArgsBytes {
		return invalid("result", "is %d bytes, more than the limit of %d", len(result), c.cfg.MaxArgsBytes)
	}
	// The job's own result TTL, if it has one, is applied by the store: no read on this path.
	// The claimed row, when this client claimed the attempt, names the job for the stats.
	err := c.engine.Finish(ctx, &store.FinishParams{ID: id, Token: token, State: hoppertype.StateCompleted,
		Outcome: hoppertype.OutcomeOK, Result: result, Actor: hoppertype.ActorWorker, Reason: "success",
		ExpiresAfter: c.engine.Retention(nil, nil, hoppertype.StateCompleted),
		Job:          c.remote.row(workerapi.LeaseRef{ID: id, Token: token})})
	return a.attemptErr("complete job", id, err)
}

// Batch starts a batch of n outcomes written together (the engine's Gather).
func (a *workerAPI) Batch(n int) workerapi.Batch { return a.c.engine.Gather(n) }

// FailJob ends a remote worker's attempt with an error: the job is retried after its backoff
// while it has attempts left (or RetriesLeft allows), else it fails for good. The decision is
// the one the engine takes for an in-process attempt that ended the same way.
func (a *workerAPI) FailJob(ctx context.Context, id string, token int64, p workerapi.FailParams) (*workerapi.FailResult, error) {
	c := a.c
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	if p.Error == "" {
		return nil, invalid("error", "is required")
	}
	if err := checkLimited("error", p.Error, MaxErrorBytes); err != nil {
		return nil, err
	}
	if err := checkLimited("stack", p.Stack, MaxErrorBytes); err != nil {
		return nil, err
	}
	switch p.Outcome {
	case "":
		p.Outcome = hoppertype.OutcomeError
	case hoppertype.OutcomeError, hoppertype.OutcomePanic, hoppertype.OutcomeTimeout:
	default:
		return nil, invalid("outcome", "%q is not one of error, panic, timeout", p.Outcome)
	}
	if p.Backoff != nil && (*p.Backoff < 0 || *p.Backoff > MaxRunAtFuture) {
		return nil, invalid("retry_backoff", "%s is outside 0–%s", *p.Backoff, MaxRunAtFuture)
	}
	if p.KindPolicy != nil {
		if err := checkPolicy("retry_policy", p.KindPolicy); err != nil {
			return nil, err
		}
	}
	if p.ErrorCode != "" {
		if err := field.ErrorCode("error_code", p.ErrorCode); err != nil {
			return nil, err
		}
	}
	if err := c.checkCheckpoint(p.Checkpoint); err != nil {
		return nil, err
	}
	row, err := c.store.JobGet(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("fail job %s: %w", id, err)
	}
	if row.Token != token || row.State != StateRunning {
		return nil, fmt.Errorf("fail job %s token %d: %w", id, token, ErrLeaseLost)
	}
	fp := c.engine.Decide(row, nil, attempt.Ending{Outcome: p.Outcome, Error: p.Error, Stack: p.Stack,
		NoRetry: p.NoRetry, RetriesLeft: p.RetriesLeft, RetryAfter: p.Backoff, KindPolicy: p.KindPolicy,
		Checkpoint: p.Checkpoint, ErrorCode: p.ErrorCode})
	if err := a.attemptErr("fail job", id, c.engine.Finish(ctx, fp)); err != nil {
		return nil, err
	}
	return &workerapi.FailResult{State: fp.State, RunAt: fp.RunAt}, nil
}

// ReleaseJob hands a remote worker's job back to its queue at once, at the worker's request,
// without consuming its attempt (the worker will not run it: it is shutting down or not
// ready). why is at most MaxReasonBytes.
func (a *workerAPI) ReleaseJob(ctx context.Context, id string, token int64, why string) error {
	if err := checkID("id", id); err != nil {
		return err
	}
	if err := checkLimited("reason", why, MaxReasonBytes); err != nil {
		return err
	}
	if why == "" {
		why = "released by the worker"
	}
	return a.release(ctx, id, token, hoppertype.ActorWorker, "released", why)
}

// ReturnJob hands a remote worker's job back to its queue at once on the server's own
// account (ActorServer, with reason why), without consuming its attempt or counting a
// rescue: the server stops serving the worker through no fault of the worker's or the job's
// (it is shutting down).
func (a *workerAPI) ReturnJob(ctx context.Context, id string, token int64, why string) error {
	if why == "" {
		why = "returned by the server"
	}
	return a.release(ctx, id, token, hoppertype.ActorServer, field.Clean(why), why)
}

func (a *workerAPI) release(ctx context.Context, id string, token int64, actor Actor, reason, why string) error {
	c := a.c
	row, err := c.store.JobGet(ctx, id)
	if err != nil {
		return a.attemptErr("release job", id, err)
	}
	err = c.engine.Finish(ctx, &store.FinishParams{ID: id, Token: token, State: hoppertype.StateQueued,
		Outcome: hoppertype.OutcomeCanceled, GiveBack: true, Error: why,
		Actor: actor, Reason: reason, Job: row})
	if err == nil {
		c.engine.Notify(row.Queue)
	}
	return a.attemptErr("release job", id, err)
}

// FailUndeliverable fails a job claimed for a remote worker that cannot be handed to it: a
// stored value the wire cannot carry (args that are not UTF-8, say, kept from before Hopper
// validated its input or written to the database directly). The job fails at once, with
// outcome undeliverable, no retry and why as its error, so it reaches the dead-letter queue
// (and its hook) instead of being claimed, stranded and rescued again and again. job is the
// claimed row Activate returned.
func (a *workerAPI) FailUndeliverable(ctx context.Context, job *JobRow, why string) error {
	c := a.c
	err := c.engine.Finish(ctx, &store.FinishParams{ID: job.ID, Token: job.Token, State: hoppertype.StateFailed,
		Outcome: hoppertype.OutcomeUndeliverable, Error: "cannot deliver to a remote worker: " + why,
		Actor: hoppertype.ActorServer, Reason: "undeliverable", ExpiresAt: c.engine.ExpiresAt(job, nil, StateFailed),
		Job: job})
	return a.attemptErr("fail undeliverable job", job.ID, err)
}

// RescueJobs returns attempts whose remote worker went away under them (its connection
// closed) to their queues at once, as the leader does when a lease expires: each counts a
// rescue, and a job already rescued its MaxRescues times fails with OutcomeWorkerLost instead,
// a dead letter that Config.OnDeadLetter hears of. They are recorded as the server's doing
// (ActorServer) with reason why. Stale tokens are skipped. It returns the ids of the jobs
// that failed.
func (a *workerAPI) RescueJobs(ctx context.Context, refs []workerapi.LeaseRef, why string) ([]string, error) {
	c := a.c
	if why == "" {
		why = "worker went away"
	}
	leases := make([]store.LeaseRef, len(refs))
	for i, r := range refs {
		leases[i] = store.LeaseRef(r)
	}
	res, err := c.engine.RescueLeases(ctx, leases, hoppertype.ActorServer, field.Clean(why))
	if err != nil {
		return nil, fmt.Errorf("rescue %d jobs: %w", len(refs), err)
	}
	return res.Failed, nil
}

// SnoozeJob ends a remote worker's attempt with "not now": the job runs again after d
// without consuming an attempt.
func (a *workerAPI) SnoozeJob(ctx context.Context, id string, token int64, d time.Duration) error {
	if err := checkID("id", id); err != nil {
		return err
	}
	if d < 0 || d > MaxRunAtFuture {
		return invalid("delay", "%s is outside 0–%s", d, MaxRunAtFuture)
	}
	return a.park(ctx, "snooze job", id, token, Snooze(d))
}

// SuspendJob ends a remote worker's attempt by parking the job with checkpoint (a JSON value,
// or nil to keep the previous one) until opts.Until or until Resume, without consuming an
// attempt.
func (a *workerAPI) SuspendJob(ctx context.Context, id string, token int64, checkpoint json.RawMessage, p workerapi.SuspendParams) error {
	opts := SuspendOpts{Until: p.Until, Deadline: p.Deadline}
	c := a.c
	if err := checkID("id", id); err != nil {
		return err
	}
	if err := c.checkCheckpoint(checkpoint); err != nil {
		return err
	}
	if err := checkSuspend(opts, c.clock.Now()); err != nil {
		return err
	}
	return a.park(ctx, "suspend job", id, token,
		&attempt.SuspendError{Checkpoint: checkpoint, Until: opts.Until, Deadline: opts.Deadline})
}

// checkSuspend bounds a suspension's times like an enqueue's run_at: a time a database
// cannot store must never reach the store (it would fail the batch it is written with).
func checkSuspend(o SuspendOpts, now time.Time) error {
	switch {
	case !o.Until.IsZero() && o.Until.Before(now.Add(-MaxRunAtPast)):
		return invalid("until", "%s is more than %s in the past", o.Until.Format(time.RFC3339), MaxRunAtPast)
	case !o.Until.IsZero() && o.Until.After(now.Add(MaxRunAtFuture)):
		return invalid("until", "%s is more than %s ahead", o.Until.Format(time.RFC3339), MaxRunAtFuture)
	case !o.Deadline.IsZero() && !o.Deadline.After(now):
		return invalid("deadline", "%s is not in the future", o.Deadline.Format(time.RFC3339))
	case !o.Deadline.IsZero() && o.Deadline.After(now.Add(MaxRunAtFuture)):
		return invalid("deadline", "%s is more than %s ahead", o.Deadline.Format(time.RFC3339), MaxRunAtFuture)
	}
	return nil
}

func (a *workerAPI) park(ctx context.Context, op, id string, token int64, why error) error {
	c := a.c
	p := engine.ParkParams(id, token, why, c.clock.Now())
	return a.attemptErr(op, id, c.engine.Finish(ctx, p))
}

// ExtendJobLeases sets each attempt's lease to expire d from now (it may shorten it). The
// error of each item is nil or wraps ErrLeaseLost.
func (a *workerAPI) ExtendJobLeases(ctx context.Context, refs []workerapi.LeaseRef, d time.Duration) ([]error, error) {
	c := a.c
	if d < time.Second || d > 24*time.Hour {
		return nil, invalid("duration", "%s is outside 1s–24h", d)
	}
	ps := make([]*store.ExtendParams, len(refs))
	for i, r := range refs {
		if err := checkID("id", r.ID); err != nil {
			return nil, err
		}
		ps[i] = &store.ExtendParams{ID: r.ID, Token: r.Token, Duration: d}
	}
	errs, err := c.store.JobExtendLeases(ctx, ps)
	if err != nil {
		return nil, fmt.Errorf("extend leases: %w", err)
	}
	c.remote.renewed(refs, errs, c.clock.Now().Add(d))
	return errs, nil
}

// ExtendJobLease sets one attempt's lease to expire d from now and returns the new expiry.
func (a *workerAPI) ExtendJobLease(ctx context.Context, id string, token int64, d time.Duration) (time.Time, error) {
	c := a.c
	errs, err := a.ExtendJobLeases(ctx, []workerapi.LeaseRef{{ID: id, Token: token}}, d)
	if err != nil {
		return time.Time{}, err
	}
	if errs[0] != nil {
		return time.Time{}, a.attemptErr("extend lease", id, errs[0])
	}
	return c.clock.Now().Add(d), nil
}

// HeartbeatJob records a sign of life of a remote worker's attempt (separate from its lease).
func (a *workerAPI) HeartbeatJob(ctx context.Context, id string, token int64) error {
	c := a.c
	if err := checkID("id", id); err != nil {
		return err
	}
	return a.attemptErr("heartbeat", id, c.store.JobHeartbeat(ctx, &store.HeartbeatParams{ID: id, Token: token}))
}

// ReportJobProgress stores a remote worker's progress (percent clamped to 0–100; message at
// most MaxProgressMessageBytes) and counts as a heartbeat.
func (a *workerAPI) ReportJobProgress(ctx context.Context, id string, token int64, percent int, message string) error {
	c := a.c
	if err := checkID("id", id); err != nil {
		return err
	}
	if err := checkLimited("message", message, MaxProgressMessageBytes); err != nil {
		return err
	}
	err := c.store.JobProgress(ctx, &store.ProgressParams{ID: id, Token: token, Percent: percent, Message: message})
	return a.attemptErr("report progress", id, err)
}

// JobParents reads the parents of a remote worker's attempt, fenced by its token.
func (a *workerAPI) JobParents(ctx context.Context, id string, token int64, maxResultBytes int) ([]*hoppertype.ParentResult, bool, error) {
	if err := checkID("id", id); err != nil {
		return nil, false, err
	}
	got, err := a.c.store.JobParents(ctx, &store.ParentsParams{ID: id, Token: token, MaxResultBytes: maxResultBytes})
	if err != nil {
		return nil, false, a.attemptErr("read parents of", id, err)
	}
	return got.Parents, got.ResultsOmitted, nil
}

// SpawnJobs adds the jobs a remote worker's attempt spawns, fenced by its token.
func (a *workerAPI) SpawnJobs(ctx context.Context, id string, token int64, jobs []*attempt.SpawnJob) ([]*attempt.Spawned, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	got, err := a.c.spawnJobs(ctx, id, token, jobs)
	if errors.As(err, new(*ValidationError)) {
		return nil, err // it names the request's field: nothing to add
	}
	if err != nil {
		return nil, a.attemptErr("spawn jobs for", id, err)
	}
	return got, nil
}

// attemptErr wraps a store verdict on an attempt; ErrLeaseLost stays visible to errors.Is.
func (a *workerAPI) attemptErr(op, id string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", op, id, err)
}

// JobsAvailable returns a channel closed the next time jobs may have become claimable in
// queue (see Activate), and a function to call when no longer waiting.
func (a *workerAPI) JobsAvailable(queue string) (<-chan struct{}, func()) {
	c := a.c
	return c.avail.subscribe(queue)
}

// availability wakes waiters of a queue when jobs may be claimable there, and tells its
// listeners (listen, ListenFunc).
type availability struct {
	mu        sync.Mutex
	waiters   map[string]map[chan struct{}]struct{}
	listeners map[*wakeups]struct{}
}

func (a *availability) subscribe(queue string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	a.mu.Lock()
	if a.waiters == nil {
		a.waiters = map[string]map[chan struct{}]struct{}{}
	}
	if a.waiters[queue] == nil {
		a.waiters[queue] = map[chan struct{}]struct{}{}
	}
	a.waiters[queue][ch] = struct{}{}
	a.mu.Unlock()
	return ch, func() {
		a.mu.Lock()
		if _, ok := a.waiters[queue][ch]; ok {
			delete(a.waiters[queue], ch)
			close(ch)
		}
		a.mu.Unlock()
	}
}

// wake closes every waiter of queue ("" : of every queue); each waiter subscribes again for
// the next wake.
func (a *availability) wake(queue string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for q, chs := range a.waiters {
		if queue != "" && q != queue {
			continue
		}
		for ch := range chs {
			close(ch)
		}
		delete(a.waiters, q)
	}
	for l := range a.listeners {
		l.heardLocked(queue)
	}
}

// checkCheckpoint checks a checkpoint a remote worker leaves for the next attempt (on suspend
// or on fail): empty (keep the previous one) or a JSON value of at most Config.MaxArgsBytes.
func (c *Client) checkCheckpoint(checkpoint json.RawMessage) error {
	if len(checkpoint) == 0 {
		return nil
	}
	if err := checkJSON("checkpoint", checkpoint); err != nil {
		return err
	}
	if len(checkpoint) > c.cfg.MaxArgsBytes {
		return invalid("checkpoint", "is %d bytes, more than the limit of %d", len(checkpoint), c.cfg.MaxArgsBytes)
	}
	return nil
}
