package engine

import (
	"context"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// maintainer does the leader's duties for the jobs table: it promotes scheduled jobs when
// their run_at comes (waking at the earliest one, at least every PromoteInterval), rescues
// running jobs whose lease expired or whose node died every RescueInterval (rescue.go), and
// deletes expired jobs every SweepInterval (expiry.go).
type maintainer struct {
	e      *Engine
	mu     sync.Mutex
	next   time.Time // earliest known run_at of a scheduled job
	nudgeC chan struct{}

	sweepFrom string // where the sweep's walk of the jobs goes on (used by the run loop only)
}

func newMaintainer(e *Engine) *maintainer {
	return &maintainer{e: e, nudgeC: make(chan struct{}, 1)}
}

// nudge makes the maintainer wake by runAt if that is earlier than its plan.
func (m *maintainer) nudge(runAt time.Time) {
	m.mu.Lock()
	earlier := m.next.IsZero() || runAt.Before(m.next)
	if earlier {
		m.next = runAt
	}
	m.mu.Unlock()
	if earlier {
		select {
		case m.nudgeC <- struct{}{}:
		default:
		}
	}
}

func (m *maintainer) run(ctx context.Context) {
	e := m.e
	nextRescue := e.clock.Now()
	nextSweep := nextRescue
	for ctx.Err() == nil {
		if !e.leader.leading() {
			select { // only the leader does these duties
			case <-ctx.Done():
			case <-e.leader.wait():
			}
			continue
		}
		now := e.clock.Now()
		if !now.Before(nextRescue) {
			m.rescue(ctx)
			nextRescue = now.Add(e.cfg.RescueInterval)
		}
		m.promote(ctx)
		if !now.Before(nextSweep) {
			nextSweep = now.Add(e.cfg.SweepInterval)
			if m.sweep(ctx) {
				nextSweep = now // a backlog: more after a look at the other duties
			}
		}
		wake := nextRescue
		if nextSweep.Before(wake) {
			wake = nextSweep
		}
		m.mu.Lock()
		if !m.next.IsZero() && m.next.Before(wake) {
			wake = m.next
		}
		m.mu.Unlock()
		if limit := now.Add(e.cfg.PromoteInterval); limit.Before(wake) {
			wake = limit
		}
		t := e.clock.NewTimer(wake.Sub(e.clock.Now()))
		select {
		case <-ctx.Done():
		case <-t.C():
		case <-m.nudgeC:
		case <-e.leader.wait():
		}
		t.Stop()
	}
}

func (m *maintainer) promote(ctx context.Context) {
	for ctx.Err() == nil {
		res, err := m.e.store.JobPromoteScheduled(ctx, &store.PromoteParams{Limit: 1000})
		if err != nil {
			if ctx.Err() == nil {
				m.e.log.Error("promote scheduled jobs", "err", err)
			}
			return
		}
		m.mu.Lock()
		m.next = res.NextRunAt
		m.mu.Unlock()
		for _, q := range res.Queues {
			m.e.Notify(q)
		}
		if res.Promoted < 1000 {
			return
		}
	}
}

func (m *maintainer) rescue(ctx context.Context) {
	e := m.e
	res, err := e.store.JobRescueExpired(ctx, &store.RescueParams{Limit: 1000, ExpiresAt: e.deadLetterExpiry()})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("rescue expired leases", "err", err)
		}
		return
	}
	e.rescued(res, "with expired leases", hoppertype.ActorLeader)
	dead, err := e.store.JobRescueDeadNodes(ctx, &store.RescueDeadParams{NodeTTL: e.cfg.NodeTTL, Limit: 1000,
		ExpiresAt: e.deadLetterExpiry()})
	if err != nil {
		if ctx.Err() == nil {
			e.log.Error("rescue jobs of dead nodes", "err", err)
		}
		return
	}
	e.rescued(dead, "of dead nodes", hoppertype.ActorLeader)
	m.failOverdue(ctx)
}
