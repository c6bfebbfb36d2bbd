package engine

import (
	"context"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// maintainer does the leader's duties for the jobs table: it promotes scheduled jobs when
// their run_at comes (waking at the earliest one it knows of, nudged by the jobs scheduled
// here and, when the store pushes notifications, anywhere, and at least every PromoteInterval
// or, while notifications arrive, every pollWait of it), rescues
// running jobs whose lease expired or whose node died every RescueInterval (rescue.go), marks
// the workflows whose steps have all ended at the same pace but without the rescues' grace
// after an outage (workflows.go), and deletes expired jobs every SweepInterval (expiry.go). When the store fails it backs off (a
// Tracker), so an outage costs a few calls and log lines, not a spin.
//
// After an outage of the store, the rescues wait a grace period (startGrace) before they judge
// anyone dead, so that live workers, whose renewals and heartbeats the outage held up, have
// renewed first.
type maintainer struct {
	e    *Engine
	mu   sync.Mutex
	next time.Time // earliest known run_at of a scheduled job
	// nudged is the earliest run_at nudged while a promotion pass was reading the store
	// (promoting): the pass's answer may predate that job, so it must not replace it.
	nudged    time.Time
	promoting bool
	swept     time.Time // when the sweep's last complete walk of the table began (store time)
	nudgeC    chan struct{}
	wall      func() time.Time // the system's clock, which job ids are drawn on (settled windows)

	// Used by the run loop only:
	sweeping sweepWalks // where the sweep's walks of the jobs are
	prunedAt time.Time  // when the minute stats were last pruned
	retry    *backoff.Tracker
	held     bool              // the store failed lately (holdAfterOutage): the rescues wait for a pass that works
	started  time.Time         // when run began
	gained   int               // the elector's count of gained leaderships, as last seen
	lastPass time.Time         // when the last pass of duties began; zero since leadership was gained
	leasesAt time.Time         // no rescue of expired leases before this
	nodesAt  time.Time         // no rescue of dead nodes' jobs before this
	refused  map[string]string // kind and group key → the job a compaction last found in its way
	marking  string            // where the walk of the open workflows goes on ("": the oldest)
	markAt   time.Time         // when the next pass of the walk is due
	// markRetry backs off the marking of ended workflows alone (workflows.go): a pass that
	// fails is logged and retried later, and the other duties go on.
	markRetry *backoff.Tracker
}

func newMaintainer(e *Engine) *maintainer {
	return &maintainer{e: e, nudgeC: make(chan struct{}, 1), wall: time.Now,
		retry:     e.newTracker("leader maintenance", backoff.DefaultPolicy),
		markRetry: e.newTracker("workflow marking", backoff.DefaultPolicy)}
}

// nudge makes the maintainer wake by runAt if that is earlier than its plan.
func (m *maintainer) nudge(runAt time.Time) {
	m.mu.Lock()
	earlier := m.next.IsZero() || runAt.Before(m.next)
	if earlier {
		m.next = runAt
	}
	if m.promoting && (m.nudged.IsZero() || runAt.Before(m.nudged)) {
		m.nudged = runAt
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
	nextSweep, nextPromote := nextRescue, nextRescue
	m.started = nextRescue
	for ctx.Err() == nil {
		// The channel is taken before the look at the leadership: an election that lands
		// between the two closes it, where one taken after would wait for the next election.
		elected := e.leader.wait()
		leading, gained, failed := e.leader.leadership()
		if !leading {
			// Only the leader does these duties; not trying, they are not failing.
			m.retry.Reset()
			m.markRetry.Reset()
			select {
			case <-ctx.Done():
			case <-elected:
			}
			continue
		}
		now := e.clock.Now()
		m.holdAfterOutage(now, gained, failed)
		err := m.duties(ctx, now, &nextRescue, &nextSweep, &nextPromote)
		m.lastPass = now
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// The store fails: wait out the backoff, whatever is due, nudged or elected
			// meanwhile (a due job's run_at stays in the past: waking for it would spin).
			m.held = true
			clock.Sleep(ctx, e.clock, m.retry.Fail(err))
			continue
		}
		m.retry.Succeed()
		if m.held {
			m.held = false
			nextRescue = m.startGrace(now)
		}
		t := clock.NewTimerAt(e.clock, m.nextWake(nextRescue, nextSweep, nextPromote))
		select {
		case <-ctx.Done():
		case <-t.C():
		case <-m.nudgeC:
		case <-elected:
		}
		t.Stop()
	}
}

// duties runs the duties that are due, stopping at the first that fails, and moves their next
// times on. The marking of ended workflows does not fail them: it backs off on its own
// (markPass).
func (m *maintainer) duties(ctx context.Context, now time.Time, nextRescue, nextSweep, nextPromote *time.Time) error {
	if !now.Before(*nextRescue) {
		if err := m.rescue(ctx, now); err != nil {
			return err
		}
		if err := m.compact(ctx); err != nil {
			return err
		}
		*nextRescue = now.Add(m.e.cfg.RescueInterval)
	}
	if m.promoteDue(now, *nextPromote) {
		if err := m.promote(ctx); err != nil {
			return err
		}
		*nextPromote = now.Add(m.e.pollWait(m.e.cfg.PromoteInterval))
	}
	if !now.Before(m.markAt) {
		m.markAt = m.markPass(ctx, now)
	}
	if !now.Before(*nextSweep) {
		next, err := m.sweep(ctx, now)
		if err != nil {
			return err
		}
		*nextSweep = next
	}
	return nil
}

// nextWake is when the duties are next due: the rescue, the sweep, the earliest known run_at
// or the next promotion poll.
func (m *maintainer) nextWake(nextRescue, nextSweep, nextPromote time.Time) time.Time {
	wake := nextRescue
	for _, t := range []time.Time{nextSweep, nextPromote, m.markAt, m.nextRunAt()} {
		if !t.IsZero() && t.Before(wake) {
			wake = t
		}
	}
	return wake
}

// promoteDue says whether a promotion pass is due: a known run_at has come, or the poll for
// jobs this process was not told of (nextPromote: PromoteInterval after the last pass, or
// pollWait of it while the store pushes notifications, which nudge the maintainer for every
// job scheduled anywhere).
func (m *maintainer) promoteDue(now, nextPromote time.Time) bool {
	next := m.nextRunAt()
	return !now.Before(nextPromote) || (!next.IsZero() && !now.Before(next))
}

// sweptBefore is when the sweep's last complete walk of the table began, in the store's time
// (zero: none yet): every job that expired before then was deleted by it or is kept by an
// idempotency key.
func (m *maintainer) sweptBefore() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.swept
}

