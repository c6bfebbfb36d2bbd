package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/ahead"
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
//
// Claiming ahead: a claim holds its slots for its whole round trip, and jobs that take less
// time than that finish meanwhile, so with short jobs most slots would wait for claims rather
// than run jobs, and claims would be small. A producer therefore asks, beyond its free slots,
// for as many jobs as its jobs ended during its last claim's round trip (at most
// Config.ClaimAhead): the slots that will be free when the claim returns. Such jobs are claimed
// (running in the store, their leases renewed, a cancel reaches them) and wait here for a
// slot; they start before any new claim, in claim order. None are asked for while some wait,
// where a cap, a rate limit or a disabled kind applies (the store takes none: Hold.Restricted),
// after a claim that came back short, or for jobs that run longer than a claim's round trip
// (then few end during one). A job that waits ahead.MaxWait without a slot is
// given back to its queue, attempt unspent, and the producer asks for none ahead until its
// jobs end during a round trip again.
type producer struct {
	e       *Engine
	queue   string
	max     int
	running atomic.Int64             // jobs whose handlers run (each holds a slot)
	ended   atomic.Int64             // jobs ended since start, to count the ends during a claim's round trip
	waiting ahead.Queue[*claimedJob] // claimed ahead, waiting for a slot; the loop's own
	wake    chan struct{}
	results chan claimResult
	// capHeld: the last claim was held short by a fleet-wide cap, so a local job's end (which
	// frees a slot under the cap) should wake the producer once it is written.
	capHeld atomic.Bool
	retry   *backoff.Tracker // failed claims
}

