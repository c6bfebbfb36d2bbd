package sqlite

import (
	"context"
	"database/sql"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// dueSQL reads the leader lease and what the leader's duties have next in one read (index
// seeks on jobs_lease, jobs_scheduled, jobs_deadline, schedules_due and
// idempotency_keys_expires; the job expiries of the first DueParams.Head() jobs by id, an
// index range). ?1 is DueParams.ExpiringAfter, ?2 DueParams.Head(); the later of it and the lease row's
// swept_before counts.
var dueSQL = `SELECT l.node_id, l.term, l.expires_at,
	EXISTS (SELECT 1 FROM jobs WHERE state = 'running'),
	(SELECT min(run_at) FROM jobs WHERE state = 'scheduled'),
	(SELECT min(deadline_at) FROM jobs WHERE state = 'suspended'),
	(SELECT min(next_fire_at) FROM schedules WHERE paused = 0),
	(SELECT min(h.expires_at) FROM (SELECT expires_at FROM jobs ORDER BY id LIMIT ?2) h
	 WHERE h.expires_at > max(?1, coalesce(l.swept_before, 0))),
	(SELECT min(expires_at) FROM idempotency_keys WHERE expires_at > max(?1, coalesce(l.swept_before, 0)))
FROM (SELECT 1) LEFT JOIN leader l ON l.id = 1`

// LeaderDue reads the leader lease and when the leader's duties next have work, on the reader:
// it writes nothing.
func (s *Store) LeaderDue(ctx context.Context, p *store.DueParams) (*store.Due, error) {
	var (
		node                                  sql.NullString
		term, lease                           sql.NullInt64
		runAt, deadline, fire, jobExp, keyExp sql.NullInt64
		due                                   store.Due
	)
	after := int64(0)
	if !p.ExpiringAfter.IsZero() {
		after = micros(p.ExpiringAfter)
	}
	err := s.reader.QueryRowContext(ctx, dueSQL, after, p.Head()).Scan(&node, &term, &lease, &due.Running,
		&runAt, &deadline, &fire, &jobExp, &keyExp)
	if err != nil {
		return nil, wrap(err, "read what the leader has due")
	}
	if node.Valid {
		due.Leader = &hoppertype.Leadership{NodeID: node.String, Term: term.Int64, ExpiresAt: fromMicros(lease.Int64)}
	}
	due.NextRunAt, due.NextDeadline, due.NextFire = nullTime(runAt), nullTime(deadline), nullTime(fire)
	due.NextExpiry = store.Earlier(nullTime(jobExp), nullTime(keyExp))
	return &due, nil
}
