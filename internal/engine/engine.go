// Package engine runs jobs: per-queue producers claim batches from the store, executors run the
// handlers, a completer writes their outcomes back in few transactions, a lease keeper extends
// the leases of running jobs, and a maintainer promotes due jobs and rescues expired leases.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/claim"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/governor"
	"github.com/hopperjobs/hopper/internal/lease"
	"github.com/hopperjobs/hopper/internal/store"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// DefaultClaimBatch is the most jobs one claim takes unless Config.ClaimBatch says otherwise.
const DefaultClaimBatch = 1000

// Config configures an Engine. Zero fields take the defaults documented on each.
type Config struct {
	Store    store.Store
	Clock    clock.Clock      // default the wall clock
	Logger   *slog.Logger     // default discards
	WorkerID string           // required: recorded on every claim
	Workers  *attempt.Workers // the handlers of the kinds this process works; nil: none
	// Spawner adds the jobs a running attempt spawns (attempt.Execution.Spawn): the client
	// validates them and writes them, fenced by the attempt's id and token.
	Spawner func(ctx context.Context, id string, token int64, jobs []*attempt.SpawnJob) ([]*attempt.Spawned, error)
	// Queues maps each queue this process works to its maximum concurrent jobs.
	Queues map[string]int
	// Weights are the queues' weights in this process's share of MaxWorkers (default 1 each);
	// a weight stored for the queue (store.QueueSetWeight) takes precedence once read.
	Weights map[string]int
	// MaxWorkers bounds concurrent jobs across all queues of this process (default 100).
	MaxWorkers int
	// KindConcurrency bounds the concurrent jobs of a kind in this process (kind → at most
	// that many at once); kinds not named are bounded by MaxWorkers and their queue only.
	KindConcurrency map[string]int
	// ClaimBatch bounds the jobs one claim takes (default DefaultClaimBatch).
	ClaimBatch int
	// ClaimAhead bounds the jobs a queue's producer claims beyond its free slots, for the
	// slots that free up while the claim is on its way (see producer.go, "Claiming ahead");
	// 0 takes ClaimBatch, negative claims only for free slots.
	ClaimAhead int
	// LeaseDuration is the lease a claim takes; it is extended every third of it (default 30 s).
	LeaseDuration time.Duration
	// PollInterval is how often an idle producer looks for work it was not told about, such as
	// jobs enqueued by another process (default 1 s, or 5 s when the store pushes
	// notifications and PollOnly is off: polling is then only a fallback).
	PollInterval time.Duration
	// ClaimCoalesce is how long a busy producer waits for more free slots before claiming fewer
	// than a quarter of its capacity (default 1 ms). Enqueue wake-ups never wait.
	ClaimCoalesce time.Duration
	// RetryPolicy is the default backoff (default DefaultRetryPolicy).
	RetryPolicy hoppertype.RetryPolicy
	// JobTimeout is the execution limit when neither job nor handler sets one (default none).
	JobTimeout time.Duration
	// MaxRescues bounds the rescues of the jobs schedules fire (store.RescueBound: 0 takes
	// store.DefaultMaxRescues, negative is unbounded).
	MaxRescues int
	// Maintenance runs promotion and rescue in this process (single node / leader).
	Maintenance bool
	// MaxArgsBytes bounds the args the leader's compaction makes (0: no bound).
	MaxArgsBytes int
	// PromoteInterval bounds the wait between promotion passes (default 1 s).
	PromoteInterval time.Duration
	// RescueInterval is the period of the expired-lease and dead-node rescue (default 5 s).
	// After an outage of the store (and when this process leads soon after its start), each
	// rescue first waits a grace (LeaseDuration/3, NodeTTL/3, plus RescueInterval: see
	// maintainer.holdAfterOutage and startGrace).
	RescueInterval time.Duration
	// LeaderTTL is the leader lease; it is renewed every third of it, and a leader that cannot
	// renew stops its duties within it (default 15 s).
	LeaderTTL time.Duration
	// LeaderIdleAfter: a leader that was not active (no job enqueued, scheduled or started
	// here, no schedule changed) for this long, and finds no job running and nothing due
	// within it, lets its lease lapse; a node takes the lease again when something is due
	// (see elector). Default 1 min; negative: the leader keeps its lease while it lives.
	LeaderIdleAfter time.Duration
	// NodeTTL: a node that has not heartbeated for this long is dead and its running jobs are
	// rescued at once; nodes heartbeat every third of it (default 30 s).
	NodeTTL time.Duration
	// PollOnly ignores the store's pushed notifications (for PostgreSQL behind a pooler in
	// transaction mode, where LISTEN does not work): producers find work by polling.
	PollOnly bool
	// Host and PID describe this process in the node registry.
	Host string
	PID  int
	// OnOutcome, when set, is called after each attempt outcome is written (err is nil) or
	// refused by the store (err wraps ErrLeaseLost or ErrInvalidTransition), and for each
	// job that failed outside an attempt (out of rescues, past a suspension's deadline). p.Job
	// is the job as claimed when the engine knows it (its own attempts, jobs out of rescues:
	// ID, Kind and Queue). Calls come from the completer's goroutines: it must not block.
	OnOutcome func(p *store.FinishParams, err error)
	// OnClaimed, when set, is called with the jobs each claim of this process's producers
	// took, before they start; batch says they are one batch (a batch kind's claim, in the
	// batch's order). It must not block.
	OnClaimed func(rows []*hoppertype.JobRow, batch bool)
	// OnInserted, when set, is called with the jobs each schedule's fire inserted. It must
	// not block.
	OnInserted func(rows []*hoppertype.JobRow)
	// OnRescued, when set, is called with the jobs each rescue returned to their queues
	// (the jobs that failed instead reach OnOutcome). It must not block.
	OnRescued func(jobs []store.RescuedJob)
	// OnWorkflowsEnded, when set, is called with the workflows each pass of this process's
	// leader marked ended (store.WorkflowMarkEnded): each workflow once, when its steps have
	// all ended, unless a cancel of the whole workflow ended it. It must not block.
	OnWorkflowsEnded func(ws []*hoppertype.WorkflowRow)
	// Tracer starts the span each attempt of this process runs in (package jobtrace).
	// Default: a tracer that records nothing.
	Tracer trace.Tracer
	// OnAvailable, when set, is called whenever jobs may have become claimable in a queue: an
	// enqueue through this process, a notification from another node, a promotion, a rescue
	// or a release; "" means any queue (notifications may have been missed). It must not
	// block.
	OnAvailable func(queue string)
	// Governor, when set, holds back new claims while the process's CPU or memory use is over
	// its limits (contract 15); the engine runs it while it works jobs. Nil: no governor.
	Governor *governor.Governor
	// ReleaseGrace is how long Stop waits, after canceling handlers at its deadline, before it
	// releases the jobs of handlers that have not returned (default 500 ms).
	ReleaseGrace time.Duration
	// ScheduleTick bounds the leader's wait between looks for due schedules (default 1 s).
	ScheduleTick time.Duration
	// ScheduleGrace: a fire time at most this old when the leader gets to it is on time under
	// every catch-up policy (default the larger of 3 ticks and 2 LeaderTTL).
	ScheduleGrace time.Duration
	// ResultTTL keeps completed and canceled jobs this long when neither the job nor its kind
	// says otherwise (default 24 h); DeadLetterRetention keeps failed jobs (default 7 days).
	// SweepInterval is how often the leader deletes expired jobs (default 1 min). See expiry.go.
	ResultTTL           time.Duration
	DeadLetterRetention time.Duration
	SweepInterval       time.Duration
}

