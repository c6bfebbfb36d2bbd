package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.DeadLetterStore = (*Store)(nil)

// notReplayed is the condition of a job no replay names as its source: a dead letter not yet
// dealt with.
const notReplayed = "NOT EXISTS (SELECT 1 FROM job_replays r WHERE r.source_job_id = jobs.id AND r.action = 'replay')"

// DeadLetterStats counts the failed jobs that have not expired, those not replayed (with the
// oldest's finish) and those replayed apart.
func (s *Store) DeadLetterStats(ctx context.Context) (*store.DeadLetterStats, error) {
	var st store.DeadLetterStats
	var oldest sql.NullInt64
	err := s.reader.QueryRowContext(ctx, `SELECT count(*) FILTER (WHERE NOT replayed),
		min(finished_at) FILTER (WHERE NOT replayed), count(*) FILTER (WHERE replayed)
		FROM (SELECT finished_at, NOT `+notReplayed+` AS replayed FROM jobs
			WHERE state = 'failed' AND state IN ('failed', 'canceled', 'suspended') AND (expires_at IS NULL OR expires_at > ?))`,
		micros(s.clock.Now())).Scan(&st.Count, &oldest, &st.Replayed)
	if err != nil {
		return nil, wrap(err, "dead-letter stats")
	}
	st.Oldest = nullTime(oldest)
	return &st, nil
}

// ReplaySummaries sums up the replays of each of ids that was replayed: their number and the
// newest, from the audit log's index on source_job_id.
func (s *Store) ReplaySummaries(ctx context.Context, ids []string) (map[string]*store.ReplaySummary, error) {
	out := map[string]*store.ReplaySummary{}
	if len(ids) == 0 {
		return out, nil
	}
	where, args := inList(nil, nil, "source_job_id", ids)
	rows, err := s.reader.QueryContext(ctx, `SELECT source_job_id, n, new_job_id, replayed_at FROM (
		SELECT source_job_id, new_job_id, replayed_at, count(*) OVER w AS n,
			row_number() OVER (w ORDER BY id DESC) AS newest
		FROM job_replays WHERE action = 'replay' AND `+where[0]+` WINDOW w AS (PARTITION BY source_job_id)) WHERE newest = 1`, args...)
	if err != nil {
		return nil, wrap(err, "replay summaries")
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var at int64
		r := &store.ReplaySummary{}
		if err := rows.Scan(&id, &r.Count, &r.LastJobID, &at); err != nil {
			return nil, wrap(err, "replay summaries")
		}
		r.LastAt = fromMicros(at)
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "replay summaries")
	}
	return out, nil
}

// replaySQL creates the replay of job ?6: a queued copy with the lineage of its source.
const replaySQL = `INSERT INTO jobs (id, kind, queue, priority, args, headers, state, max_attempts,
	run_at, timeout_us, retry_policy, group_key, result_ttl_us, original_id, replay_count,
	replayed_by, last_actor, last_reason, created_actor, created_reason, created_at, updated_at, max_rescues,
	fairness_key)
	SELECT ?1, kind, queue, priority, args, headers, 'queued', max_attempts, ?2, timeout_us,
		retry_policy, group_key, result_ttl_us, coalesce(original_id, id), replay_count + 1, ?3, ?4, ?5, ?4, ?5, ?2, ?2,
		max_rescues, fairness_key
	FROM jobs WHERE id = ?6
	RETURNING ` + jobColumns

const auditSQL = `INSERT INTO job_replays (source_job_id, new_job_id, original_id, replayed_by, replayed_at, reason,
	action, forced) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) RETURNING id`

// audit writes r's row to the dead-letter audit log inside tx and sets r.ID.
func audit(ctx context.Context, tx *sql.Tx, r *store.Replay) error {
	return tx.QueryRowContext(ctx, auditSQL, r.SourceJobID, r.NewJobID, r.OriginalID, r.ReplayedBy,
		micros(r.ReplayedAt), nullString(r.Reason), r.Action, r.Forced).Scan(&r.ID)
}

