package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.Sweeper = (*Store)(nil)

// sweepChunk bounds the jobs one write of the sweep deletes: 5,000 jobs with their history held
// the writer for 90 ms in the soak (docs/benchmarks.md#at-scale), and the claims committed in
// the same group waited for it.
const sweepChunk = 500

// sweepBoundsSQL reads, on a reader, the id of every ?4th expired job of the window (?1, ?2]:
// where the chunks of the window's deletes end, so that each write deletes a range of ids.
const sweepBoundsSQL = `SELECT id FROM (
	SELECT id, row_number() OVER (ORDER BY id) AS n FROM jobs WHERE id > ?1 AND id <= ?2 AND expires_at <= ?3)
	WHERE n % ?4 = 0 ORDER BY id`

// sweepDeleteSQL deletes the expired jobs of the ids (?1, ?2]. A job stays while its
// idempotency key is live: the key de-duplicates for its whole retention, and a deleted job
// would take it along (jobs_history_delete).
const sweepDeleteSQL = `DELETE FROM jobs WHERE id > ?1 AND id <= ?2 AND expires_at <= ?3
	AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.job_id = jobs.id AND k.expires_at > ?3)`

// sweepWindowSQL reads a window of the id walk: its last id, its size, how many of its jobs
// have expired, the earliest expiry of the others and how many have none.
const sweepWindowSQL = `SELECT max(id), count(*), coalesce(sum(expires_at <= ?3), 0),
	min(CASE WHEN expires_at > ?3 THEN expires_at END), coalesce(sum(expires_at IS NULL), 0) FROM (
	SELECT id, expires_at FROM jobs WHERE id > ?1 ORDER BY id LIMIT ?2)`

// chunkBounds returns where the deletes of the window (from, to] end: one range when it holds
// at most sweepChunk expired jobs, else one per sweepChunk of them, read on a reader.
func (s *Store) chunkBounds(ctx context.Context, from, to string, now time.Time, expired int) ([]string, error) {
	if expired <= sweepChunk {
		return []string{to}, nil
	}
	rows, err := s.reader.QueryContext(ctx, sweepBoundsSQL, from, to, micros(now), sweepChunk)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var bounds []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		bounds = append(bounds, id)
	}
	if len(bounds) == 0 || bounds[len(bounds)-1] != to {
		bounds = append(bounds, to)
	}
	return bounds, rows.Err()
}

// JobSweepExpired deletes the expired jobs of one window of the id walk. The window is read on
// a reader, and only a window with expired jobs takes a write transaction, which deletes them
// (the jobs_history_delete trigger takes their events, attempts and idempotency keys along):
// in a store of many jobs, most windows hold none, and reading them in the single writer's
// transactions held up claims and outcomes (a fifth of the writer's time beside a million
// retained jobs; docs/benchmarks.md#at-scale).
func (s *Store) JobSweepExpired(ctx context.Context, p *store.SweepParams) (*store.SweepResult, error) {
	scan := limitOr(p.Scan, 5000)
	var last sql.NullString
	var seen, expired, unended int
	var soonest sql.NullInt64
	err := s.reader.QueryRowContext(ctx, sweepWindowSQL, p.After, scan, micros(p.Now)).Scan(&last, &seen, &expired, &soonest, &unended)
	if err != nil {
		return nil, wrap(err, "sweep expired jobs")
	}
	res := &store.SweepResult{Soonest: nullTime(soonest), Expired: expired, Unended: unended}
	if seen == scan {
		res.Next = last.String
	}
	if expired == 0 {
		return res, nil
	}
	// The window's expired jobs are deleted sweepChunk at a time, each chunk in a write of its
	// own, so that claims and outcomes queued behind the single writer wait for a few
	// milliseconds of deleting, not for all of it.
	bounds, err := s.chunkBounds(ctx, p.After, last.String, p.Now, expired)
	if err != nil {
		return nil, wrap(err, "sweep expired jobs")
	}
	from := p.After
	for _, to := range bounds {
		var n int64
		err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
			del, err := tx.ExecContext(ctx, sweepDeleteSQL, from, to, micros(p.Now))
			if err != nil {
				return err
			}
			n, err = del.RowsAffected()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("sweep expired jobs: %w", err)
		}
		res.Deleted += int(n)
		from = to
	}
	return res, nil
}

// SweepSettled returns the saved settled windows of the sweep, in id order.
func (s *Store) SweepSettled(ctx context.Context) ([]store.SettledWindow, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT after_id, last_id, soonest FROM sweep_settled ORDER BY after_id`)
	if err != nil {
		return nil, wrap(err, "read settled sweep windows")
	}
	defer rows.Close()
	var ws []store.SettledWindow
	for rows.Next() {
		var w store.SettledWindow
		var soonest int64
		if err := rows.Scan(&w.After, &w.Last, &soonest); err != nil {
			return nil, wrap(err, "read settled sweep windows")
		}
		w.Soonest = fromMicros(soonest)
		ws = append(ws, w)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "read settled sweep windows")
	}
	return ws, nil
}

// SweepSettle replaces the saved settled windows of the sweep.
func (s *Store) SweepSettle(ctx context.Context, ws []store.SettledWindow) error {
	err := s.write(ctx, []string{`INSERT INTO sweep_settled (after_id, last_id, soonest) VALUES (?, ?, ?)`},
		func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
			if _, err := tx.ExecContext(ctx, `DELETE FROM sweep_settled`); err != nil {
				return err
			}
			for _, w := range ws {
				if _, err := stmts[0].ExecContext(ctx, w.After, w.Last, micros(w.Soonest)); err != nil {
					return err
				}
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("save settled sweep windows: %w", err)
	}
	return nil
}