func (c Config) withDefaults() Config {
	c.Clock = clock.OrReal(c.Clock)
	if c.Tracer == nil {
		c.Tracer = noop.NewTracerProvider().Tracer("")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.MaxWorkers == 0 {
		c.MaxWorkers = 100
	}
	if c.ClaimBatch == 0 {
		c.ClaimBatch = DefaultClaimBatch
	}
	if c.ClaimAhead == 0 {
		c.ClaimAhead = c.ClaimBatch
	}
	def(&c.LeaseDuration, 30*time.Second)
	if po, ok := c.Store.(interface{ PollOnly() bool }); ok && po.PollOnly() {
		c.PollOnly = true // the store was opened not to listen
	}
	if _, pushes := c.Store.(store.Notifier); c.PollInterval == 0 && pushes && !c.PollOnly {
		c.PollInterval = 5 * time.Second // only a fallback: the store pushes new work
	}
	def(&c.PollInterval, time.Second)
	def(&c.ClaimCoalesce, time.Millisecond)
	def(&c.PromoteInterval, time.Second)
	def(&c.RescueInterval, 5*time.Second)
	def(&c.LeaderTTL, 15*time.Second)
	def(&c.LeaderIdleAfter, time.Minute)
	def(&c.NodeTTL, 30*time.Second)
	def(&c.ReleaseGrace, 500*time.Millisecond)
	def(&c.ResultTTL, DefaultResultTTL)
	def(&c.DeadLetterRetention, DefaultDeadLetterRetention)
	def(&c.SweepInterval, DefaultSweepInterval)
	c.RetryPolicy = MergePolicy(&c.RetryPolicy)
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil:
		return errors.New("engine: Store is required")
	case c.WorkerID == "":
		return errors.New("engine: WorkerID is required")
	case c.MaxWorkers < 0, c.ClaimBatch < 0:
		return errors.New("engine: MaxWorkers and ClaimBatch must not be negative")
	case c.LeaseDuration < time.Second:
		return fmt.Errorf("engine: LeaseDuration %s is under 1s", c.LeaseDuration)
	}
	for q, n := range c.Queues {
		if n <= 0 {
			return fmt.Errorf("engine: queue %q: max workers %d must be positive", q, n)
		}
	}
	for k, n := range c.KindConcurrency {
		if n <= 0 {
			return fmt.Errorf("engine: kind %q: concurrency %d must be positive", k, n)
		}
	}
	return nil
}

