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

// sweepWindow bounds the jobs one sweep transaction looks at, so a sweep never holds
// SQLite's single writer (or PostgreSQL row locks) for long; sweepPass bounds the windows of
// one maintainer pass, so a long walk does not hold up promotion and rescue.
//
// sweepIdlePause paces the walk where it finds nothing to delete: a pass that deleted nothing
// is followed by a rest of sweepIdlePause times its own length, so that walking jobs which
// have not expired takes at most a twentieth of the time of whoever walks them (the leader
// and the database). Unpaced, the walk read the windows of a table of 10 million retained
// jobs back to back and took more CPU than the jobs being worked (docs/benchmarks.md#at-scale).
// A pass that deleted jobs is followed by the next at once: expired jobs are a backlog.
const (
	sweepWindow    = 5000
	sweepPass      = 20
	sweepIdlePause = 19
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

// sweep walks the jobs table a window at a time, deleting the expired jobs of each window,
// while this process leads. It returns when the next pass is due: at once after a pass that
// deleted jobs (the maintainer comes back after its other duties), after a rest after one that
// found none (sweepIdlePause), and SweepInterval after now once the walk reached the end of
// the table (the next walk starts at the front). The walk goes on from where a pass stopped.
func (m *maintainer) sweep(ctx context.Context, now time.Time) (next time.Time, err error) {
	sw := m.e.store
	start := m.e.clock.Now()
	total := 0
	defer func() {
		if total > 0 {
			m.e.log.Debug("swept expired jobs", "jobs", total)
		}
	}()
	for range sweepPass {
		if ctx.Err() != nil || !m.e.leader.leading() {
			return now.Add(m.e.cfg.SweepInterval), nil
		}
		res, err := sw.JobSweepExpired(ctx, &store.SweepParams{Now: m.e.store.Now(), After: m.sweepFrom, Scan: sweepWindow})
		if err != nil {
			return time.Time{}, err
		}
		total += res.Deleted
		m.sweepFrom = res.Next
		if res.Next == "" {
			m.pruneStats(ctx)
			return now.Add(m.e.cfg.SweepInterval), nil // the walk is done; the next one starts at the front
		}
	}
	if total > 0 {
		return now, nil
	}
	end := m.e.clock.Now()
	return end.Add(sweepIdlePause * end.Sub(start)), nil
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
