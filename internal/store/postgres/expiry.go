package postgres

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

var _ store.Sweeper = (*Store)(nil)

// sweepWindowSQL reads a window of the id walk: the last id of the (at most) $2 jobs after $1,
// how many there are, how many of them have expired by $3 and the earliest expiry of the
// others.
const sweepWindowSQL = `SELECT max(id), count(*), count(*) FILTER (WHERE expires_at <= coalesce($3::timestamptz, now())),
	min(expires_at) FILTER (WHERE expires_at > coalesce($3::timestamptz, now())), count(*) FILTER (WHERE expires_at IS NULL)
	FROM (SELECT id, expires_at FROM {schema}.jobs WHERE id > $1 ORDER BY id LIMIT $2) w`

// sweepSQL deletes the expired jobs of the window ($1, $2] of the id walk, except those whose
// idempotency key is still live (the key must de-duplicate for its whole retention); the
// statement-level delete trigger removes their events, attempts and idempotency keys with
// three set-based statements. Rows another transaction holds are left for the next walk. $3 is
// now.
//
// The window's bounds are given, not read in the same statement: joined to a window read in a
// CTE, the jobs were scanned whole when ANALYZE's statistics said that few had expired (the
// usual case), a sequential scan of the table for each window (137 ms with 200,000 jobs,
// against 1–2 ms for the window's range of the primary key; docs/benchmarks.md#at-scale).
const sweepSQL = `WITH picked AS MATERIALIZED (
	SELECT j.id FROM {schema}.jobs j
	WHERE j.id > $1 AND j.id <= $2 AND j.expires_at <= coalesce($3::timestamptz, now())
	  AND NOT EXISTS (SELECT 1 FROM {schema}.idempotency_keys k
	                  WHERE k.job_id = j.id AND k.expires_at > coalesce($3::timestamptz, now()))
	FOR UPDATE OF j SKIP LOCKED
)
DELETE FROM {schema}.jobs j USING picked WHERE j.id = picked.id`

// JobSweepExpired deletes the expired jobs of one window of the id walk; a window without any
// costs one read.
func (s *Store) JobSweepExpired(ctx context.Context, p *store.SweepParams) (*store.SweepResult, error) {
	scan := limitOr(p.Scan, 5000)
	var last *string
	var seen, expired, unended int64
	var soonest *time.Time
	err := s.pool.QueryRow(ctx, s.sql(sweepWindowSQL), p.After, scan, nullTime(p.Now)).Scan(&last, &seen, &expired, &soonest, &unended)
	if err != nil {
		return nil, s.wrap(err, "sweep expired jobs")
	}
	res := &store.SweepResult{Expired: int(expired), Unended: int(unended)}
	if soonest != nil {
		res.Soonest = soonest.UTC()
	}
	if last != nil && seen == int64(scan) {
		res.Next = *last
	}
	if expired == 0 {
		return res, nil
	}
	tag, err := s.pool.Exec(ctx, s.sql(sweepSQL), p.After, *last, nullTime(p.Now))
	if err != nil {
		return nil, s.wrap(err, "sweep expired jobs")
	}
	res.Deleted = int(tag.RowsAffected())
	return res, nil
}

// SweepSettled returns the saved settled windows of the sweep, in id order.
func (s *Store) SweepSettled(ctx context.Context) ([]store.SettledWindow, error) {
	rows, err := s.pool.Query(ctx, s.sql(`SELECT after_id, last_id, soonest FROM {schema}.sweep_settled ORDER BY after_id`))
	if err != nil {
		return nil, s.wrap(err, "read settled sweep windows")
	}
	ws, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.SettledWindow, error) {
		var w store.SettledWindow
		err := row.Scan(&w.After, &w.Last, &w.Soonest)
		w.Soonest = w.Soonest.UTC()
		return w, err
	})
	if err != nil {
		return nil, s.wrap(err, "read settled sweep windows")
	}
	return ws, nil
}

// SweepSettle replaces the saved settled windows of the sweep.
func (s *Store) SweepSettle(ctx context.Context, ws []store.SettledWindow) error {
	after, last, soonest := make([]string, len(ws)), make([]string, len(ws)), make([]time.Time, len(ws))
	for i, w := range ws {
		after[i], last[i], soonest[i] = w.After, w.Last, w.Soonest
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.sql(`DELETE FROM {schema}.sweep_settled`)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, s.sql(`INSERT INTO {schema}.sweep_settled (after_id, last_id, soonest)
			SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])`), after, last, soonest)
		return err
	})
	if err != nil {
		return s.wrap(err, "save settled sweep windows")
	}
	return nil
}