// Engine works jobs for one process. Start it once and Stop it once.
type Engine struct {
	cfg      Config
	store    store.Store
	clock    clock.Clock
	log      *slog.Logger
	kinds    []string
	kindCaps *claim.KindCaps // Config.KindConcurrency; nil: none
	producer *producer       // claims and starts the jobs of cfg.Queues
	// weights are the weights the queues share this process's slots by (RefreshWeights).
	weights   atomic.Pointer[map[string]int]
	completer *completer
	leases    *lease.Keeper // renews the running jobs' leases
	maint     *maintainer
	sched     *scheduler
	leader    *elector
	loops     backoff.Set // the outage state of every loop that calls the store
	listening *backoff.Tracker
	pushed    atomic.Bool        // a subscription to the store's notifications is listening
	gov       *governor.Governor // nil: no limits
	// remote says which queues the remote workers served through this process work, and
	// which of them are held (SetRemoteQueues); beat asks for a node heartbeat now.
	remote atomic.Pointer[func() (queues, held []string)]
	beat   chan struct{}
	// idleBeat: the last heartbeat written said the node was idle, so the first job that
	// starts must heartbeat at once (register).
	idleBeat atomic.Bool
	// stored are the queues' stored weights (RefreshWeights), read once remote workers ask
	// for several queues (remoteShares); nil until first read.
	stored       atomic.Pointer[map[string]int]
	remoteShares atomic.Bool

	mu      sync.Mutex
	running map[string]*runningJob
	wakeFor map[string]string // job id → queue to wake once the job's outcome is written
	// canceled holds cancels that found no running attempt, briefly (see CancelRunning).
	canceled map[string]time.Time

	workCtx    context.Context // parent of every handler context; canceled on hard stop
	workCancel context.CancelCauseFunc
	stopClaims context.CancelFunc // producers, elector, maintainer
	stopAlive  context.CancelFunc // lease keeper, node heartbeat, listener
	registered bool               // in the node registry; deregistered by Stop
	claimLoops sync.WaitGroup
	aliveLoops sync.WaitGroup
	execs      sync.WaitGroup // executors
	started    bool
}

