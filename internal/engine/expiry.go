package engine

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// Result retention (contract 12): when a job ends, its record is given an expiry; reads
// treat it as gone from then on, and the leader's sweep deletes it.

// Defaults of Config.ResultTTL, Config.DeadLetterRetention and Config.SweepInterval.
const (
	DefaultResultTTL           = 24 * time.Hour
	DefaultDeadLetterRetention = 7 * 24 * time.Hour
	DefaultSweepInterval       = time.Minute
)

// The sweep is two walks of the jobs table in id order, a window at a time, which delete the
// expired jobs of each window they read:
//
//   - The full walk goes through the whole table, then starts again at the front
//     SweepInterval later. It finds every expired job, whatever its retention, but in a table
//     of many retained jobs one walk takes minutes (it is paced, below), and the jobs that
//     expire meanwhile pile up: deleted in bursts of millions, which held up the writer
//     (docs/benchmarks.md#at-scale).
//   - The head walk keeps up with the front of the expiring jobs. Jobs mostly end in id order
//     with one retention, so they expire in id order too: behind the front everything expired
//     was deleted, and after it nothing has expired yet. The head walk starts at the front,
//     deletes what expired since its last lap and stops where nothing more is due (see
//     sweepHead); the next lap starts at the front again, moved on past the windows that no
//     longer hold jobs expiring within SweepInterval (the jobs left there are kept for long,
//     like dead letters, or are still live: the full walk takes those).
//     The full walk finds the front: the first window of each of its walks that holds jobs
//     expiring within SweepInterval. A walk that finds none starts the head walk at the
//     window of the earliest expiry it saw, when that comes (none: the head walk stops).
//
// sweepWindow bounds the jobs one sweep transaction looks at, so a sweep never holds
// SQLite's single writer (or PostgreSQL row locks) for long; sweepPass bounds the windows of
// one pass of either walk, so a long walk does not hold up promotion and rescue.
//
// sweepIdlePause paces the walks where they find nothing to delete: a pass that deleted
// nothing is followed by a rest of sweepIdlePause times its own length, so that walking jobs
// which have not expired takes at most a hundredth of the time of whoever walks them (the
// leader and the database). Unpaced, the walk read the windows of a table of 10 million
// retained jobs back to back and took more CPU than the jobs being worked; at a twentieth it
// still raised the p99 of the jobs started meanwhile by 1–2 ms on both stores
// (docs/benchmarks.md#at-scale). A walk through 10 million retained jobs so takes about a
// quarter of an hour: it is there for the jobs the head walk leaves (kept longer, ended out of
// order), and an expired job is hidden from reads until it is deleted. A pass that deleted
// jobs is followed by the next at once: expired jobs are a backlog.
//
// sweepHeadRest is the least rest between two laps of the head walk: each lap reads the window
// at the front at least once, and deletes what expired in about this long.
const (
	sweepWindow    = 5000
	sweepPass      = 20
	sweepIdlePause = 99
	sweepHeadRest  = 500 * time.Millisecond
)

// ResultTTLer is a Unit whose kind sets how long its completed and canceled jobs are kept.
type ResultTTLer interface {
	// ResultTTL is the kind's retention; 0 defers to the engine's.
	ResultTTL() time.Duration
}

// Retention is how long a job that ends in state is kept: the dead-letter retention for a
// failed job; otherwise the job's own result TTL, then its kind's (u, which may be nil), then
// the engine's.
func (e *Engine) Retention(row *hoppertype.JobRow, u Unit, state hoppertype.JobState) time.Duration {
	if state == hoppertype.StateFailed {
		return e.cfg.DeadLetterRetention
	}
	if row != nil && row.ResultTTL > 0 {
		return row.ResultTTL
	}
	if k, ok := u.(ResultTTLer); ok {
		if d := k.ResultTTL(); d > 0 {
			return d
		}
	}
	return e.cfg.ResultTTL
}

// ExpiresAt is when a job that ends in state now may be removed; zero for a state that is
// not terminal. Every path that ends a job (local outcomes, remote workers' Complete and
// Fail, cancels) takes its expiry from here.
func (e *Engine) ExpiresAt(row *hoppertype.JobRow, u Unit, state hoppertype.JobState) time.Time {
	if !state.Terminal() {
		return time.Time{}
	}
	return e.clock.Now().Add(e.Retention(row, u, state))
}

// stampExpiry sets the expiry of an outcome that ends its job, unless it has one.
func (e *Engine) stampExpiry(p *store.FinishParams, row *hoppertype.JobRow, u Unit) {
	if p.ExpiresAt.IsZero() {
		p.ExpiresAt = e.ExpiresAt(row, u, p.State)
	}
}

