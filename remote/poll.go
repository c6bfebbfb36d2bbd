package remote

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/ahead"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// pollCoalesce is how long a poll with few free slots waits for more.
const pollCoalesce = time.Millisecond

// maxPolls bounds the polls a worker has outstanding: with two, the next batch is on its way
// while one is answered (as the engine's producers bound their claims). A second poll goes
// out only while the last came back full, so a worker waits on an empty queue with one.
const maxPolls = 2

// polled is what one poll brought back.
type polled struct {
	asked      int   // slots held for the poll
	extra      int   // jobs asked for beyond them (claiming ahead)
	ended      int64 // the worker's ended count when the poll was sent
	jobs       []*hopperv1.ActivatedJob
	restricted bool // a cap, rate limit or disabled kind applied: none was claimed ahead
	err        error
}

// poller is the state of the Poll mode's loop, which owns it.
//
// Claiming ahead (docs/workers.md, "Claiming ahead"), as the engine's producers do: a poll
// holds its slots for its whole round trip, and jobs shorter than that end meanwhile, so a
// poll also asks (ActivateRequest.ahead) for as many jobs as the worker's jobs ended during
// its last poll's round trip (at most Config.ClaimAhead). Those wait here, in claim order,
// and start as slots free, before any new poll. They wait at most ahead.Unrenewed of their
// lease (nothing renews it meanwhile), then go back to the queue (Release, attempt unspent),
// as they do when the governor holds and when the worker stops. None are asked for with
// several queues, after a poll that came back short or restricted, or while some wait.
type poller struct {
	w        *Worker
	limit    int // Config.ClaimAhead, resolved
	maxWait  time.Duration
	running  atomic.Int64 // handlers running, each on a slot
	ended    atomic.Int64 // handlers ended since the start
	freed    chan struct{}
	results  chan polled
	waiting  ahead.Queue[*hopperv1.ActivatedJob]
	inflight int // polls outstanding
	reserved int // slots held by outstanding polls
	aheadN   int // jobs the next poll asks ahead
	more     bool
	urgent   bool // poll without gathering slots
	backoff  time.Time
	gaveBack sync.WaitGroup // releases of jobs claimed ahead, which the loop waits for on exit
	// The loop's timers, nil when not set: gathering slots for a poll, the oldest job claimed
	// ahead reaching maxWait, the end of a failed poll's backoff.
	coalesce, aheadT, backoffT clock.Timer
}

// pollLoop takes jobs with long polls (Activate) for the free slots, and claims ahead. A
// failed poll is retried with backoff; while the governor holds, nothing is polled.
func (w *Worker) pollLoop() {
	p := &poller{w: w, limit: w.cfg.ClaimAhead, maxWait: ahead.Unrenewed(w.cfg.LeaseDuration),
		freed: make(chan struct{}, 1), results: make(chan polled, maxPolls), more: true, urgent: true}
	if len(w.queues) > 1 || p.limit < 0 {
		p.limit = 0 // the server takes jobs ahead of a single queue only
	}
	p.run()
}

