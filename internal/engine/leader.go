package engine

import (
	"context"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/store"
)

// elector holds this process's claim on the leader lease: it asks the store every third of the
// lease (renewing it when held), and considers itself leader only until the local time by
// which its last successful renewal must have expired. Counting from before the request makes
// that deadline no later than the store's, so a leader that cannot renew stops its duties
// within one lease period, before another node can take over.
//
// A lease is taken only while the leader's duties have something to do (LeaderIdleAfter): an
// idle cluster holds none, and writes nothing for it. A node that does not lead reads what is
// due (store.LeaderDue) every RescueInterval, when the earliest of it comes and when something
// happens here (wake); it takes the lease when no live leader holds it and a job is running,
// something falls due, or this process was active within LeaderIdleAfter. A leader that was
// not active for LeaderIdleAfter and finds nothing running nor due within LeaderIdleAfter
// stops renewing, and its lease lapses (it rests).
//
// Every change of leadership is logged: acquired (Info), rested because nothing was due
// (Info), lost because renewals failed until the lease lapsed (Warn, with the error), lost to
// another node (Warn), released at Stop (Info). A failed election or read is retried with
// backoff, but never later than the next regular election nor than the lapse of a held lease,
// so the lapse is noticed and logged when it happens.
type elector struct {
	e       *Engine
	retry   *backoff.Tracker // the elections
	reads   *backoff.Tracker // the reads of what is due: a store may answer reads but not writes
	mu      sync.Mutex
	until   time.Time // zero when not leading
	term    int64
	gained  int       // how often this process became leader (from not leading)
	failed  time.Time // when an election last failed (the store did not answer)
	holder  string    // the leader the last successful election or read named ("" before one)
	active  time.Time // when this process last did something that may give the leader work
	resting bool      // the lease is left to lapse: nothing is due
	other   time.Time // until when another node's lease, as last read, is live
	retryAt time.Time // a failed election or read backs off until then: wakes wait for it
	changed chan struct{}
	wakeC   chan struct{} // wake: something happened here
}

func newElector(e *Engine) *elector {
	return &elector{e: e, changed: make(chan struct{}), wakeC: make(chan struct{}, 1), active: e.clock.Now(),
		retry: e.newTracker("elect leader", backoff.DefaultPolicy), reads: e.newTracker("read what the leader has due", backoff.DefaultPolicy)}
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
	for ctx.Err() == nil {
		t := l.e.clock.NewTimer(l.step(ctx))
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				waiting = false
			case <-t.C():
				waiting = false
			case <-l.wakeC:
				waiting = !l.heeds()
			}
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
	if l.set(time.Time{}, 0) {
		l.e.log.Info("leadership released", "worker", l.e.cfg.WorkerID)
	}
}

// wake tells the elector that this process did something that may give the leader work (a
// job enqueued, scheduled or started here, a schedule changed): a node that does not lead
// looks at once whether to take the lease, and a leader does not rest for LeaderIdleAfter.
// It never blocks.
func (l *elector) wake() {
	l.mu.Lock()
	l.active = l.e.clock.Now()
	l.mu.Unlock()
	select {
	case l.wakeC <- struct{}{}:
	default:
	}
}

// heeds says whether a wake cuts the wait for the next step short: this process rests, or
// does not lead while no other node is known to.
func (l *elector) heeds() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.e.clock.Now()
	if !l.until.IsZero() && now.Before(l.until) {
		return l.resting
	}
	return !now.Before(l.other) && !now.Before(l.retryAt)
}

// leaseLeft is how long this process's lease has left on its own clock.
func (l *elector) leaseLeft() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until.Sub(l.e.clock.Now())
}

// rest sets whether the lease is left to lapse.
func (l *elector) rest(resting bool) {
	l.mu.Lock()
	l.resting = resting
	l.mu.Unlock()
}

// backOff records that a failed election or read waits wait: wakes do not cut it short.
func (l *elector) backOff(wait time.Duration) time.Duration {
	l.mu.Lock()
	l.retryAt = l.e.clock.Now().Add(wait)
	l.mu.Unlock()
	return wait
}