// sweep runs the passes of the sweep's walks that are due (see sweepWindow) while this
// process leads, and returns when the next is due.
func (m *maintainer) sweep(ctx context.Context, now time.Time) (time.Time, error) {
	w := &m.sweeping
	if w.headKnown && !now.Before(w.headAt) {
		next, err := m.sweepHead(ctx, now)
		if err != nil {
			return time.Time{}, err
		}
		w.headAt = next
	}
	if !now.Before(w.fullAt) {
		next, err := m.sweepFull(ctx, now)
		if err != nil {
			return time.Time{}, err
		}
		w.fullAt = next
	}
	if w.headKnown && w.headAt.Before(w.fullAt) {
		return w.headAt, nil
	}
	return w.fullAt, nil
}

// sweepWalks is where the sweep's two walks are, for the maintainer's run loop.
type sweepWalks struct {
	from  string    // where the full walk goes on
	began time.Time // when this walk of the table began (store time)
	found bool      // the full walk found the front in this walk of the table
	// The earliest expiry this walk of the table saw, and the window where.
	earliest     time.Time
	earliestFrom string
	fullAt       time.Time // when the full walk's next pass is due

	headKnown bool      // a full walk found the front: the head walk runs
	head      string    // the front of the expiring jobs: where the head walk's laps start
	headAt    time.Time // when the head walk's next pass is due
	lapping   bool      // a lap stopped at sweepPass windows and goes on from at
	at        string    // where the lap goes on
	end       string    // where the last lap ended
	pinned    bool      // the lap found the front: it moves head no further
	dry       int       // windows in a row the lap deleted nothing in
	soonest   time.Time // the earliest expiry the lap saw
}

// window sweeps one window after from; soon says whether any of its jobs that are left expire
// within SweepInterval.
func (m *maintainer) window(ctx context.Context, from string) (res *store.SweepResult, soon bool, err error) {
	now := m.e.store.Now()
	res, err = m.e.store.JobSweepExpired(ctx, &store.SweepParams{Now: now, After: from, Scan: sweepWindow})
	if err != nil {
		return nil, false, err
	}
	return res, !res.Soonest.IsZero() && res.Soonest.Before(now.Add(m.e.cfg.SweepInterval)), nil
}

// sweepFull is a pass of the full walk. It returns when the next is due: at once after a pass
// that deleted jobs (the maintainer comes back after its other duties), after a rest after one
// that deleted none (sweepIdlePause), and SweepInterval after now once the walk reached the end
// of the table (the next walk starts at the front). The walk goes on from where a pass stopped.
func (m *maintainer) sweepFull(ctx context.Context, now time.Time) (next time.Time, err error) {
	w := &m.sweeping
	start := m.e.clock.Now()
	total := 0
	defer m.logSwept(&total)
	for range sweepPass {
		if ctx.Err() != nil || !m.e.leader.leading() {
			return now.Add(m.e.cfg.SweepInterval), nil
		}
		from := w.from
		if from == "" {
			w.began = m.e.store.Now()
		}
		res, soon, err := m.window(ctx, from)
		if err != nil {
			return time.Time{}, err
		}
		total += res.Deleted
		if soon && !w.found {
			// The front: the head walk's laps start here from now on.
			w.found, w.headKnown, w.head, w.lapping, w.headAt = true, true, from, false, now
			w.end = max(w.end, from) // where the laps end stays, unless the front passed it
		}
		if e := store.Earlier(w.earliest, res.Soonest); !e.Equal(w.earliest) {
			w.earliest, w.earliestFrom = e, from
		}
		w.from = res.Next
		if res.Next == "" {
			if !w.found {
				// Nothing expires soon. The head walk's first lap starts at the window of the
				// earliest expiry the walk saw, when it comes: jobs that have just begun to
				// expire are the front, found before the next walk comes round.
				w.headKnown, w.head, w.end, w.lapping = !w.earliest.IsZero(), w.earliestFrom, w.earliestFrom, false
				w.headAt = m.onClock(w.earliest)
			}
			w.found, w.earliest = false, time.Time{}
			m.mu.Lock()
			m.swept = w.began
			m.mu.Unlock()
			m.pruneStats(ctx)
			return now.Add(m.e.cfg.SweepInterval), nil // the walk is done; the next one starts at the front
		}
	}
	return m.paced(now, start, total), nil
}

