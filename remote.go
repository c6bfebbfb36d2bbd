package hopper

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/engine"
	"github.com/hopperjobs/hopper/internal/store"
)

// WorkerAPI is the server side of Hopper's remote-worker protocol: the primitives `hopper serve`
// builds its worker API on, for code that hands jobs to workers outside this process (another
// language, another transport). Get it from Client.WorkerAPI; its errors name the fields of
// the wire protocol (lease_timeout, retry_backoff…).
type WorkerAPI struct{ c *Client }

// WorkerAPI returns the client's remote-worker protocol. In-process workers (AddWorker) need
// none of it.
func (c *Client) WorkerAPI() *WorkerAPI { return c.workerAPI }

// SetRemoteQueues tells the client which queues the remote workers it serves work, and
// which of them are held back by the workers' resource governors (WorkerService.Hold), so
// that its node heartbeats record them with its own and they count for awaiting compute
// (QueueInfo.AwaitingCompute). f is called once per heartbeat and must not block; call
// RemoteQueuesChanged when its answer changes, for a heartbeat at once.
func (a *WorkerAPI) SetRemoteQueues(f func() (queues, held []string)) { a.c.engine.SetRemoteQueues(f) }

// RemoteQueuesChanged asks for a node heartbeat now, to record a change of SetRemoteQueues's
// answer. It never blocks.
func (a *WorkerAPI) RemoteQueuesChanged() { a.c.engine.Beat() }

// Remote workers: A claimed job
// belongs to its worker until its lease expires; every call about the attempt presents the
// lease token the claim returned and fails with ErrLeaseLost, changing nothing, when the token
// is no longer the job's current lease, or with ErrNotFound (which matches ErrLeaseLost too)
// when no job has the id. Ids and text must be valid UTF-8 without NUL bytes, and JSON valid
// JSON in UTF-8: anything else is a *ValidationError. In-process workers (AddWorker) need none
// of this.

// Limits of Activate.
const (
	MaxActivateJobs   = 1000
	MaxActivateWait   = 5 * time.Minute
	MaxActivateQueues = 64
)

// MaxStreamCredit bounds a job stream's credit (StreamJobsRequest.credit): the unfinished
// jobs one stream may hold, running and waiting for a slot.
const MaxStreamCredit = 1000

// ActivateParams asks for jobs on behalf of a remote worker.
type ActivateParams struct {
	// Worker names the worker on its leases and attempts (1–128 characters). Required.
	Worker string
	// Queue to take jobs from (default "default" when Queues is empty too).
	Queue string
	// Queues to take jobs from as well as Queue: the two are merged, a queue named twice
	// counting once, into at most MaxActivateQueues queues, which share MaxJobs by weight
	// (see Activate).
	Queues []string
	// Held counts, per queue, the unfinished jobs the worker holds already (a job stream's):
	// with several queues, MaxJobs goes first to those furthest below their weighted share of
	// MaxJobs plus what they hold (see Activate). nil: none; negative counts are 0.
	Held map[string]int
	// Kinds limits the jobs to these kinds; empty takes any kind.
	Kinds []string
	// MaxJobs is the most jobs to claim, 1–MaxActivateJobs (default 1).
	MaxJobs int
	// Ahead is how many of MaxJobs the caller asks for beyond what its worker can take now,
	// to hand on as the worker frees up (a job stream's server claiming ahead,
	// docs/workers.md "Claiming ahead"); 0 to MaxJobs-1, and only with a single queue. Where a
	// fleet-wide cap, a rate limit or a disabled kind applies, the claim takes none of them
	// and says so (Activated.Restricted).
	Ahead int
	// LeaseDuration is how long the worker holds each job before it may be given to another
	// (default Config.LeaseDuration, at most 24 h).
	LeaseDuration time.Duration
	// Wait is how long to wait for a first job when none is available (long poll); 0 answers
	// at once. At most MaxActivateWait.
	Wait time.Duration
}

