package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.Sweeper = (*Store)(nil)

// sweepWindowSQL reads a window of the id walk: its last id, its size and how many of its jobs
// have expired.
const sweepWindowSQL = `SELECT max(id), count(*), coalesce(sum(expires_at <= ?3), 0) FROM (
	SELECT id, expires_at FROM jobs WHERE id > ?1 ORDER BY id LIMIT ?2)`

// JobSweepExpired deletes the expired jobs of one window of the id walk. The window is read on
// a reader, and only a window with expired jobs takes a write transaction, which deletes them
// (the jobs_history_delete trigger takes their events, attempts and idempotency keys along):
// in a store of many jobs, most windows hold none, and reading them in the single writer's
// transactions held up claims and outcomes (a fifth of the writer's time beside a million
// retained jobs; docs/benchmarks.md#at-scale).
func (s *Store) JobSweepExpired(ctx context.Context, p *store.SweepParams) (*store.SweepResult, error) {
	scan := limitOr(p.Scan, 5000)
	var last sql.NullString
	var seen, expired int
	err := s.reader.QueryRowContext(ctx, sweepWindowSQL, p.After, scan, micros(p.Now)).Scan(&last, &seen, &expired)
	if err != nil {
		return nil, wrap(err, "sweep expired jobs")
	}
	res := &store.SweepResult{}
	if seen == scan {
		res.Next = last.String
	}
	if expired == 0 {
		return res, nil
	}
	err = s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
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
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sweep expired jobs: %w", err)
	}
	return res, nil
}
