package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.Sweeper = (*Store)(nil)

// JobSweepExpired deletes up to limit expired jobs in one write transaction; the
// jobs_history_delete trigger takes their events, attempts and idempotency keys along.
func (s *Store) JobSweepExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int64
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE id IN (
			SELECT id FROM jobs WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2)`, micros(now), limitOr(limit, 500))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sweep expired jobs: %w", err)
	}
	return int(n), nil
}