// sweepHead is a pass of the head walk (see sweepWindow). A lap starts at the front and
// deletes the expired jobs of each window. Until it pins the front (the first window left
// holding jobs that expire within SweepInterval), the front moves past each window it reads.
// It ends at the first window from where the last lap ended that deleted nothing and either
// holds jobs expiring soon or comes after the front (jobs expire in id order: nothing after
// it is due), or at the end of the table. A lap longer than a pass goes on in the next.
func (m *maintainer) sweepHead(ctx context.Context, now time.Time) (time.Time, error) {
	w := &m.sweeping
	start := m.e.clock.Now()
	total := 0
	defer m.logSwept(&total)
	if !w.lapping {
		w.at, w.pinned, w.soonest, w.dry = w.head, false, time.Time{}, 0
	}
	for range sweepPass {
		if ctx.Err() != nil || !m.e.leader.leading() {
			return now.Add(m.e.cfg.SweepInterval), nil
		}
		res, soon, err := m.window(ctx, w.at)
		if err != nil {
			return time.Time{}, err
		}
		total += res.Deleted
		w.soonest = store.Earlier(w.soonest, res.Soonest)
		pinnedBefore := w.pinned
		if soon {
			w.pinned = true
		} else if !w.pinned && res.Next != "" {
			// Nothing left here expires soon: the front moves on to the next window. (The
			// last window of the table stays the front: new jobs fill it.)
			w.head = res.Next
		}
		if res.Deleted == 0 {
			w.dry++
		} else {
			w.dry = 0
		}
		// Windows before where the last lap ended hold the jobs left behind the front
		// (retried or ended late) and may hold nothing due yet: the lap goes on past them.
		// A lap also ends after sweepPass windows in a row with nothing to delete past the
		// front, wherever the last one ended: a bound on what a lap reads when jobs stopped
		// ending in id order, whatever else holds.
		if res.Next == "" || (res.Deleted == 0 && (soon || pinnedBefore) && (w.at >= w.end || w.dry >= sweepPass)) {
			w.lapping, w.end = false, w.at
			return m.lapRest(now, start, total, w.soonest), nil
		}
		w.at = res.Next
	}
	w.lapping = true
	return m.paced(now, start, total), nil
}

// lapRest is when the head walk's next lap is due after one that ended: when the earliest
// expiry the lap saw comes (soonest, in the store's time) but within SweepInterval of now,
// and in any case no sooner than sweepHeadRest after now, nor, after a lap that deleted
// nothing, than its paced rest.
func (m *maintainer) lapRest(now, start time.Time, total int, soonest time.Time) time.Time {
	next := now.Add(m.e.cfg.SweepInterval)
	if at := m.onClock(soonest); !soonest.IsZero() && at.Before(next) {
		next = at
	}
	rest := min(sweepHeadRest, m.e.cfg.SweepInterval)
	return maxTime(next, m.paced(now, start, total), m.e.clock.Now().Add(rest))
}

// paced is when a walk's next pass is due after one that stopped at sweepPass windows: at once
// (now) when it deleted jobs, else after sweepIdlePause times its length.
func (m *maintainer) paced(now, start time.Time, total int) time.Time {
	if total > 0 {
		return now
	}
	end := m.e.clock.Now()
	return end.Add(sweepIdlePause * end.Sub(start))
}

func (m *maintainer) logSwept(total *int) {
	if *total > 0 {
		m.e.log.Debug("swept expired jobs", "jobs", *total)
	}
}

// onClock is the time on the engine's clock when the store's clock shows t: expiries are the
// store's times, the maintainer's timers the engine's.
func (m *maintainer) onClock(t time.Time) time.Time {
	return m.e.clock.Now().Add(t.Sub(m.e.store.Now()))
}

func maxTime(t time.Time, more ...time.Time) time.Time {
	for _, u := range more {
		if u.After(t) {
			t = u
		}
	}
	return t
}

// statsPruneEvery is how often the leader deletes the minute stats older than
// hoppertype.StatsRetention: their rows are kept a week, so an hour late is nothing.
const statsPruneEvery = time.Hour

// pruneStats deletes the minute stats older than hoppertype.StatsRetention, after a complete
// walk of the sweep, at most every statsPruneEvery. A failure only delays it to the next walk:
// it must not hold up the duties that matter (rescues, promotion).
func (m *maintainer) pruneStats(ctx context.Context) {
	now := m.e.store.Now()
	if !m.prunedAt.IsZero() && now.Sub(m.prunedAt) < statsPruneEvery {
		return
	}
	n, err := m.e.store.StatsPrune(ctx, now.Add(-hoppertype.StatsRetention))
	if err != nil {
		m.e.log.Warn("prune job stats (retried after the next sweep)", "err", err)
		return
	}
	m.prunedAt = now
	if n > 0 {
		m.e.log.Debug("pruned job stats", "rows", n)
	}
}