// stopTimer stops *t, if set, and unsets it.
func stopTimer(t *clock.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

func (p *poller) run() {
	w := p.w
	defer func() {
		stopTimer(&p.coalesce)
		stopTimer(&p.aheadT)
		stopTimer(&p.backoffT)
		p.gaveBack.Wait()
	}()
	threshold := max(w.cfg.Concurrency/4, 1)
	for {
		stopping := w.intakeCtx.Err() != nil || w.isStopping()
		if stopping && p.inflight == 0 {
			p.giveBack("worker stopping")
			return
		}
		now := w.clock.Now()
		free := w.cfg.Concurrency - int(p.running.Load()) - p.reserved
		held, changed := w.gov.State() // changed: closed when the governor holds, or lets go
		if p.waiting.Len() > 0 {
			switch {
			case stopping:
				p.giveBack("worker stopping")
			case held:
				p.giveBack("claimed ahead, not started: the resource governor holds")
			case free > 0: // free slots first, then the time limit for what is left
				stopTimer(&p.aheadT) // set again from the oldest left
				for _, j := range p.waiting.Take(free) {
					p.start(j)
				}
				continue
			case p.waiting.Expired(now, p.maxWait):
				p.giveBack("claimed ahead, no slot freed for it within " + p.maxWait.String())
			}
		}
		canPoll := !stopping && !held && p.waiting.Len() == 0 && free > 0 && !now.Before(p.backoff) &&
			(p.inflight == 0 || (p.more && p.inflight < maxPolls))
		if !canPoll {
			stopTimer(&p.coalesce)
		} else if p.urgent || free >= threshold {
			stopTimer(&p.coalesce)
			p.poll(free)
			continue
		}
		// A busy worker frees its slots one job at a time: when few are free, wait a moment
		// (pollCoalesce) for more, so one poll fills several slots instead of each job costing
		// a round trip and a claim.
		var coalesceC, aheadC, backoffC <-chan time.Time
		if canPoll {
			if p.coalesce == nil {
				p.coalesce = w.clock.NewTimer(pollCoalesce)
			}
			coalesceC = p.coalesce.C()
		}
		if p.waiting.Len() > 0 {
			if p.aheadT == nil {
				p.aheadT = w.clock.NewTimer(p.waiting.Due(p.maxWait).Sub(now))
			}
			aheadC = p.aheadT.C()
		}
		if now.Before(p.backoff) {
			if p.backoffT == nil {
				p.backoffT = w.clock.NewTimer(p.backoff.Sub(now))
			}
			backoffC = p.backoffT.C()
		}
		intakeDone := w.intakeCtx.Done()
		if stopping {
			intakeDone = nil // only the polls outstanding are waited for
		}
		select {
		case <-intakeDone:
		case <-p.freed:
		case r := <-p.results:
			p.received(r)
		case <-coalesceC:
			p.coalesce, p.urgent = nil, true
		case <-aheadC: // the oldest job claimed ahead waited maxWait: the loop's top gives them back
			p.aheadT = nil
		case <-backoffC:
			p.backoffT, p.urgent = nil, true
		case <-changed: // holds (jobs claimed ahead go back at the top), or open again
			p.urgent = true
		}
	}
}

// poll sends one poll for the free slots, and for p.aheadN jobs ahead, on its own goroutine.
// Only a poll sent while none is out waits for a job (PollWait); the second, sent because the
// last came back full, takes what is ready and returns, so that a worker waits on an empty
// queue with one long poll.
func (p *poller) poll(free int) {
	w := p.w
	extra := min(p.aheadN, hopper.MaxActivateJobs-free)
	if extra < 0 {
		extra = 0
	}
	n := min(free, hopper.MaxActivateJobs)
	wait := w.cfg.PollWait
	if p.inflight > 0 {
		wait = 0
	}
	p.inflight, p.reserved, p.urgent = p.inflight+1, p.reserved+n, false
	ended := p.ended.Load()
	queue, queues := w.asked()
	req := &hopperv1.ActivateRequest{Worker: w.cfg.Name, Queue: queue, Queues: queues, Kinds: w.kinds,
		MaxJobs: int32(n + extra), Ahead: int32(extra), LeaseTimeout: durationOf(w.cfg.LeaseDuration)}
	if wait > 0 {
		req.RequestTimeout = durationOf(wait)
	}
	w.loops.Go(func() {
		res, err := w.api.Activate(w.intakeCtx, req)
		p.results <- polled{asked: n, extra: extra, ended: ended, jobs: res.GetJobs(), restricted: res.GetRestricted(), err: err}
	})
}

// received takes a poll's answer: its jobs queue up behind those claimed ahead before (claim
// order), and the poll's slots start the oldest at once, whatever the governor says meanwhile
// (it holds new polls back, not jobs already claimed for free slots, as in process); the rest
// wait for slots (the loop's top).
func (p *poller) received(r polled) {
	w := p.w
	p.inflight, p.reserved = p.inflight-1, p.reserved-r.asked
	if r.err != nil {
		p.more, p.aheadN = false, 0
		if w.intakeCtx.Err() == nil {
			p.backoff = w.clock.Now().Add(w.intake.Fail(unavailable(r.err)))
		}
		return
	}
	w.intake.Succeed()
	hold := store.Hold{Restricted: r.restricted}
	p.more = hold.Full(len(r.jobs), r.asked, r.extra)
	p.aheadN = ahead.Next(hold, len(r.jobs), r.asked, r.extra, int(p.ended.Load()-r.ended), p.limit)
	stopTimer(&p.aheadT) // set again from the oldest left
	p.waiting.Add(w.clock.Now(), r.jobs...)
	for _, j := range p.waiting.Take(r.asked) {
		p.start(j)
	}
}

// start runs j on a free slot.
func (p *poller) start(j *hopperv1.ActivatedJob) {
	p.running.Add(1)
	if p.w.launchThen(j, p.end) == nil { // stopping
		p.running.Add(-1)
		p.release(j, "worker stopping")
	}
}

// end frees a handler's slot.
func (p *poller) end() {
	p.running.Add(-1)
	p.ended.Add(1)
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

// giveBack releases every job claimed ahead back to its queue and asks for none ahead until
// jobs end during a poll again.
func (p *poller) giveBack(why string) {
	jobs := p.waiting.All()
	for _, j := range jobs {
		p.release(j, why)
	}
	if len(jobs) > 0 && why != "worker stopping" {
		p.w.log.Info("gave back jobs claimed ahead", "jobs", len(jobs), "why", why)
	}
	p.aheadN = 0
	stopTimer(&p.aheadT)
}

// release hands j back to its queue without holding up the loop; the outcomes go in batches.
func (p *poller) release(j *hopperv1.ActivatedJob, why string) {
	p.gaveBack.Go(func() { p.w.release(j, why) })
}