type runningJob struct {
	row    *hoppertype.JobRow
	cancel context.CancelCauseFunc
	// lease is the duration the lease keeper renews this job's lease for: LeaseDuration, or
	// what the handler last asked for with ExtendLease.
	lease time.Duration
}

// New checks cfg and returns an engine ready to Start.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg: cfg, store: cfg.Store, clock: cfg.Clock, log: cfg.Logger,
		running: map[string]*runningJob{},
		wakeFor: map[string]string{}, canceled: map[string]time.Time{}, gov: cfg.Governor, beat: make(chan struct{}, 1),
	}
	if cfg.Workers != nil {
		e.kinds = cfg.Workers.Kinds()
	}
	e.kindCaps = claim.NewKindCaps(cfg.KindConcurrency)
	sort.Strings(e.kinds)
	weights := make(map[string]int, len(cfg.Queues))
	for q := range cfg.Queues {
		weights[q] = max(cfg.Weights[q], 1)
	}
	e.weights.Store(&weights)
	if len(cfg.Queues) > 0 {
		p, err := newProducer(e)
		if err != nil {
			return nil, err
		}
		e.producer = p
	}
	e.completer = newCompleter(e)
	e.leases = &lease.Keeper{Clock: e.clock, Shortest: e.shortestLease, Renew: e.extendAll,
		Retry: e.newTracker("extend leases", backoff.DefaultPolicy)}
	e.maint = newMaintainer(e)
	e.sched = newScheduler(e)
	e.leader = newElector(e)
	e.listening = e.newTracker("subscribe to notifications", backoff.DefaultPolicy)
	return e, nil
}

// Start launches the engine's goroutines; they run until Stop.
func (e *Engine) Start(ctx context.Context) error {
	if e.started {
		return errors.New("engine already started")
	}
	e.started = true
	e.workCtx, e.workCancel = context.WithCancelCause(context.WithoutCancel(ctx))
	claimCtx, stopClaims := context.WithCancel(context.WithoutCancel(ctx))
	aliveCtx, stopAlive := context.WithCancel(context.WithoutCancel(ctx))
	e.stopClaims, e.stopAlive = stopClaims, stopAlive
	e.completer.start()
	working := len(e.kinds) > 0 && e.producer != nil
	if working {
		e.claimLoops.Go(func() { _ = e.producer.loop.Run(claimCtx) }) // its Start never fails
		if e.gov != nil {
			e.claimLoops.Go(func() { e.gov.Run(claimCtx) })
		}
		// Leases, heartbeats and pushed cancels go on until the last running job is done, so
		// a graceful Stop never lets another node take a job that is still running here.
		e.aliveLoops.Go(func() { e.leases.Run(aliveCtx) })
	}
	if working || e.cfg.Maintenance {
		e.registered = true
		e.aliveLoops.Go(func() { e.heartbeatNode(aliveCtx) })
		if n, ok := e.store.(store.Notifier); ok && !e.cfg.PollOnly {
			e.aliveLoops.Go(func() { e.listen(aliveCtx, n) })
		}
	}
	if e.cfg.Maintenance {
		e.claimLoops.Go(func() { e.leader.run(claimCtx) })
		e.claimLoops.Go(func() { e.maint.run(claimCtx) })
		e.claimLoops.Go(func() { e.sched.run(claimCtx) })
	}
	return nil
}

// newTracker returns the outage tracker of one of the engine's loops (see package backoff).
func (e *Engine) newTracker(name string, policy hoppertype.RetryPolicy, attrs ...any) *backoff.Tracker {
	return e.loops.New(backoff.Config{Name: name, Attrs: attrs, Policy: policy, Clock: e.clock, Logger: e.log})
}

