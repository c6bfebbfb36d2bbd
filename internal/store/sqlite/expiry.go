package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.Sweeper = (*Store)(nil)

// JobSweepExpired deletes the expired jobs of one window of the id walk in one write
// transaction; the jobs_history_delete trigger takes their events, attempts and idempotency
// keys along.
func (s *Store) JobSweepExpired(ctx context.Context, p *store.SweepParams) (*store.SweepResult, error) {
	res := &store.SweepResult{}
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		scan := limitOr(p.Scan, 5000)
		var last sql.NullString
		var seen int
		err := tx.QueryRowContext(ctx, `SELECT max(id), count(*) FROM (
			SELECT id FROM jobs WHERE id > ?1 ORDER BY id LIMIT ?2)`, p.After, scan).Scan(&last, &seen)
		if err != nil || seen == 0 {
			return err
		}
		// A job stays while its idempotency key is live: the key de-duplicates for its whole
		// retention, and a deleted job would take it along (jobs_history_delete).
		del, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE id > ?1 AND id <= ?2 AND expires_at <= ?3
			AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.job_id = jobs.id AND k.expires_at > ?3)`,
			p.After, last.String, micros(p.Now))
		if err != nil {
			return err
		}
		n, err := del.RowsAffected()
		res.Deleted = int(n)
		if seen == scan {
			res.Next = last.String
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sweep expired jobs: %w", err)
	}
	return res, nil
}
