package engine

import (
	"context"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// elector holds this process's claim on the leader lease: it asks the store every third of the
// lease (renewing it when held), and considers itself leader only until the local time by
// which its last successful renewal must have expired. Counting from before the request makes
// that deadline no later than the store's, so a leader that cannot renew stops its duties
// within one lease period, before another node can take over.
//
// Every change of leadership is logged: acquired (Info), lost because renewals failed until
// the lease lapsed (Warn, with the error), lost to another node (Warn), released at Stop
// (Info). A failed election is retried with backoff, but never later than the next regular
// election nor than the lapse of a held lease, so the lapse is noticed and logged when it
// happens.
type elector struct {
	e       *Engine
	retry   *backoff.Tracker
	mu      sync.Mutex
	until   time.Time // zero when not leading
	term    int64
	gained  int       // how often this process became leader (from not leading)
	failed  time.Time // when an election last failed (the store did not answer)
	holder  string    // the leader the last successful election named ("" before one)
	changed chan struct{}
}

func newElector(e *Engine) *elector {
	return &elector{e: e, changed: make(chan struct{}), retry: e.newTracker("elect leader", backoff.DefaultPolicy)}
}

// leading reports whether this process holds a live leader lease.
func (l *elector) leading() bool {
	lead, _, _ := l.leadership()
	return lead
}

// leadership reports whether this process holds a live leader lease, how often it became
// leader so far (a caller that sees the count change knows leadership was lost and regained
// meanwhile, even if it never saw it lost), and when an election last failed (zero: never).
func (l *elector) leadership() (leading bool, gained int, failed time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.until.IsZero() && l.e.clock.Now().Before(l.until), l.gained, l.failed
}

// holderID is the node the last successful election named as leader ("" before one).
func (l *elector) holderID() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder
}

// wait returns a channel closed at the next election outcome.
func (l *elector) wait() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.changed
}

// set records the outcome of an election and wakes the waiters (a renewal too: a leader whose
// deadline had passed before the renewal landed leads again). It returns whether this process
// led before (its last lease had not been given up or found lapsed).
func (l *elector) set(until time.Time, term int64) (was bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	was = !l.until.IsZero()
	if !until.IsZero() && (!was || !l.e.clock.Now().Before(l.until)) {
		l.gained++ // leading again, after a lease that was given up or had lapsed
	}
	l.until, l.term = until, term
	close(l.changed)
	l.changed = make(chan struct{})
	return was
}

func (l *elector) run(ctx context.Context) {
	ttl := l.e.cfg.LeaderTTL
	for ctx.Err() == nil {
		clock.Sleep(ctx, l.e.clock, l.elect(ctx, ttl))
	}
	if l.leading() {
		resignCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := l.e.store.LeaderResign(resignCtx, l.e.cfg.WorkerID); err != nil {
			l.e.log.Warn("resign leadership", "err", err)
		}
	}
	if l.set(time.Time{}, 0) {
		l.e.log.Info("leadership released", "worker", l.e.cfg.WorkerID)
	}
}

// elect takes part in one election and returns how long to wait before the next.
func (l *elector) elect(ctx context.Context, ttl time.Duration) time.Duration {
	asked := l.e.clock.Now()
	lead, err := l.e.store.LeaderElect(ctx, &store.LeaderParams{NodeID: l.e.cfg.WorkerID, TTL: ttl})
	switch {
	case ctx.Err() != nil:
		return 0
	case err != nil:
		wait := min(l.retry.Fail(err), ttl/3)
		now := l.e.clock.Now()
		l.mu.Lock()
		until := l.until
		l.failed = now
		l.mu.Unlock()
		if until.IsZero() {
			return wait
		}
		if !now.Before(until) {
			l.set(time.Time{}, 0)
			l.e.log.Warn("leadership lost: could not renew the leader lease", "err", err, "worker", l.e.cfg.WorkerID)
			return wait
		}
		return min(wait, until.Sub(now)) // wake at the lapse, to notice it
	}
	l.retry.Succeed()
	l.mu.Lock()
	l.holder = lead.NodeID
	l.mu.Unlock()
	if lead.NodeID == l.e.cfg.WorkerID {
		if !l.set(asked.Add(ttl), lead.Term) {
			l.e.log.Info("leadership acquired", "term", lead.Term, "worker", l.e.cfg.WorkerID)
		}
	} else if l.set(time.Time{}, 0) {
		l.e.log.Warn("leadership lost: another node holds the leader lease", "leader", lead.NodeID,
			"term", lead.Term, "worker", l.e.cfg.WorkerID)
	}
	return ttl / 3
}
