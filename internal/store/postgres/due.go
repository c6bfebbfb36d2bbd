package postgres

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// dueSQL reads the leader lease and what the leader's duties have next in one statement
// (index seeks on jobs_lease, jobs_scheduled, jobs_deadline, schedules_due and
// idempotency_keys_expires; the job expiries of the first DueParams.Head() jobs by id, a range
// of jobs_pkey). $1 is DueParams.ExpiringAfter (NULL: none), $2 DueParams.Head(); the later of it and the lease
// row's swept_before counts.
var dueSQL = `SELECT l.node_id, l.term, l.expires_at,
	EXISTS (SELECT 1 FROM {schema}.jobs WHERE state = 'running'),
	(SELECT min(run_at) FROM {schema}.jobs WHERE state = 'scheduled'),
	(SELECT min(deadline_at) FROM {schema}.jobs WHERE state = 'suspended'),
	(SELECT min(next_fire_at) FROM {schema}.schedules WHERE NOT paused),
	(SELECT min(h.expires_at) FROM (SELECT expires_at FROM {schema}.jobs ORDER BY id LIMIT $2) h
	 WHERE h.expires_at > greatest($1, l.swept_before, '-infinity'::timestamptz)),
	(SELECT min(expires_at) FROM {schema}.idempotency_keys WHERE expires_at > greatest($1, l.swept_before, '-infinity'::timestamptz))
FROM (SELECT 1) one LEFT JOIN {schema}.leader l ON true`

// LeaderDue reads the leader lease and when the leader's duties next have work: one read-only
// statement.
func (s *Store) LeaderDue(ctx context.Context, p *store.DueParams) (*store.Due, error) {
	var (
		node                                 *string
		term                                 *int64
		lease, runAt, deadline, fire, jobExp *time.Time
		keyExp                               *time.Time
		due                                  store.Due
	)
	err := s.pool.QueryRow(ctx, s.sql(dueSQL), nullTime(p.ExpiringAfter), p.Head()).Scan(&node, &term, &lease, &due.Running,
		&runAt, &deadline, &fire, &jobExp, &keyExp)
	if err != nil {
		return nil, s.wrap(err, "read what the leader has due")
	}
	if node != nil {
		due.Leader = &hoppertype.Leadership{NodeID: *node, Term: *term, ExpiresAt: utc(lease)}
	}
	due.NextRunAt, due.NextDeadline, due.NextFire = utc(runAt), utc(deadline), utc(fire)
	due.NextExpiry = store.Earlier(utc(jobExp), utc(keyExp))
	return &due, nil
}