// lastReplay returns the newest replay of dead letter id, nil when it was never replayed.
func lastReplay(ctx context.Context, tx *sql.Tx, id string) (*store.Replay, error) {
	r := &store.Replay{SourceJobID: id, Action: store.ActionReplay}
	var at int64
	err := tx.QueryRowContext(ctx, `SELECT new_job_id, replayed_by, replayed_at FROM job_replays
		WHERE source_job_id = ?1 AND action = 'replay' ORDER BY id DESC LIMIT 1`, id).Scan(&r.NewJobID, &r.ReplayedBy, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.ReplayedAt = fromMicros(at)
	return r, nil
}

// checkDeadLetter returns the state of live job id inside tx, ErrNotFound when there is
// none, and, unless again, a *hoppertype.ReplayedError when it is a dead letter replayed
// before. forced says that again overrode such a replay.
func checkDeadLetter(ctx context.Context, tx *sql.Tx, id string, again bool, now time.Time) (state hoppertype.JobState, forced bool, err error) {
	var st string
	err = tx.QueryRowContext(ctx, `SELECT state FROM jobs WHERE id = ?1 AND `+live, id, micros(now)).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	if err != nil || hoppertype.JobState(st) != hoppertype.StateFailed {
		return hoppertype.JobState(st), false, err
	}
	last, err := lastReplay(ctx, tx, id)
	switch {
	case err != nil:
		return "", false, err
	case last != nil && !again:
		return "", false, store.Replayed(last)
	}
	return hoppertype.StateFailed, last != nil, nil
}

// JobReplay replays one failed job: a new job and its audit row in one transaction.
func (s *Store) JobReplay(ctx context.Context, p *store.ReplayParams) (*store.Replay, error) {
	var r *store.Replay
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := s.clock.Now()
		state, forced, err := checkDeadLetter(ctx, tx, p.SourceID, p.Again, now)
		if err != nil {
			return err
		}
		if state != hoppertype.StateFailed {
			return store.NotFailed(p.SourceID, state)
		}
		r, err = replayOne(ctx, tx, p.SourceID, p.NewID, p.By, p.Actor, p.Reason, now)
		if err != nil {
			return err
		}
		r.Forced = forced
		return audit(ctx, tx, r)
	})
	if err != nil {
		return nil, fmt.Errorf("replay job %s: %w", p.SourceID, err)
	}
	return r, nil
}

// JobReplayMany replays the oldest failed jobs matching p that were never replayed.
func (s *Store) JobReplayMany(ctx context.Context, p *store.ReplayManyParams) (*store.ReplayManyResult, error) {
	var out *store.ReplayManyResult
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		out = &store.ReplayManyResult{} // a retried request starts over
		now := s.clock.Now()
		ids, err := unreplayed(ctx, tx, &p.DeadLetterFilter, len(p.NewIDs), now)
		if err != nil {
			return err
		}
		if out.Skipped, err = countReplayed(ctx, tx, &p.DeadLetterFilter, now); err != nil {
			return err
		}
		for i, id := range ids {
			r, err := replayOne(ctx, tx, id, p.NewIDs[i], p.By, p.Actor, p.Reason, now)
			if err != nil {
				return err
			}
			if err := audit(ctx, tx, r); err != nil {
				return err
			}
			out.Replays = append(out.Replays, r)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replay failed jobs: %w", err)
	}
	return out, nil
}

// deadLetterWhere is the condition of the live failed jobs matching f, and its arguments.
func deadLetterWhere(f *store.DeadLetterFilter, now time.Time) ([]string, []any) {
	where := []string{"state = 'failed'", "state IN ('failed', 'canceled', 'suspended')", "(expires_at IS NULL OR expires_at > ?)"}
	args := []any{micros(now)}
	p := f
	where, args = inList(where, args, "queue", p.Queues)
	where, args = inList(where, args, "kind", p.Kinds)
	if !p.FinishedAfter.IsZero() {
		where, args = append(where, "finished_at >= ?"), append(args, micros(p.FinishedAfter))
	}
	if !p.FinishedBefore.IsZero() {
		where, args = append(where, "finished_at < ?"), append(args, micros(p.FinishedBefore))
	}
	return where, args
}

