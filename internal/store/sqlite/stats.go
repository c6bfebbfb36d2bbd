package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
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

// finishedBatch lists the attempts a finish transaction ended, as the JSON array
// statsFinishedSQL reads: [{"i": id, "c": counter, "w": 1 when the wait counts}, …]. One
// statement then counts them all by queue and kind, reading each job's row by its key, so
// the per-job cost is a few bytes of JSON rather than a statement.
type finishedBatch struct{ json []byte }

func (b *finishedBatch) add(p *store.FinishParams) {
	c := p.Counter()
	countsWait := p.RunAt.IsZero()
	if c == store.StatsNone && !countsWait {
		return
	}
	if b.json == nil {
		b.json = append(make([]byte, 0, 64*8), '[')
	} else {
		b.json = append(b.json, ',')
	}
	b.json = append(b.json, `{"i":`...)
	b.json = strconv.AppendQuote(b.json, p.ID) // ids are text the client checked; quoting keeps the JSON valid whatever they hold
	b.json = append(b.json, `,"c":"`...)
	b.json = append(b.json, c...)
	if countsWait {
		b.json = append(b.json, `","w":1}`...)
	} else {
		b.json = append(b.json, `","w":0}`...)
	}
}

// write counts the batch's attempts with the prepared statsFinishedSQL st.
func (b *finishedBatch) write(ctx context.Context, st *sql.Stmt, now time.Time) error {
	if b.json == nil {
		return nil
	}
	if _, err := st.ExecContext(ctx, micros(now.UTC().Truncate(time.Minute)), string(append(b.json, ']'))); err != nil {
		return fmt.Errorf("add job stats: %w", err)
	}
	return nil
}

// statsFinishedSQL adds a finish transaction's ends ($2, finishedBatch's JSON) to the stats
// of minute $1. A job's wait is started_at − run_at: the run_at it was claimed at, since an
// end that counts its wait did not change it. The WHERE true lets SQLite's parser tell the
// upsert's ON CONFLICT from a join's ON.
var statsFinishedSQL = `INSERT INTO job_stats (minute, queue, kind, completed, failed, retried,
	w0, w1, w2, w3, w4, w5, w6, w7, w8, w9)
	SELECT ?1, queue, kind, count(*) FILTER (WHERE c = 'completed'),
		count(*) FILTER (WHERE c = 'failed'), count(*) FILTER (WHERE c = 'retried'),
		count(*) FILTER (WHERE b = 0), count(*) FILTER (WHERE b = 1), count(*) FILTER (WHERE b = 2),
		count(*) FILTER (WHERE b = 3), count(*) FILTER (WHERE b = 4), count(*) FILTER (WHERE b = 5),
		count(*) FILTER (WHERE b = 6), count(*) FILTER (WHERE b = 7), count(*) FILTER (WHERE b = 8),
		count(*) FILTER (WHERE b = 9)
	FROM (SELECT j.queue, j.kind, json_extract(e.value, '$.c') AS c,
		CASE WHEN json_extract(e.value, '$.w') = 1 AND j.started_at IS NOT NULL
		THEN ` + waitBucketSQL("j.started_at - j.run_at") + ` END AS b
		FROM json_each(?2) AS e JOIN jobs AS j ON j.id = json_extract(e.value, '$.i'))
	WHERE true GROUP BY queue, kind
	ON CONFLICT (minute, queue, kind) DO UPDATE SET
	completed = completed + excluded.completed, failed = failed + excluded.failed,
	retried = retried + excluded.retried, w0 = w0 + excluded.w0, w1 = w1 + excluded.w1,
	w2 = w2 + excluded.w2, w3 = w3 + excluded.w3, w4 = w4 + excluded.w4, w5 = w5 + excluded.w5,
	w6 = w6 + excluded.w6, w7 = w7 + excluded.w7, w8 = w8 + excluded.w8, w9 = w9 + excluded.w9`

// waitBucketSQL is the bucket of hoppertype.WaitBounds the wait us (microseconds) falls in,
// as hoppertype.WaitBucket computes it.
func waitBucketSQL(us string) string {
	var b strings.Builder
	b.WriteString("CASE")
	for i, bound := range hoppertype.WaitBounds {
		fmt.Fprintf(&b, " WHEN %s < %d THEN %d", us, bound.Microseconds(), i)
	}
	fmt.Fprintf(&b, " ELSE %d END", len(hoppertype.WaitBounds))
	return b.String()
}
