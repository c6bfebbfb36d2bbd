package postgres

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.Sweeper = (*Store)(nil)

// sweepSQL deletes a batch of expired jobs; the statement-level delete trigger removes their
// events, attempts and idempotency keys with three set-based statements. Rows another
// transaction holds are left for the next sweep.
const sweepSQL = `WITH picked AS MATERIALIZED (
	SELECT id FROM {schema}.jobs WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2
	FOR UPDATE SKIP LOCKED
)
DELETE FROM {schema}.jobs j USING picked WHERE j.id = picked.id`

// JobSweepExpired deletes up to limit expired jobs in one statement.
func (s *Store) JobSweepExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, s.sql(sweepSQL), now, limitOr(limit, 500))
	if err != nil {
		return 0, s.wrap(err, "sweep expired jobs")
	}
	return int(tag.RowsAffected()), nil
}