// Check reports whether Activate would accept p, without claiming anything.
func (p ActivateParams) Check() error { return p.validate(time.Minute) }

// QueueNames returns the queues p asks for: Queue, then Queues, each once; "default" when
// both are empty.
func (p ActivateParams) QueueNames() []string {
	if p.Queue == "" && len(p.Queues) == 0 {
		return []string{DefaultQueue}
	}
	names := p.Queues
	if p.Queue != "" {
		names = append([]string{p.Queue}, p.Queues...)
	}
	out := make([]string, 0, len(names))
	for _, q := range names {
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

func (p *ActivateParams) validate(def time.Duration) error {
	if p.Queue == "" && len(p.Queues) == 0 {
		p.Queue = DefaultQueue
	}
	if p.MaxJobs == 0 {
		p.MaxJobs = 1
	}
	if p.LeaseDuration == 0 {
		p.LeaseDuration = def
	}
	if err := checkText("worker", p.Worker); err != nil {
		return err
	}
	switch {
	case p.Worker == "" || len(p.Worker) > 128:
		return invalid("worker", "must be 1–128 characters")
	case p.MaxJobs < 1 || p.MaxJobs > MaxActivateJobs:
		return invalid("max_jobs", "%d is outside 1–%d", p.MaxJobs, MaxActivateJobs)
	case p.Ahead < 0 || p.Ahead >= p.MaxJobs:
		return invalid("ahead", "%d is outside 0–%d (max_jobs - 1)", p.Ahead, p.MaxJobs-1)
	case p.Ahead > 0 && len(p.QueueNames()) > 1:
		return invalid("ahead", "needs a single queue, not %d", len(p.QueueNames()))
	case p.LeaseDuration < time.Second || p.LeaseDuration > 24*time.Hour:
		return invalid("lease_timeout", "%s is outside 1s–24h", p.LeaseDuration)
	case p.Wait < 0 || p.Wait > MaxActivateWait:
		return invalid("request_timeout", "%s is outside 0–%s", p.Wait, MaxActivateWait)
	}
	if err := checkQueues(p.Queue, p.Queues); err != nil {
		return err
	}
	for _, k := range p.Kinds {
		if err := checkKind(k); err != nil {
			return err
		}
	}
	return nil
}

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
func (a *WorkerAPI) Activate(ctx context.Context, p ActivateParams) ([]*JobRow, error) {
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
func (a *WorkerAPI) claim(ctx context.Context, p ActivateParams) ([]*JobRow, store.Hold, error) {
	c := a.c
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	jobs, hold, err := c.store.JobClaim(ctx, &store.ClaimParams{
		Queue: p.Queue, Kinds: p.Kinds, Limit: p.MaxJobs, Ahead: p.Ahead,
		WorkerID: p.Worker, LeaseDuration: p.LeaseDuration,
	})
	if len(jobs) > 0 {
		c.remote.add(jobs, c.clock.Now(), p.LeaseDuration)
		c.engine.Claimed()
		c.obs.claimed(jobs, true)
	}
	return jobs, hold, err
}

// CompleteJob ends a remote worker's attempt successfully, storing result (a JSON value, or
// nil). Concurrent calls share transactions.
func (a *WorkerAPI) CompleteJob(ctx context.Context, id string, token int64, result json.RawMessage) error {
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
		Job:          c.remote.row(LeaseRef{ID: id, Token: token})})
	return a.attemptErr("complete job", id, err)
}

// OutcomeBatch makes the outcomes of several attempts, reported in one request, be written
// together: each item calls one of CompleteJob, FailJob, ReleaseJob, SnoozeJob or SuspendJob
// under the context Item gives it, and the outcomes go to the store at once when every item
// has either made its call or ended. Items run concurrently (each call waits for its write).
type OutcomeBatch struct{ g *engine.Gather }

// Batch starts a batch of n items.
func (a *WorkerAPI) Batch(n int) *OutcomeBatch { return &OutcomeBatch{g: a.c.engine.Gather(n)} }

// Item returns the context of one item and the func that ends it, which the item must call
// when its work is over (a deferred call), whether or not it reached the store.
func (b *OutcomeBatch) Item(ctx context.Context) (context.Context, func()) { return b.g.Item(ctx) }

// FailParams says how a remote worker's attempt failed.
type FailParams struct {
	// Error is recorded with the attempt (required, at most MaxErrorBytes).
	Error string
	// Outcome is OutcomeError (the default), OutcomePanic (the handler crashed) or
	// OutcomeTimeout (it ran past its execution limit).
	Outcome Outcome
	// Stack is a crashed handler's stack, recorded apart from Error (at most MaxErrorBytes).
	Stack string
	// NoRetry fails the job for good, whatever attempts it has left.
	NoRetry bool
	// RetriesLeft, when set, overrides the attempts left: 0 or less fails the job for good,
	// n > 0 allows n more attempts whatever the job's budget was.
	RetriesLeft *int
	// Backoff, when set, is the wait before the retry instead of the job's backoff policy.
	Backoff *time.Duration
	// KindPolicy is the backoff of the job's kind on the worker, if it has one: it is merged
	// under the job's own policy and over Config.RetryPolicy, as for in-process workers.
	KindPolicy *RetryPolicy
}

// FailResult is where a failed attempt sent the job.
type FailResult struct {
	// State is StateScheduled (it will be retried at RunAt) or StateFailed.
	State JobState
	RunAt time.Time
}

// FailJob ends a remote worker's attempt with an error: the job is retried after its backoff
// while it has attempts left (or RetriesLeft allows), else it fails for good. The decision is
// the one the engine takes for an in-process attempt that ended the same way.
func (a *WorkerAPI) FailJob(ctx context.Context, id string, token int64, p FailParams) (*FailResult, error) {
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
	row, err := c.store.JobGet(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("fail job %s: %w", id, err)
	}
	if row.Token != token || row.State != StateRunning {
		return nil, fmt.Errorf("fail job %s token %d: %w", id, token, ErrLeaseLost)
	}
	fp := c.engine.Decide(row, nil, engine.Ending{Outcome: p.Outcome, Error: p.Error, Stack: p.Stack,
		NoRetry: p.NoRetry, RetriesLeft: p.RetriesLeft, RetryAfter: p.Backoff, KindPolicy: p.KindPolicy})
	if err := a.attemptErr("fail job", id, c.engine.Finish(ctx, fp)); err != nil {
		return nil, err
	}
	return &FailResult{State: fp.State, RunAt: fp.RunAt}, nil
}

// ReleaseJob hands a remote worker's job back to its queue at once, at the worker's request,
// without consuming its attempt (the worker will not run it: it is shutting down or not
// ready). why is at most MaxReasonBytes.
func (a *WorkerAPI) ReleaseJob(ctx context.Context, id string, token int64, why string) error {
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
func (a *WorkerAPI) ReturnJob(ctx context.Context, id string, token int64, why string) error {
	if why == "" {
		why = "returned by the server"
	}
	return a.release(ctx, id, token, hoppertype.ActorServer, store.CleanText(why), why)
}

func (a *WorkerAPI) release(ctx context.Context, id string, token int64, actor Actor, reason, why string) error {
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
func (a *WorkerAPI) FailUndeliverable(ctx context.Context, job *JobRow, why string) error {
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
func (a *WorkerAPI) RescueJobs(ctx context.Context, refs []LeaseRef, why string) ([]string, error) {
	c := a.c
	if why == "" {
		why = "worker went away"
	}
	leases := make([]store.LeaseRef, len(refs))
	for i, r := range refs {
		leases[i] = store.LeaseRef(r)
	}
	res, err := c.engine.RescueLeases(ctx, leases, hoppertype.ActorServer, store.CleanText(why))
	if err != nil {
		return nil, fmt.Errorf("rescue %d jobs: %w", len(refs), err)
	}
	return res.Failed, nil
}

// SnoozeJob ends a remote worker's attempt with "not now": the job runs again after d
// without consuming an attempt.
func (a *WorkerAPI) SnoozeJob(ctx context.Context, id string, token int64, d time.Duration) error {
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
func (a *WorkerAPI) SuspendJob(ctx context.Context, id string, token int64, checkpoint json.RawMessage, opts SuspendOpts) error {
	c := a.c
	if err := checkID("id", id); err != nil {
		return err
	}
	if len(checkpoint) > 0 {
		if err := checkJSON("checkpoint", checkpoint); err != nil {
			return err
		}
	}
	if len(checkpoint) > c.cfg.MaxArgsBytes {
		return invalid("checkpoint", "is %d bytes, more than the limit of %d", len(checkpoint), c.cfg.MaxArgsBytes)
	}
	if err := checkSuspend(opts, c.clock.Now()); err != nil {
		return err
	}
	return a.park(ctx, "suspend job", id, token,
		&engine.SuspendError{Checkpoint: checkpoint, Until: opts.Until, Deadline: opts.Deadline})
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

func (a *WorkerAPI) park(ctx context.Context, op, id string, token int64, why error) error {
	c := a.c
	p := engine.ParkParams(id, token, why, c.clock.Now())
	return a.attemptErr(op, id, c.engine.Finish(ctx, p))
}

// LeaseRef names one attempt: a job and its lease token.
type LeaseRef struct {
	ID    string
	Token int64
}

// ExtendJobLeases sets each attempt's lease to expire d from now (it may shorten it). The
// error of each item is nil or wraps ErrLeaseLost.
func (a *WorkerAPI) ExtendJobLeases(ctx context.Context, refs []LeaseRef, d time.Duration) ([]error, error) {
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
func (a *WorkerAPI) ExtendJobLease(ctx context.Context, id string, token int64, d time.Duration) (time.Time, error) {
	c := a.c
	errs, err := a.ExtendJobLeases(ctx, []LeaseRef{{ID: id, Token: token}}, d)
	if err != nil {
		return time.Time{}, err
	}
	if errs[0] != nil {
		return time.Time{}, a.attemptErr("extend lease", id, errs[0])
	}
	return c.clock.Now().Add(d), nil
}

// HeartbeatJob records a sign of life of a remote worker's attempt (separate from its lease).
func (a *WorkerAPI) HeartbeatJob(ctx context.Context, id string, token int64) error {
	c := a.c
	if err := checkID("id", id); err != nil {
		return err
	}
	return a.attemptErr("heartbeat", id, c.store.JobHeartbeat(ctx, &store.HeartbeatParams{ID: id, Token: token}))
}

// ReportJobProgress stores a remote worker's progress (percent clamped to 0–100; message at
// most MaxProgressMessageBytes) and counts as a heartbeat.
func (a *WorkerAPI) ReportJobProgress(ctx context.Context, id string, token int64, percent int, message string) error {
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

// attemptErr wraps a store verdict on an attempt; ErrLeaseLost stays visible to errors.Is.
func (a *WorkerAPI) attemptErr(op, id string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s %s: %w", op, id, err)
}

// JobsAvailable returns a channel closed the next time jobs may have become claimable in
// queue (see Activate), and a function to call when no longer waiting.
func (a *WorkerAPI) JobsAvailable(queue string) (<-chan struct{}, func()) {
	c := a.c
	return c.avail.subscribe(queue)
}

// availability wakes waiters of a queue when jobs may be claimable there, and tells its
// listeners (Listen).
type availability struct {
	mu        sync.Mutex
	waiters   map[string]map[chan struct{}]struct{}
	listeners map[*Wakeups]struct{}
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
