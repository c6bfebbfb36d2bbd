package postgres

import (
	"context"

	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.Sweeper = (*Store)(nil)

// sweepSQL deletes the expired jobs of one window of the id walk, except those whose
// idempotency key is still live (the key must de-duplicate for its whole retention); the statement-level delete
// trigger removes their events, attempts and idempotency keys with three set-based
// statements. Rows another transaction holds are left for the next walk. $1 after, $2 scan,
// $3 now.
const sweepSQL = `WITH win AS MATERIALIZED (
	SELECT id FROM {schema}.jobs WHERE id > $1 ORDER BY id LIMIT $2
), picked AS MATERIALIZED (
	SELECT j.id FROM {schema}.jobs j JOIN win ON win.id = j.id
	WHERE j.expires_at <= coalesce($3::timestamptz, now())
	  AND NOT EXISTS (SELECT 1 FROM {schema}.idempotency_keys k
	                  WHERE k.job_id = j.id AND k.expires_at > coalesce($3::timestamptz, now()))
	FOR UPDATE OF j SKIP LOCKED
), del AS (
	DELETE FROM {schema}.jobs j USING picked WHERE j.id = picked.id RETURNING 1
)
SELECT (SELECT max(id) FROM win), (SELECT count(*) FROM win), (SELECT count(*) FROM del)`

// JobSweepExpired deletes the expired jobs of one window of the id walk.
func (s *Store) JobSweepExpired(ctx context.Context, p *store.SweepParams) (*store.SweepResult, error) {
	scan := limitOr(p.Scan, 5000)
	var last *string
	var seen, deleted int64
	err := s.pool.QueryRow(ctx, s.sql(sweepSQL), p.After, scan, nullTime(p.Now)).Scan(&last, &seen, &deleted)
	if err != nil {
		return nil, s.wrap(err, "sweep expired jobs")
	}
	res := &store.SweepResult{Deleted: int(deleted)}
	if seen == int64(scan) && last != nil {
		res.Next = *last
	}
	return res, nil
}