// step takes part in the leadership as described on elector and returns how long to wait
// before the next step.
func (l *elector) step(ctx context.Context) time.Duration {
	ttl, idleAfter := l.e.cfg.LeaderTTL, l.e.cfg.LeaderIdleAfter
	if idleAfter < 0 {
		return l.elect(ctx, ttl) // leadership never rests
	}
	now := l.e.clock.Now()
	l.mu.Lock()
	until, resting, active := l.until, l.resting, l.active
	l.mu.Unlock()
	leading := !until.IsZero() && now.Before(until)
	switch {
	case leading && resting && (now.Sub(active) < idleAfter || !l.nothingDue(ctx, idleAfter)):
		// Active again, or work came (a job started elsewhere), before the lease lapsed.
		l.rest(false)
		return l.elect(ctx, ttl)
	case leading && resting:
		return restingLook(until.Sub(now), ttl) // the lease lapses then; look again meanwhile
	case !until.IsZero() && resting:
		l.rest(false)
		if l.set(time.Time{}, 0) {
			l.e.log.Info("leadership rested: nothing due", "worker", l.e.cfg.WorkerID)
		}
	case !until.IsZero() && !leading:
		// The lease lapsed before its renewal (the process stalled, the clock jumped): renew
		// it if nobody took it, as any election does.
		return l.elect(ctx, ttl)
	case leading && now.Sub(active) < idleAfter:
		return l.elect(ctx, ttl)
	case leading:
		// Renew on time first, then look whether the next renewals can be left out.
		wait := l.elect(ctx, ttl)
		if l.leading() && l.nothingDue(ctx, idleAfter) {
			l.rest(true)
			return restingLook(l.leaseLeft(), ttl) // look again before it lapses
		}
		return wait
	}
	due, err := l.readDue(ctx)
	switch {
	case ctx.Err() != nil:
		return 0
	case err != nil:
		l.mu.Lock()
		l.failed = now
		l.mu.Unlock()
		return l.backOff(min(l.reads.Fail(err), l.e.cfg.RescueInterval))
	}
	l.reads.Succeed()
	storeNow := l.e.store.Now()
	next := due.Earliest()
	lease := due.Leader
	live := lease != nil && lease.ExpiresAt.After(storeNow)
	l.mu.Lock()
	l.holder = ""
	if live {
		l.holder = lease.NodeID
	}
	l.mu.Unlock()
	if live && lease.NodeID != l.e.cfg.WorkerID {
		// Another node leads: wakes wait until its lease would lapse, if it is not renewed;
		// look again then, or within a third of a lease (it may resign at Stop).
		left := lease.ExpiresAt.Sub(storeNow) + time.Millisecond
		l.mu.Lock()
		l.other = now.Add(left)
		l.mu.Unlock()
		return min(left, ttl/3)
	}
	if due.Running || now.Sub(active) < idleAfter || (!next.IsZero() && !next.After(storeNow)) {
		return l.elect(ctx, ttl)
	}
	wait := l.e.cfg.RescueInterval
	if !next.IsZero() {
		wait = min(wait, next.Sub(storeNow))
	}
	return wait
}

// restingLook is how long a resting leader, its lease held for left more, waits before it
// looks again whether work came: every third of a lease, and a last time a tenth of a lease (at most
// a second) before the lapse, so that a job that started meanwhile is seen while the lease is
// still held and the leader renews instead of letting it lapse and taking it again. Only the
// wait from that last look runs to the lapse itself.
func restingLook(left, ttl time.Duration) time.Duration {
	margin := min(ttl/10, time.Second)
	if left > margin {
		return min(left-margin, ttl/3)
	}
	return left
}

// readDue reads the lease and what the leader's duties have due (store.LeaderDue), with
// the expiries after the sweep's last complete walk began (as this process knows it, or as
// the lease row keeps it from the last leader's elections, whichever is later).
func (l *elector) readDue(ctx context.Context) (*store.Due, error) {
	return l.e.store.LeaderDue(ctx, &store.DueParams{ExpiringAfter: l.e.maint.sweptBefore()})
}

// nothingDue says whether a leader may rest: no job is running and nothing falls due within
// idleAfter. A failed read says no (the renewals go on; the elections report the store).
func (l *elector) nothingDue(ctx context.Context, idleAfter time.Duration) bool {
	due, err := l.readDue(ctx)
	if err != nil {
		return false
	}
	next := due.Earliest()
	return !due.Running && (next.IsZero() || next.Sub(l.e.store.Now()) >= idleAfter)
}

// elect takes part in one election and returns how long to wait before the next.
func (l *elector) elect(ctx context.Context, ttl time.Duration) time.Duration {
	asked := l.e.clock.Now()
	lead, err := l.e.store.LeaderElect(ctx, &store.LeaderParams{NodeID: l.e.cfg.WorkerID, TTL: ttl,
		SweptBefore: l.e.maint.sweptBefore()})
	switch {
	case ctx.Err() != nil:
		return 0
	case err != nil:
		wait := l.backOff(min(l.retry.Fail(err), ttl/3))
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
