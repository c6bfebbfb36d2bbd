package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// claimTimeout bounds one claim, which its producer waits for even while stopping.
const claimTimeout = 30 * time.Second

// capRetry is how soon a producer held short by a fleet-wide cap claims again.
const capRetry = 50 * time.Millisecond

// maxRateWait bounds how long a producer held back by a rate limit waits before it claims
// again, however far off the limit's next start is: a limit raised or removed meanwhile
// applies within it.
const maxRateWait = time.Second

// maxClaimsInFlight bounds the claims one producer has outstanding. A claim waits for its
// commit to be durable; with two in flight the next batch is on its way while one commits.
const maxClaimsInFlight = 2

// producer claims jobs of one queue whenever it has free slots and reason to think work waits.
type producer struct {
	e       *Engine
	queue   string
	max     int
	running atomic.Int64
	wake    chan struct{}
	results chan claimResult
	// capHeld: the last claim was held short by a fleet-wide cap, so a local job's end (which
	// frees a slot under the cap) should wake the producer once it is written.
	capHeld atomic.Bool
	retry   *backoff.Tracker // failed claims
}

type claimResult struct {
	gen   int // the loop's wake-up generation when the claim was issued
	asked int
	jobs  []*hoppertype.JobRow
	hold  store.Hold
	err   error
}

func newProducer(e *Engine, queue string, max int) *producer {
	return &producer{e: e, queue: queue, max: max, wake: make(chan struct{}, 1),
		results: make(chan claimResult, maxClaimsInFlight),
		retry:   e.newTracker("claim jobs", backoff.WorkPolicy, "queue", queue)}
}

func (p *producer) notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// loopState is the producer loop's bookkeeping.
type loopState struct {
	more, urgent bool // more: work may be waiting; urgent: claim without gathering slots
	inflight     int  // claims outstanding
	reserved     int  // slots held by outstanding claims
	gen          int  // counts wake-ups, so a claim issued before one cannot undo it
	poll         clock.Timer
	pollEvery    time.Duration // the regular poll's period, as last armed (pollWait)
	// holdUntil: after a failed claim, no claim before this time, whatever wakes the loop
	// (the poll timer is set to fire then).
	holdUntil time.Time
}

// run is the claim loop. It claims at once after a wake-up (a local enqueue, a promotion, a
// notification, the poll timer: every PollInterval, or pollWait of it while the store's
// notifications arrive); after jobs finish it claims again only while the last claim came back full,
// and waits briefly (ClaimCoalesce) to gather free slots into one claim. Up to
// maxClaimsInFlight claims run at once. A failed claim holds further claims back for a
// backoff (WorkPolicy), so wake-ups during an outage cannot make it spin. While the resource
// governor holds, no claim starts (claims in flight finish and their jobs run): the loop
// keeps its state and waits for the governor to open. On exit it waits for outstanding
// claims and starts their jobs, so no claimed job is left to lease expiry.
func (p *producer) run(ctx context.Context) {
	cfg := p.e.cfg
	st := &loopState{more: true, urgent: true, poll: p.e.clock.NewTimer(cfg.PollInterval), pollEvery: cfg.PollInterval}
	defer func() { st.poll.Stop() }()
	var coalesce clock.Timer
	var coalesceC <-chan struct{}
	threshold := max(1, min(p.max, cfg.ClaimBatch)/4)
	for ctx.Err() == nil {
		free := p.max - int(p.running.Load()) - st.reserved
		// governed: nil while the governor lets new claims start, else closed when it does.
		governed := p.e.gov.Hold()
		held := governed != nil || p.e.clock.Now().Before(st.holdUntil)
		if st.inflight < maxClaimsInFlight && st.more && !held && free > 0 && (st.urgent || free >= threshold) {
			if n := p.e.slots.tryAcquire(p.queue, min(free, cfg.ClaimBatch)); n > 0 {
				st.inflight, st.reserved, st.urgent = st.inflight+1, st.reserved+n, false
				go p.claim(ctx, n, st.gen)
				continue
			}
		}
		if st.more && !held && free > 0 && !st.urgent && coalesceC == nil {
			ch := make(chan struct{})
			coalesce, coalesceC = p.e.clock.AfterFunc(cfg.ClaimCoalesce, func() { close(ch) }), ch
		}
		select {
		case <-ctx.Done():
		case r := <-p.results:
			p.received(st, r)
		case <-p.wake:
			st.more, st.urgent, st.gen = true, true, st.gen+1
			if st.pollEvery > cfg.PollInterval && !p.e.pushed.Load() {
				// The store's notifications stopped (the engine wakes its producers then):
				// poll at the short period again until they are back.
				st.pollEvery = cfg.PollInterval
				p.pollAt(st, st.pollEvery)
			}
		case <-st.poll.C():
			st.more, st.urgent, st.gen = true, true, st.gen+1
			st.pollEvery = p.e.pollWait(cfg.PollInterval)
			st.poll = p.e.clock.NewTimer(st.pollEvery)
		case <-coalesceC:
			st.urgent, coalesceC = true, nil
		case <-p.e.slots.wait():
		case <-governed: // open again: work may have come meanwhile, unannounced
			st.more, st.urgent, st.gen = true, true, st.gen+1
		}
		if st.urgent && coalesceC != nil {
			coalesce.Stop()
			coalesceC = nil
		}
	}
	if coalesce != nil {
		coalesce.Stop()
	}
	for st.inflight > 0 {
		p.received(st, <-p.results)
	}
}