// nextRunAt is the earliest run_at of a scheduled job the maintainer knows of (zero: none).
func (m *maintainer) nextRunAt() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next
}

func (m *maintainer) promote(ctx context.Context) error {
	for ctx.Err() == nil {
		m.mu.Lock()
		m.promoting, m.nudged = true, time.Time{}
		m.mu.Unlock()
		res, err := m.e.store.JobPromoteScheduled(ctx, &store.PromoteParams{Limit: 1000})
		m.mu.Lock()
		m.promoting = false
		if err == nil {
			// The store's earliest run_at, unless a job nudged meanwhile is due sooner: the
			// store may have answered before that job was written.
			m.next = res.NextRunAt
			if !m.nudged.IsZero() && (m.next.IsZero() || m.nudged.Before(m.next)) {
				m.next = m.nudged
			}
		}
		m.mu.Unlock()
		if err != nil {
			return err // the store says what failed
		}
		for _, q := range res.Queues {
			m.e.Notify(q)
		}
		if res.Promoted < 1000 {
			return nil
		}
	}
	return nil
}

// rescue requeues the jobs whose lease expired and those of dead nodes, unless their grace
// runs (see startGrace), and fails the suspended jobs past their deadline: one pass of the
// store (JobRescuePass), then more of the overdue ones while a pass found a full batch.
func (m *maintainer) rescue(ctx context.Context, now time.Time) error {
	e := m.e
	p := &store.RescuePassParams{Overdue: &store.OverdueParams{Limit: rescueBatch, ExpiresAt: e.deadLetterExpiry()}}
	if !m.held && !now.Before(m.leasesAt) {
		p.Expired = &store.RescueParams{Limit: rescueBatch, ExpiresAt: e.deadLetterExpiry()}
	}
	if !m.held && !now.Before(m.nodesAt) {
		p.Dead = &store.RescueDeadParams{NodeTTL: e.cfg.NodeTTL, Self: e.cfg.WorkerID, Limit: rescueBatch, ExpiresAt: e.deadLetterExpiry()}
	}
	res, err := e.store.JobRescuePass(ctx, p)
	if err != nil {
		return err
	}
	if res.Expired != nil {
		e.rescued(res.Expired, "with expired leases", hoppertype.ActorLeader)
	}
	if res.Dead != nil {
		e.rescued(res.Dead, "of dead nodes", hoppertype.ActorLeader)
	}
	m.failedOverdue(res.Overdue)
	if len(res.Overdue) < rescueBatch {
		return nil
	}
	return m.failOverdue(ctx)
}

