package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.StatsStore = (*Store)(nil)

// The minute stats (migrations/0014_job_stats.sql) are written by the statements that insert
// and finish jobs, as a data-modifying CTE of theirs: one upsert per minute, queue and kind of
// the batch, into the row of this backend (shard), in the statement's own transaction.

// minuteOf is the start of the minute of the timestamptz t, whatever the session's time zone.
func minuteOf(t string) string { return `to_timestamp(floor(extract(epoch FROM ` + t + `) / 60) * 60)` }

// statsEnqueuedSQL counts the rows of insertSQL's ins.
var statsEnqueuedSQL = `INSERT INTO {schema}.job_stats AS s (minute, queue, kind, shard, enqueued)
	SELECT ` + minuteOf("clk.now") + `, ins.queue, ins.kind, pg_backend_pid(), count(*)
	FROM ins, clk GROUP BY 1, 2, 3 ORDER BY 2, 3
	ON CONFLICT (minute, queue, kind, shard) DO UPDATE SET enqueued = s.enqueued + excluded.enqueued`

// statsFinishedSQL counts the rows of finishSQL's done.
var statsFinishedSQL = `INSERT INTO {schema}.job_stats AS s (minute, queue, kind, shard, completed, failed,
		retried, w0, w1, w2, w3, w4, w5, w6, w7, w8, w9)
	SELECT ` + minuteOf("done.now") + `, done.queue, done.kind, pg_backend_pid(),
		count(*) FILTER (WHERE counter = 'completed'), count(*) FILTER (WHERE counter = 'failed'),
		count(*) FILTER (WHERE counter = 'retried'),
		count(*) FILTER (WHERE wb = 0), count(*) FILTER (WHERE wb = 1), count(*) FILTER (WHERE wb = 2),
		count(*) FILTER (WHERE wb = 3), count(*) FILTER (WHERE wb = 4), count(*) FILTER (WHERE wb = 5),
		count(*) FILTER (WHERE wb = 6), count(*) FILTER (WHERE wb = 7), count(*) FILTER (WHERE wb = 8),
		count(*) FILTER (WHERE wb = 9)
	FROM done GROUP BY 1, 2, 3
	HAVING count(*) FILTER (WHERE counter <> '' OR wb IS NOT NULL) > 0 ORDER BY 2, 3
	ON CONFLICT (minute, queue, kind, shard) DO UPDATE SET completed = s.completed + excluded.completed,
		failed = s.failed + excluded.failed, retried = s.retried + excluded.retried,
		w0 = s.w0 + excluded.w0, w1 = s.w1 + excluded.w1, w2 = s.w2 + excluded.w2,
		w3 = s.w3 + excluded.w3, w4 = s.w4 + excluded.w4, w5 = s.w5 + excluded.w5,
		w6 = s.w6 + excluded.w6, w7 = s.w7 + excluded.w7, w8 = s.w8 + excluded.w8,
		w9 = s.w9 + excluded.w9`

// counterSQL is store.FinishParams.Counter of finishSQL's item u, in SQL.
var counterSQL = func() string {
	retried := make([]string, len(store.RetriedOutcomes))
	for i, o := range store.RetriedOutcomes {
		retried[i] = "'" + string(o) + "'"
	}
	return `CASE WHEN u.state IN ('completed', 'failed') THEN u.state
		WHEN u.state IN ('scheduled', 'queued') AND u.outcome IN (` + strings.Join(retried, ", ") + `) THEN 'retried'
		ELSE '' END`
}()

// waitBoundsUS are hoppertype.WaitBounds in microseconds, for width_bucket.
var waitBoundsUS = func() []float64 {
	out := make([]float64, len(hoppertype.WaitBounds))
	for i, b := range hoppertype.WaitBounds {
		out[i] = float64(b.Microseconds())
	}
	return out
}()

// StatsList returns the aggregates from p.Since's minute on, the shards summed.
func (s *Store) StatsList(ctx context.Context, p *store.StatsParams) ([]*hoppertype.MinuteStats, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT minute, queue, kind, sum(enqueued)::bigint, sum(completed)::bigint,
		sum(failed)::bigint, sum(retried)::bigint, sum(w0)::bigint, sum(w1)::bigint, sum(w2)::bigint,
		sum(w3)::bigint, sum(w4)::bigint, sum(w5)::bigint, sum(w6)::bigint, sum(w7)::bigint,
		sum(w8)::bigint, sum(w9)::bigint
		FROM {schema}.job_stats WHERE minute >= $1 AND ($2 = '' OR queue = $2) AND ($3 = '' OR kind = $3)
		GROUP BY minute, queue, kind ORDER BY minute, queue, kind`), p.Since.Truncate(time.Minute), p.Queue, p.Kind)
	if err != nil {
		return nil, s.wrap(err, "list job stats")
	}
	defer rs.Close()
	var out []*hoppertype.MinuteStats
	for rs.Next() {
		r := &hoppertype.MinuteStats{}
		dest := []any{&r.Minute, &r.Queue, &r.Kind, &r.Enqueued, &r.Completed, &r.Failed, &r.Retried}
		for i := range r.Wait {
			dest = append(dest, &r.Wait[i])
		}
		if err := rs.Scan(dest...); err != nil {
			return nil, s.wrap(err, "list job stats")
		}
		r.Minute = r.Minute.UTC()
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, s.wrap(err, "list job stats")
	}
	return out, nil
}

// StatsPrune deletes the aggregates of the minutes before before.
func (s *Store) StatsPrune(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.job_stats WHERE minute < $1`), before)
	if err != nil {
		return 0, s.wrap(err, "prune job stats")
	}
	return tag.RowsAffected(), nil
}