// countReplayed counts the live failed jobs matching f that were replayed.
func countReplayed(ctx context.Context, tx *sql.Tx, f *store.DeadLetterFilter, now time.Time) (int, error) {
	where, args := deadLetterWhere(f, now)
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE `+strings.Join(where, " AND ")+
		` AND NOT `+notReplayed, args...).Scan(&n)
	return n, err
}

// unreplayed returns the ids of up to limit failed jobs matching f that were never replayed,
// oldest first.
func unreplayed(ctx context.Context, tx *sql.Tx, f *store.DeadLetterFilter, limit int, now time.Time) ([]string, error) {
	where, args := deadLetterWhere(f, now)
	where = append(where, notReplayed)
	return queryStrings(ctx, tx, `SELECT id FROM jobs WHERE `+strings.Join(where, " AND ")+
		` ORDER BY id LIMIT ?`, append(args, limit)...)
}

// inList adds "col IN (…)" for vals, when there are any.
func inList(where []string, args []any, col string, vals []string) ([]string, []any) {
	if len(vals) == 0 {
		return where, args
	}
	where = append(where, col+" IN ("+strings.TrimSuffix(strings.Repeat("?,", len(vals)), ",")+")")
	for _, v := range vals {
		args = append(args, v)
	}
	return where, args
}

// replayOne creates the replay of source inside tx; the caller writes its audit row.
func replayOne(ctx context.Context, tx *sql.Tx, source, newID, by string, actor hoppertype.Actor, reason string, now time.Time) (*store.Replay, error) {
	job, err := scanJob(tx.QueryRowContext(ctx, replaySQL, newID, micros(now), by, string(actor), nullString(reason), source))
	if err != nil {
		return nil, fmt.Errorf("insert replay of job %s: %w", source, err)
	}
	return &store.Replay{SourceJobID: source, NewJobID: job.ID, OriginalID: job.OriginalID, ReplayedBy: by,
		ReplayedAt: fromMicros(micros(now)), Reason: reason, Action: store.ActionReplay, Job: job}, nil
}

// ReplayList returns a page of the replay audit log, newest first.
func (s *Store) ReplayList(ctx context.Context, p *store.ReplayListParams) (*store.ReplayListResult, error) {
	where := []string{"1 = 1"}
	var args []any
	eq := func(col, v string) {
		if v != "" {
			where, args = append(where, col+" = ?"), append(args, v)
		}
	}
	eq("source_job_id", p.SourceJobID)
	eq("original_id", p.OriginalID)
	eq("replayed_by", p.ReplayedBy)
	if !p.Since.IsZero() {
		where, args = append(where, "replayed_at >= ?"), append(args, micros(p.Since))
	}
	if !p.Until.IsZero() {
		where, args = append(where, "replayed_at < ?"), append(args, micros(p.Until))
	}
	if p.Cursor != "" {
		after, err := store.DecodeReplayCursor(p.Cursor)
		if err != nil {
			return nil, err
		}
		where, args = append(where, "id < ?"), append(args, after)
	}
	limit := p.ReplayLimit()
	rows, err := s.reader.QueryContext(ctx, `SELECT id, source_job_id, new_job_id, original_id, replayed_by,
		replayed_at, coalesce(reason, ''), action, forced FROM job_replays WHERE `+strings.Join(where, " AND ")+
		` ORDER BY id DESC LIMIT ?`, append(args, limit+1)...)
	if err != nil {
		return nil, wrap(err, "list replays")
	}
	defer rows.Close()
	res := &store.ReplayListResult{}
	for rows.Next() {
		r := &store.Replay{}
		var at int64
		if err := rows.Scan(&r.ID, &r.SourceJobID, &r.NewJobID, &r.OriginalID, &r.ReplayedBy, &at, &r.Reason, &r.Action, &r.Forced); err != nil {
			return nil, wrap(err, "list replays")
		}
		r.ReplayedAt = fromMicros(at)
		res.Replays = append(res.Replays, r)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "list replays")
	}
	if len(res.Replays) > limit {
		res.Replays = res.Replays[:limit]
		res.NextCursor = store.EncodeReplayCursor(res.Replays[limit-1].ID)
	}
	return res, nil
}
