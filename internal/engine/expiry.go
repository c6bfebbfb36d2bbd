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

// sweepBatch bounds one sweep transaction, so a sweep never holds SQLite's single writer (or
// PostgreSQL row locks) for long; sweepPass bounds the batches of one maintainer pass, so a
// backlog does not hold up promotion and rescue.
const (
	sweepBatch = 500
	sweepPass  = 20
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

// sweep deletes expired jobs in small batches while this process leads, and reports whether
// it stopped with more left (the maintainer then comes back at once, after its other duties).
func (m *maintainer) sweep(ctx context.Context) (more bool) {
	sw, ok := m.e.store.(store.Sweeper)
	if !ok {
		return false
	}
	total := 0
	defer func() {
		if total > 0 {
			m.e.log.Debug("swept expired jobs", "jobs", total)
		}
	}()
	for range sweepPass {
		if ctx.Err() != nil || !m.e.leader.leading() {
			return false
		}
		n, err := sw.JobSweepExpired(ctx, m.e.store.Now(), sweepBatch)
		if err != nil {
			if ctx.Err() == nil {
				m.e.log.Error("sweep expired jobs", "err", err)
			}
			return false
		}
		total += n
		if n < sweepBatch {
			return false
		}
	}
	return true
}
