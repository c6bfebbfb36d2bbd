package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// producer claims jobs of one queue whenever it has free slots and reason to think work waits.
type producer struct {
	e       *Engine
	queue   string
	max     int
	running atomic.Int64
	wake    chan struct{}
	// capLimited is what the last claim said of fleet-wide caps (see ClaimParams.CapLimited).
	capLimited bool
}

// capRetry is how soon a producer held short by a fleet-wide cap claims again.
const capRetry = 50 * time.Millisecond

func newProducer(e *Engine, queue string, max int) *producer {
	return &producer{e: e, queue: queue, max: max, wake: make(chan struct{}, 1)}
}

func (p *producer) notify() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// run is the claim loop. It claims at once after a wake-up (a local enqueue, a promotion, the
// poll timer); after a job finishes it claims again only while the last claim came back full,
// and waits briefly (ClaimCoalesce) to gather free slots into one claim.
func (p *producer) run(ctx context.Context) {
	cfg := p.e.cfg
	poll := p.e.clock.NewTimer(cfg.PollInterval)
	defer func() { poll.Stop() }()
	var coalesce clock.Timer
	var coalesceC <-chan struct{}
	more, urgent := true, true
	threshold := max(1, min(p.max, cfg.ClaimBatch)/4)
	for ctx.Err() == nil {
		free := p.max - int(p.running.Load())
		if more && free > 0 && (urgent || free >= threshold) {
			if full, ok := p.claim(ctx, min(free, cfg.ClaimBatch)); ok {
				more, urgent = full, false
				if !full && p.capLimited {
					// A fleet-wide cap, not an empty queue, held the claim short: slots free
					// up as jobs anywhere finish, which no wake-up announces. Look again soon.
					poll.Stop()
					poll = p.e.clock.NewTimer(capRetry)
				}
				continue
			}
		}
		if more && free > 0 && !urgent && coalesceC == nil {
			ch := make(chan struct{})
			coalesce, coalesceC = p.e.clock.AfterFunc(cfg.ClaimCoalesce, func() { close(ch) }), ch
		}
		select {
		case <-ctx.Done():
		case <-p.wake:
			more, urgent = true, true
		case <-poll.C():
			more, urgent = true, true
			poll = p.e.clock.NewTimer(cfg.PollInterval)
		case <-coalesceC:
			urgent, coalesceC = true, nil
		case <-p.e.slots.wait():
		}
		if urgent && coalesceC != nil {
			coalesce.Stop()
			coalesceC = nil
		}
	}
	if coalesce != nil {
		coalesce.Stop()
	}
}

// claim takes up to n jobs and starts them. full reports whether the store had as many jobs
// as this process had slots for (so more may wait). ok is false when no global slot was free
// or the store failed (the producer then waits for a wake-up, a release or the poll timer).
func (p *producer) claim(ctx context.Context, n int) (full, ok bool) {
	n = p.e.slots.tryAcquire(n)
	if n == 0 {
		return false, false
	}
	jobs, err := p.e.store.JobClaim(ctx, &store.ClaimParams{
		Queue: p.queue, Kinds: p.e.kinds, Limit: n, WorkerID: p.e.cfg.WorkerID, LeaseDuration: p.e.cfg.LeaseDuration,
		CapLimited: &p.capLimited,
	})
	p.e.slots.release(n - len(jobs))
	if err != nil {
		if ctx.Err() == nil {
			p.e.log.Error("claim jobs", "queue", p.queue, "err", err)
		}
		return false, false
	}
	for _, row := range jobs {
		p.running.Add(1)
		p.e.execs.Add(1)
		go p.e.execute(p, row)
	}
	return len(jobs) == n, true
}