// Failing returns the state of the engine's loops whose last call to the store failed.
func (e *Engine) Failing() []backoff.Status { return e.loops.Failing() }

// IsLeader reports whether this process holds the leader lease and does the leader's duties.
func (e *Engine) IsLeader() bool { return e.leader.leading() }

// LeaderID is the node that held the leader lease at this process's last successful election
// or read of the lease; "" before the first and while no node holds a live lease.
func (e *Engine) LeaderID() string { return e.leader.holderID() }

// Notify tells the producer of queue that jobs were enqueued, so it claims without waiting;
// queue "" tells every producer (jobs may have become claimable anywhere: a kind was enabled).
func (e *Engine) Notify(queue string) {
	e.leader.wake()
	if e.producer != nil {
		e.producer.loop.Wake(queue)
	}
	if hook := e.cfg.OnAvailable; hook != nil {
		hook(queue)
	}
}

// Finish writes an attempt outcome decided outside this process's handlers (a remote worker's
// Complete or Fail) through the batching completer, and returns the store's verdict on it:
// nil, or an error wrapping store.ErrLeaseLost or store.ErrInvalidTransition. Concurrent
// calls share transactions; the items of one Gather join the completer together. If ctx ends
// first the outcome is still written, unreported. The outcome of a grouped job (p.Job names
// its group) wakes the claims of its queue once written, as an in-process attempt's does:
// the group's next job is claimable then, and no enqueue announces it.
func (e *Engine) Finish(ctx context.Context, p *store.FinishParams) error {
	if !e.started {
		return errors.New("finish job: engine not started")
	}
	select {
	case <-e.completer.done:
		return attempt.ErrShutdown
	default:
	}
	if p.Job != nil && p.Job.GroupKey != "" {
		e.wakeAfterWrite(p.ID, p.Job.Queue)
	}
	done := make(chan error, 1)
	if it := gatheredFrom(ctx); it != nil {
		it.queue(p, done)
	} else {
		e.completer.addWaiting(p, done)
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		e.completer.forget(p)
		return ctx.Err()
	case <-e.completer.done:
		select {
		case err := <-done:
			return err
		default:
			return attempt.ErrShutdown
		}
	}
}

// Decide is the store's outcome of an attempt of row that ended as end, by this engine's retry
// policy and clock, with the expiry of a job it ends; nil when the job is no longer the
// attempt's. In-process attempts and remote workers' reports are decided here alike.
func (e *Engine) Decide(row *hoppertype.JobRow, u attempt.Unit, end attempt.Ending) *store.FinishParams {
	p := Decide(row, end, &e.cfg.RetryPolicy, e.clock.Now())
	if p != nil {
		e.stampExpiry(p, row, u) // contract 12: ended jobs expire
		p.Job = row
	}
	return p
}

// NotifyScheduled tells the maintainer a job is due at runAt, so it promotes it on time.
func (e *Engine) NotifyScheduled(runAt time.Time) {
	e.maint.nudge(runAt)
	e.leader.wake()
}

// NotifySchedules tells the scheduler a schedule was created or resumed, so it fires on time.
func (e *Engine) NotifySchedules() {
	e.sched.nudge()
	e.leader.wake()
}

// Claimed tells the engine that jobs were claimed outside its producers (by remote workers
// through this process): a leader must watch their leases, so the lease is not left to lapse
// (Config.LeaderIdleAfter). It never blocks.
func (e *Engine) Claimed() { e.leader.wake() }