// received starts a finished claim's jobs and updates the loop's view of the queue.
func (p *producer) received(st *loopState, r claimResult) {
	st.inflight, st.reserved = st.inflight-1, st.reserved-r.asked
	p.e.slots.release(p.queue, r.asked-len(r.jobs))
	if hook := p.e.cfg.OnClaimed; hook != nil && len(r.jobs) > 0 {
		hook(r.jobs)
	}
	for _, row := range r.jobs {
		p.running.Add(1)
		p.e.execs.Add(1)
		go p.e.execute(p, row)
	}
	if r.err != nil {
		// Retry after a backoff: the poll timer fires then, and wake-ups until then find the
		// loop held.
		p.holdFor(st, p.retry.Fail(r.err))
		p.e.slots.want(p.queue, false) // no claim before the backoff: owed nothing meanwhile
		return
	}
	p.retry.Succeed()
	if h := r.hold; h.QueueWide {
		// The queue's rate limit allows no start before h.Wait: no claim until then, whatever
		// wakes the loop (enqueues would otherwise each make a claim that takes nothing).
		p.holdFor(st, h.Retry(capRetry, maxRateWait))
		st.more, st.urgent = false, false
		p.e.slots.want(p.queue, false)
		p.capHeld.Store(false) // a job's end frees no start
		return
	}
	// A claim that got all it asked for suggests more work; one held short by a fleet-wide cap
	// or a kind's rate limit (not an empty queue) should look again soon, since slots free up
	// as jobs anywhere finish, and starts as time passes, and no wake-up announces that.
	if r.gen < st.gen {
		return // woken since this claim was issued: what it saw is stale, so keep looking
	}
	st.more = len(r.jobs) == r.asked
	if !st.more {
		p.e.slots.want(p.queue, false) // the queue is empty (or capped): it is owed no slots
	}
	capped := !st.more && r.hold.Capped
	p.capHeld.Store(capped && r.hold.Wait == 0) // a job's end frees a cap's slot, not a rate limit's start
	if capped {
		p.pollAt(st, r.hold.Retry(capRetry, maxRateWait))
	}
}

// holdFor holds claims back for d (or longer, if a hold already runs longer) and arms the poll
// timer for the hold's end.
func (p *producer) holdFor(st *loopState, d time.Duration) {
	if until := p.e.clock.Now().Add(d); until.After(st.holdUntil) {
		st.holdUntil = until
	}
	p.pollAt(st, 0)
}

// pollAt re-arms the poll timer to fire after d, or when a hold ends if that is later (a timer
// that fired during the hold would claim nothing and re-arm for a whole PollInterval).
func (p *producer) pollAt(st *loopState, d time.Duration) {
	now := p.e.clock.Now()
	if until := st.holdUntil.Sub(now); until > d {
		d = until
	}
	st.poll.Stop()
	st.poll = p.e.clock.NewTimer(d)
}

// claim asks the store for up to n jobs (n slots are already held) and hands the result to
// the loop.
func (p *producer) claim(ctx context.Context, n, gen int) {
	// Not canceled with the loop: a claim that commits while its caller gives up would leave
	// jobs running that nobody works until their leases expire. The loop waits for it.
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	jobs, hold, err := p.e.store.JobClaim(claimCtx, &store.ClaimParams{
		Queue: p.queue, Kinds: p.e.kinds, Limit: n, WorkerID: p.e.cfg.WorkerID, LeaseDuration: p.e.cfg.LeaseDuration,
	})
	p.results <- claimResult{gen: gen, asked: n, jobs: jobs, hold: hold, err: err}
}
