package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.StatsStore = (*Store)(nil)

// statsSQL adds one transaction's aggregates of a minute, queue and kind to the stored row.
const statsSQL = `INSERT INTO job_stats (minute, queue, kind, enqueued, completed, failed, retried,
	w0, w1, w2, w3, w4, w5, w6, w7, w8, w9)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (minute, queue, kind) DO UPDATE SET enqueued = enqueued + excluded.enqueued,
	completed = completed + excluded.completed, failed = failed + excluded.failed,
	retried = retried + excluded.retried, w0 = w0 + excluded.w0, w1 = w1 + excluded.w1,
	w2 = w2 + excluded.w2, w3 = w3 + excluded.w3, w4 = w4 + excluded.w4, w5 = w5 + excluded.w5,
	w6 = w6 + excluded.w6, w7 = w7 + excluded.w7, w8 = w8 + excluded.w8, w9 = w9 + excluded.w9`

// writeStats upserts a batch's rows with the prepared statsSQL st, inside the batch's
// transaction.
func writeStats(ctx context.Context, st *sql.Stmt, b *store.StatsBatch) error {
	for _, r := range b.Rows() {
		args := []any{micros(r.Minute), r.Queue, r.Kind, r.Enqueued, r.Completed, r.Failed, r.Retried}
		for _, w := range r.Wait {
			args = append(args, w)
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("add job stats of queue %q kind %q: %w", r.Queue, r.Kind, err)
		}
	}
	return nil
}

// StatsList returns the aggregates from p.Since's minute on.
func (s *Store) StatsList(ctx context.Context, p *store.StatsParams) ([]*hoppertype.MinuteStats, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT minute, queue, kind, enqueued, completed, failed, retried,
		w0, w1, w2, w3, w4, w5, w6, w7, w8, w9 FROM job_stats
		WHERE minute >= ?1 AND (?2 = '' OR queue = ?2) AND (?3 = '' OR kind = ?3)
		ORDER BY minute, queue, kind`, micros(p.Since.Truncate(time.Minute)), p.Queue, p.Kind)
	if err != nil {
		return nil, fmt.Errorf("list job stats: %w", err)
	}
	defer rows.Close()
	var out []*hoppertype.MinuteStats
	for rows.Next() {
		r := &hoppertype.MinuteStats{}
		var minute int64
		dest := []any{&minute, &r.Queue, &r.Kind, &r.Enqueued, &r.Completed, &r.Failed, &r.Retried}
		for i := range r.Wait {
			dest = append(dest, &r.Wait[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("list job stats: %w", err)
		}
		r.Minute = fromMicros(minute)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list job stats: %w", err)
	}
	return out, nil
}

// StatsPrune deletes the aggregates of the minutes before before.
func (s *Store) StatsPrune(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM job_stats WHERE minute < ?`, micros(before))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("prune job stats: %w", err)
	}
	return n, nil
}
