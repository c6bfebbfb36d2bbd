package engine

import (
	"context"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

// elector holds this process's claim on the leader lease: it asks the store every third of the
// lease (renewing it when held), and considers itself leader only until the local time by
// which its last successful renewal must have expired. Counting from before the request makes
// that deadline no later than the store's, so a leader that cannot renew stops its duties
// within one lease period, before another node can take over.
type elector struct {
	e       *Engine
	mu      sync.Mutex
	until   time.Time
	term    int64
	changed chan struct{}
}

func newElector(e *Engine) *elector { return &elector{e: e, changed: make(chan struct{})} }

// leading reports whether this process holds a live leader lease.
func (l *elector) leading() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.until.IsZero() && l.e.clock.Now().Before(l.until)
}

// wait returns a channel closed at the next election outcome.
func (l *elector) wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// set records the outcome of an election and wakes the waiters (a renewal too: a leader whose
// deadline had passed before the renewal landed leads again).
func (l *elector) set(until time.Time, term int64) {
	l.mu.Lock()
	was := !l.until.IsZero()
	l.until, l.term = until, term
	now := !until.IsZero()
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
	if was != now {
		l.e.log.Info("leadership changed", "leader", now, "term", term, "worker", l.e.cfg.WorkerID)
	}
}

func (l *elector) run(ctx context.Context) {
	ttl := l.e.cfg.LeaderTTL
	for ctx.Err() == nil {
		l.elect(ctx, ttl)
		t := l.e.clock.NewTimer(ttl / 3)
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
	}
	if l.leading() {
		resignCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := l.e.store.LeaderResign(resignCtx, l.e.cfg.WorkerID); err != nil {
			l.e.log.Warn("resign leadership", "err", err)
		}
	}
	l.set(time.Time{}, 0)
}

func (l *elector) elect(ctx context.Context, ttl time.Duration) {
	asked := l.e.clock.Now()
	lead, err := l.e.store.LeaderElect(ctx, &store.LeaderParams{NodeID: l.e.cfg.WorkerID, TTL: ttl})
	switch {
	case err != nil:
		if ctx.Err() == nil {
			l.e.log.Error("elect leader", "err", err) // a held lease lapses on its own deadline
		}
	case lead.NodeID == l.e.cfg.WorkerID:
		l.set(asked.Add(ttl), lead.Term)
	default:
		l.set(time.Time{}, 0)
	}
}