// CancelRunning cancels the context of a job running in this process, if it runs here, with
// cause ErrJobCanceled. It reports whether the job ran here. A cancel that arrives while the
// job is being claimed here (after the claim, before its handler is registered) is kept for a
// minute and applied when it registers.
func (e *Engine) CancelRunning(id string) bool {
	if e.cancelRunning(id, attempt.ErrJobCanceled) {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clock.Now()
	for k, at := range e.canceled {
		if now.Sub(at) > time.Minute {
			delete(e.canceled, k)
		}
	}
	e.canceled[id] = now
	return false
}

func (e *Engine) cancelRunning(id string, cause error) bool {
	return e.cancelAttempt(id, 0, cause)
}

// cancelAttempt cancels the running attempt of job id holding token (any token when 0).
func (e *Engine) cancelAttempt(id string, token int64, cause error) bool {
	e.mu.Lock()
	r, ok := e.running[id]
	e.mu.Unlock()
	if ok && (token == 0 || r.row.Token == token) {
		r.cancel(cause)
		return true
	}
	return false
}

// Running returns the number of jobs running in this process.
func (e *Engine) Running() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.running)
}

// Stop stops claiming, waits for running jobs until ctx ends, then cancels their contexts and
// releases the jobs that did not finish back to the queue. It flushes every outcome before it
// returns. A ctx that is already done stops hard: handlers are canceled at once.
func (e *Engine) Stop(ctx context.Context) error {
	if !e.started {
		return nil
	}
	e.stopClaims()
	e.claimLoops.Wait()
	done := make(chan struct{})
	go func() { e.execs.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		e.workCancel(attempt.ErrShutdown)
		// Real time, not the engine clock: this bounds a shutdown, not job semantics.
		grace := time.NewTimer(e.cfg.ReleaseGrace)
		select {
		case <-done:
		case <-grace.C:
			e.releaseStragglers()
		}
		grace.Stop()
	}
	e.workCancel(attempt.ErrShutdown)
	e.stopAlive()
	e.aliveLoops.Wait()
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := e.completer.stop(flushCtx)
	if e.registered {
		e.deregister(ctx)
	}
	return err
}

// releaseStragglers hands back the jobs whose handlers ignored cancellation.
func (e *Engine) releaseStragglers() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for id, r := range e.running {
		e.completer.add(releaseParams(r.row, "handler did not return after shutdown cancel", "released on shutdown"))
		delete(e.running, id)
	}
}

// register records a running attempt. An older attempt of the same job still registered here
// (its lease was lost and the job came back to this process) is canceled with ErrLeaseLost:
// the job has one owner, the newest token. The first job to run in an idle process asks for a
// node heartbeat at once: the node's last one may have said it was idle (heartbeatNode).
func (e *Engine) register(r *runningJob) {
	e.mu.Lock()
	old, ok := e.running[r.row.ID]
	e.running[r.row.ID] = r
	first := !ok && len(e.running) == 1
	_, canceled := e.canceled[r.row.ID]
	delete(e.canceled, r.row.ID)
	e.mu.Unlock()
	if first {
		if e.idleBeat.Load() {
			e.Beat() // no longer idle: say so before the leader could take this node for dead
		}
		e.leader.wake() // a job runs: a leader must watch its lease
	}
	if ok {
		old.cancel(attempt.ErrLeaseLost)
	}
	if canceled {
		r.cancel(attempt.ErrJobCanceled) // canceled while it was being claimed
	}
}

// unregister removes the attempt holding token and reports whether it was still registered
// (not released by Stop, nor superseded by a newer attempt of the same job).
func (e *Engine) unregister(id string, token int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.running[id]
	if !ok || r.row.Token != token {
		return false
	}
	delete(e.running, id)
	return true
}

// wakeAfterWrite asks for queue's producer to be woken once job id's outcome is written.
func (e *Engine) wakeAfterWrite(id, queue string) {
	e.mu.Lock()
	e.wakeFor[id] = queue
	e.mu.Unlock()
}

// written is called by the completer for each outcome the store accepted or refused.
func (e *Engine) written(id string) {
	e.mu.Lock()
	queue, ok := e.wakeFor[id]
	delete(e.wakeFor, id)
	e.mu.Unlock()
	if ok {
		e.Notify(queue)
	}
}