type claimResult struct {
	gen   int   // the loop's wake-up generation when the claim was issued
	asked int   // slots held for the claim
	extra int   // jobs asked for beyond them (claiming ahead)
	ended int64 // the producer's ended count when the claim was issued
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
	more, urgent bool        // more: work may be waiting; urgent: claim without gathering slots
	inflight     int         // claims outstanding
	reserved     int         // slots held by outstanding claims
	ahead        int         // jobs to ask for beyond the free slots (claiming ahead)
	aheadT       clock.Timer // fires when the oldest job claimed ahead has waited ahead.MaxWait
	gen          int         // counts wake-ups, so a claim issued before one cannot undo it
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
	st := &loopState{more: true, urgent: true, poll: p.e.clock.NewTimer(cfg.PollInterval), pollEvery: cfg.PollInterval,
		aheadT: p.e.clock.NewTimer(ahead.MaxWait)}
	st.aheadT.Stop()
	defer func() { st.poll.Stop() }()
	var coalesce clock.Timer
	var coalesceC <-chan struct{}
	threshold := max(1, min(p.max, cfg.ClaimBatch)/4)
	for ctx.Err() == nil {
		// Taken before the slots are counted, so a slot freed after the count wakes the loop.
		slotFreed := p.e.slots.wait()
		// governed: nil while the governor lets new claims start, else closed when it does.
		governed := p.e.gov.Hold()
		if governed != nil && p.waiting.Len() > 0 {
			// Over its limits the process takes no new work: what it claimed ahead goes back.
			p.giveBackAhead(st, "claimed ahead, not started: the resource governor holds", "released unstarted")
		}
		p.startAhead(st)
		free := p.max - int(p.running.Load()) - st.reserved
		held := governed != nil || p.e.clock.Now().Before(st.holdUntil)
		waiting := p.waiting.Len() > 0 // claimed jobs wait for slots: no claim before they start
		if !waiting && st.inflight < maxClaimsInFlight && st.more && !held && free > 0 && (st.urgent || free >= threshold) {
			if n := p.e.slots.tryAcquire(p.queue, min(free, cfg.ClaimBatch)); n > 0 {
				// Both claims in flight ask ahead for the ends of one round trip, about twice
				// what frees up before each returns: the extra jobs wait up to another round
				// trip, and the larger claims measured faster than counting the ends once
				// (docs/benchmarks.md, "Throughput rung").
				extra := min(st.ahead, cfg.ClaimBatch-n)
				st.inflight, st.reserved, st.urgent = st.inflight+1, st.reserved+n, false
				go p.claim(ctx, n, extra, st.gen)
				continue
			}
		}
		var aheadC <-chan time.Time
		if waiting {
			aheadC = st.aheadT.C()
		}
		if !waiting && st.more && !held && free > 0 && !st.urgent && coalesceC == nil {
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
		case <-slotFreed:
		case <-aheadC: // the oldest job claimed ahead waited too long: startAhead gives them back
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
	p.giveBackAhead(st, "claimed ahead, not started before the worker stopped", "released on shutdown")
}

// received starts a finished claim's jobs and updates the loop's view of the queue.
func (p *producer) received(st *loopState, r claimResult) {
	st.inflight, st.reserved = st.inflight-1, st.reserved-r.asked
	if hook := p.e.cfg.OnClaimed; hook != nil && len(r.jobs) > 0 {
		hook(r.jobs)
	}
	// The claim's jobs queue up behind those claimed ahead before, so that jobs start in
	// claim order; the claim's slots start the oldest, and the rest wait for slots.
	waited := p.waiting.Len() > 0
	now := p.e.clock.Now()
	for _, row := range r.jobs {
		p.waiting.Add(now, p.e.own(row))
	}
	started := p.waiting.Take(r.asked)
	for _, j := range started {
		p.start(j)
	}
	n := len(started)
	p.e.slots.release(p.queue, r.asked-n)
	if n > 0 || !waited {
		p.armAhead(st)
	}
	// The next claim asks ahead for what ended during this one's round trip, unless this one
	// came back short (the queue ran dry, or a cap, a rate limit or a disabled kind applies:
	// the store then took none ahead).
	st.ahead = 0
	if r.err == nil {
		st.ahead = ahead.Next(r.hold, len(r.jobs), r.asked, r.extra, int(p.ended.Load()-r.ended), p.e.cfg.ClaimAhead)
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
	st.more = r.hold.Full(len(r.jobs), r.asked, r.extra)
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

// claim asks the store for up to n+extra jobs (n slots are already held; extra jobs are claimed
// ahead) and hands the result to the loop.
func (p *producer) claim(ctx context.Context, n, extra, gen int) {
	// Not canceled with the loop: a claim that commits while its caller gives up would leave
	// jobs running that nobody works until their leases expire. The loop waits for it.
	claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	ended := p.ended.Load()
	jobs, hold, err := p.e.store.JobClaim(claimCtx, &store.ClaimParams{
		Queue: p.queue, Kinds: p.e.kinds, Limit: n + extra, Ahead: extra, WorkerID: p.e.cfg.WorkerID, LeaseDuration: p.e.cfg.LeaseDuration,
	})
	p.results <- claimResult{gen: gen, asked: n, extra: extra, ended: ended, jobs: jobs, hold: hold, err: err}
}

// start runs j on a slot the producer holds for it.
func (p *producer) start(j *claimedJob) {
	p.running.Add(1)
	p.e.execs.Add(1)
	go p.e.execute(p, j)
}

// startAhead starts the jobs claimed ahead on the slots that are free, in claim order, then
// gives back those left if the oldest has waited ahead.MaxWait. When none is left and the
// queue ran dry, the queue stops wanting slots (tryAcquire marked it wanting).
func (p *producer) startAhead(st *loopState) {
	if p.waiting.Len() == 0 {
		return
	}
	free := p.max - int(p.running.Load()) - st.reserved
	if n := p.e.slots.tryAcquire(p.queue, min(free, p.waiting.Len())); n > 0 {
		for _, j := range p.waiting.Take(n) {
			p.start(j)
		}
		p.armAhead(st)
	}
	if p.waiting.Expired(p.e.clock.Now(), ahead.MaxWait) {
		p.giveBackAhead(st, "claimed ahead, no slot freed for it within "+ahead.MaxWait.String(), "released unstarted")
	}
	if p.waiting.Len() == 0 && !st.more {
		p.e.slots.want(p.queue, false)
	}
}

// armAhead sets the timer for the oldest job claimed ahead to wait ahead.MaxWait, or stops it
// when none waits.
func (p *producer) armAhead(st *loopState) {
	st.aheadT.Stop()
	if p.waiting.Len() > 0 {
		st.aheadT = p.e.clock.NewTimer(p.waiting.Due(ahead.MaxWait).Sub(p.e.clock.Now()))
	}
}

// giveBackAhead returns the jobs claimed ahead to their queue and asks for none ahead until
// jobs end during a claim again.
func (p *producer) giveBackAhead(st *loopState, why, reason string) {
	jobs := p.waiting.All()
	for _, j := range jobs {
		p.e.giveBack(j, why, reason)
	}
	if len(jobs) > 0 {
		p.e.log.Info("gave back jobs claimed ahead", "queue", p.queue, "jobs", len(jobs), "why", why)
	}
	st.ahead = 0
	st.aheadT.Stop()
}