// rescueBatch bounds the jobs each part of a rescue pass moves.
const rescueBatch = 1000

// holdAfterOutage holds the rescues back until a pass of duties works and a grace has passed
// after it (startGrace) when live workers may not have renewed yet what an outage held up.
// Besides a failed pass of duties (run), that is when this process's election failed since its
// last pass (or, just after it became leader, within graceSpan): the store was away for this
// process too, maybe long enough to cost the previous leader its lease; and when it becomes
// leader within graceSpan of its start: it cannot tell what happened just before (the store,
// or the server its remote workers reach it through, may have been away). A process that
// takes over from a dead leader without a failure of its own rescues at once, as the live
// workers kept renewing.
func (m *maintainer) holdAfterOutage(now time.Time, gained int, failed time.Time) {
	span := m.graceSpan()
	if gained != m.gained {
		m.gained, m.lastPass = gained, time.Time{}
		if now.Sub(m.started) < span {
			m.held = true
		}
	}
	if failed.After(m.lastPass) && now.Sub(failed) < span {
		m.held = true
	}
}

// graceSpan is the longer of the two graces: a failure older than it held up no renewal that
// has not been made since.
func (m *maintainer) graceSpan() time.Duration {
	cfg := m.e.cfg
	return max(cfg.LeaseDuration, cfg.NodeTTL)/3 + cfg.RescueInterval
}

// startGrace holds the rescues back after an outage of the store (holdAfterOutage), now that
// a pass of duties works again, and returns when the first rescue is due.
//
// An outage holds up every live worker's lease renewals and node heartbeat, so an outage
// longer than the lease (or NodeTTL) leaves live workers' leases expired (their nodes'
// heartbeats stale) in the store. Rescued at once, their jobs would be run twice, their handlers
// canceled and a rescue counted each time, so a few outages would dead-letter a healthy long
// job as worker_lost. Every renewer retries a failed renewal no later than its regular period:
// a third of its lease (this process's lease keeper, a server's stream lease keeper and a
// remote worker in poll mode, for the leases they hold) and a third of NodeTTL (the node
// heartbeat). So the expired-lease rescue waits a third of LeaseDuration, the dead-node rescue
// a third of NodeTTL, each plus one RescueInterval for the renewal in flight when the store
// came back. The grace is judged from this process's config: a worker whose lease is longer
// than this process's LeaseDuration (or a node whose NodeTTL is longer) may renew later and
// lose its job after an outage longer than its lease.
func (m *maintainer) startGrace(now time.Time) time.Time {
	cfg := m.e.cfg
	m.leasesAt = now.Add(cfg.LeaseDuration/3 + cfg.RescueInterval)
	m.nodesAt = now.Add(cfg.NodeTTL/3 + cfg.RescueInterval)
	if m.nodesAt.Before(m.leasesAt) {
		return m.nodesAt
	}
	return m.leasesAt
}
