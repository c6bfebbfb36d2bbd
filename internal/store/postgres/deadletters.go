package postgres

import (
	"context"
	"errors"
	"fmt"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
	"strings"
	"time"
)

var _ store.DeadLetterStore = (*Store)(nil)

// notReplayed is the condition of a job (the table named jobs) that no replay names as its
// source: a dead letter not yet dealt with.
const notReplayed = "NOT EXISTS (SELECT 1 FROM {schema}.job_replays r WHERE r.source_job_id = jobs.id AND r.action = 'replay')"

const deadLetterStatsSQL = `SELECT count(*) FILTER (WHERE NOT replayed), min(finished_at) FILTER (WHERE NOT replayed),
	count(*) FILTER (WHERE replayed)
FROM (SELECT finished_at, NOT ` + notReplayed + ` AS replayed FROM {schema}.jobs
	WHERE state = 'failed' AND (expires_at IS NULL OR expires_at > coalesce($1::timestamptz, now()))) jobs`

// DeadLetterStats counts the failed jobs that have not expired, those not replayed (with the
// oldest's finish) and those replayed apart.
func (s *Store) DeadLetterStats(ctx context.Context) (*store.DeadLetterStats, error) {
	var st store.DeadLetterStats
	var oldest *time.Time
	if err := s.pool.QueryRow(ctx, s.sql(deadLetterStatsSQL), s.nowArg()).Scan(&st.Count, &oldest, &st.Replayed); err != nil {
		return nil, s.wrap(err, "dead-letter stats")
	}
	st.Oldest = utc(oldest)
	return &st, nil
}

// replaySummariesSQL sums up the replays of the dead letters $1: their number and the newest,
// from the audit log's index on source_job_id.
const replaySummariesSQL = `SELECT DISTINCT ON (source_job_id) source_job_id,
	count(*) OVER (PARTITION BY source_job_id), new_job_id, replayed_at
FROM {schema}.job_replays WHERE source_job_id = ANY($1::text[]) AND action = 'replay'
ORDER BY source_job_id, id DESC`

// ReplaySummaries sums up the replays of each of ids that was replayed.
func (s *Store) ReplaySummaries(ctx context.Context, ids []string) (map[string]*store.ReplaySummary, error) {
	out := map[string]*store.ReplaySummary{}
	if len(ids) == 0 {
		return out, nil
	}
	rs, err := s.pool.Query(ctx, s.sql(replaySummariesSQL), ids)
	if err != nil {
		return nil, s.wrap(err, "replay summaries")
	}
	defer rs.Close()
	for rs.Next() {
		var id string
		var n int64
		r := &store.ReplaySummary{}
		if err := rs.Scan(&id, &n, &r.LastJobID, &r.LastAt); err != nil {
			return nil, s.wrap(err, "replay summaries")
		}
		r.Count, r.LastAt = int(n), r.LastAt.UTC()
		out[id] = r
	}
	if err := rs.Err(); err != nil {
		return nil, s.wrap(err, "replay summaries")
	}
	return out, nil
}

// replaySQL creates, for each source job ($2) and new id ($3), a queued copy of the source
// with its lineage, and the audit row, in one statement. By is $4, the actor $5, the reason $6,
// $7 whether the replay was forced over an earlier one.
const replaySQL = `WITH clk AS (SELECT coalesce($1::timestamptz, now()) AS now),
src AS (
	SELECT u.new_id, s.* FROM unnest($2::text[], $3::text[]) AS u(source_id, new_id)
	JOIN {schema}.jobs s ON s.id = u.source_id
),
ins AS (
	INSERT INTO {schema}.jobs (id, kind, queue, priority, args, headers, state, max_attempts, run_at,
		timeout_us, retry_policy, group_key, result_ttl_us, original_id, replay_count, replayed_by,
		last_actor, last_reason, created_actor, created_reason, created_at, updated_at, max_rescues,
		fairness_key)
	SELECT src.new_id, src.kind, src.queue, src.priority, src.args, src.headers, 'queued',
		src.max_attempts, clk.now, src.timeout_us, src.retry_policy, src.group_key, src.result_ttl_us,
		coalesce(src.original_id, src.id), src.replay_count + 1, $4, $5, $6, $5, $6, clk.now, clk.now,
		src.max_rescues, src.fairness_key
	FROM src, clk
	RETURNING ` + cols + `
),
aud AS (
	INSERT INTO {schema}.job_replays (source_job_id, new_job_id, original_id, replayed_by, replayed_at, reason,
		action, forced)
	SELECT src.id, src.new_id, coalesce(src.original_id, src.id), $4, clk.now, $6, 'replay', $7
	FROM src, clk ORDER BY src.new_id
	RETURNING id, source_job_id, new_job_id, replayed_at
)
SELECT a.id, a.source_job_id, a.replayed_at, ` + jCols + `
FROM ins j JOIN aud a ON a.new_job_id = j.id ORDER BY j.id`

// replay runs replaySQL in tx for sources whose rows the caller has locked.
func (s *Store) replay(ctx context.Context, tx pgx.Tx, sources, newIDs []string, by string, actor hoppertype.Actor, reason string, forced bool) ([]*store.Replay, error) {
	if len(sources) == 0 {
		return nil, nil
	}
	by, reason = field.Clean(by), field.Clean(reason)
	rs, err := tx.Query(ctx, s.sql(replaySQL), s.nowArg(), sources, newIDs, by, string(actor), nullStr(reason), forced)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []*store.Replay
	for rs.Next() {
		r := &store.Replay{ReplayedBy: by, Reason: reason, Action: store.ActionReplay, Forced: forced}
		var at time.Time
		dest := []any{&r.ID, &r.SourceJobID, &at}
		job, err := scanJob(prefixScanner{rs, dest})
		if err != nil {
			return nil, err
		}
		r.ReplayedAt, r.Job, r.NewJobID, r.OriginalID = at.UTC(), job, job.ID, job.OriginalID
		out = append(out, r)
	}
	return out, rs.Err()
}

// prefixScanner scans the leading columns into dest and the rest into what scanJob asks for.
type prefixScanner struct {
	sc   scanner
	dest []any
}

func (p prefixScanner) Scan(dest ...any) error { return p.sc.Scan(append(p.dest, dest...)...) }

// JobReplay replays one failed job: a new job and its audit row in one transaction.
func (s *Store) JobReplay(ctx context.Context, p *store.ReplayParams) (*store.Replay, error) {
	var out []*store.Replay
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		state, forced, err := s.lockDeadLetter(ctx, tx, p.SourceID, p.Again)
		if err != nil {
			return err
		}
		if state != hoppertype.StateFailed {
			return store.NotFailed(p.SourceID, state)
		}
		out, err = s.replay(ctx, tx, []string{p.SourceID}, []string{p.NewID}, p.By, p.Actor, p.Reason, forced)
		return err
	})
	if err != nil {
		return nil, s.wrap(err, "replay job %s", p.SourceID)
	}
	if len(out) != 1 {
		return nil, fmt.Errorf("replay job %s: %d rows inserted", p.SourceID, len(out))
	}
	return out[0], nil
}

// JobReplayMany replays the oldest failed jobs matching p that were never replayed. Their
// rows are locked, skipping those another transaction holds; a job replayed by a transaction
// that committed after this one began is dropped by a second look at the audit log (a new
// snapshot, taken once the locks are held).
func (s *Store) JobReplayMany(ctx context.Context, p *store.ReplayManyParams) (*store.ReplayManyResult, error) {
	var out *store.ReplayManyResult
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		ids, skipped, err := s.lockUnreplayed(ctx, tx, &p.DeadLetterFilter, len(p.NewIDs))
		if err != nil {
			return err
		}
		out = &store.ReplayManyResult{Skipped: skipped}
		out.Replays, err = s.replay(ctx, tx, ids, p.NewIDs[:len(ids)], p.By, p.Actor, p.Reason, false)
		return err
	})
	if err != nil {
		return nil, s.wrap(err, "replay failed jobs")
	}
	return out, nil
}

// lockDeadLetter locks live job id's row in tx and returns its state, ErrNotFound when there
// is none, and, unless again, a *hoppertype.ReplayedError when it is a dead letter replayed
// before. forced says that again overrode such a replay. Holding the row serializes replays
// and retries of one dead letter.
func (s *Store) lockDeadLetter(ctx context.Context, tx pgx.Tx, id string, again bool) (hoppertype.JobState, bool, error) {
	var state string
	err := tx.QueryRow(ctx, s.sql(`SELECT state FROM {schema}.jobs WHERE id = $1 AND `+live+` FOR UPDATE`),
		id, s.nowArg()).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	if err != nil || hoppertype.JobState(state) != hoppertype.StateFailed {
		return hoppertype.JobState(state), false, err
	}
	last := &store.Replay{SourceJobID: id, Action: store.ActionReplay}
	err = tx.QueryRow(ctx, s.sql(`SELECT new_job_id, replayed_by, replayed_at FROM {schema}.job_replays
		WHERE source_job_id = $1 AND action = 'replay' ORDER BY id DESC LIMIT 1`), id).Scan(&last.NewJobID,
		&last.ReplayedBy, &last.ReplayedAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return hoppertype.StateFailed, false, nil
	case err != nil:
		return "", false, err
	case !again:
		last.ReplayedAt = last.ReplayedAt.UTC()
		return "", false, store.Replayed(last)
	}
	return hoppertype.StateFailed, true, nil
}

// lockUnreplayed locks, in tx, up to limit failed jobs matching f that were never replayed,
// oldest first, skipping rows another transaction holds; a job replayed by a transaction that
// committed after this one began is dropped by a second look at the audit log (a new
// snapshot, taken once the locks are held). It counts the matching jobs that were replayed.
func (s *Store) lockUnreplayed(ctx context.Context, tx pgx.Tx, f *store.DeadLetterFilter, limit int) ([]string, int, error) {
	query, args := unreplayedQuery(f, limit, s.nowArg())
	rs, err := tx.Query(ctx, s.sql(query), args...)
	if err != nil {
		return nil, 0, err
	}
	ids, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		return nil, 0, err
	}
	rs, err = tx.Query(ctx, s.sql(`SELECT DISTINCT source_job_id FROM {schema}.job_replays
		WHERE source_job_id = ANY($1::text[]) AND action = 'replay'`), ids)
	if err != nil {
		return nil, 0, err
	}
	done, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		return nil, 0, err
	}
	where, cargs := deadLetterWhere(f, s.nowArg())
	var skipped int
	err = tx.QueryRow(ctx, s.sql(`SELECT count(*) FROM {schema}.jobs j WHERE `+strings.Join(where, " AND ")+
		` AND EXISTS (SELECT 1 FROM {schema}.job_replays r WHERE r.source_job_id = j.id AND r.action = 'replay')`),
		cargs...).Scan(&skipped)
	return without(ids, done), skipped, err
}

// deadLetterWhere is the condition of the live failed jobs (the table named j) matching f, and
// its arguments ($1 is now).
func deadLetterWhere(f *store.DeadLetterFilter, now any) ([]string, []any) {
	p := f
	where := []string{"state = 'failed'", "(expires_at IS NULL OR expires_at > coalesce($1::timestamptz, now()))"}
	args := []any{now}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if len(p.Queues) > 0 {
		add("queue = ANY($%d::text[])", p.Queues)
	}
	if len(p.Kinds) > 0 {
		add("kind = ANY($%d::text[])", p.Kinds)
	}
	if !p.FinishedAfter.IsZero() {
		add("finished_at >= $%d", p.FinishedAfter)
	}
	if !p.FinishedBefore.IsZero() {
		add("finished_at < $%d", p.FinishedBefore)
	}
	return where, args
}

// unreplayedQuery selects and locks up to limit failed jobs matching f without a replay in the
// audit log, oldest first.
func unreplayedQuery(f *store.DeadLetterFilter, limit int, now any) (string, []any) {
	where, args := deadLetterWhere(f, now)
	where = append(where, "NOT EXISTS (SELECT 1 FROM {schema}.job_replays r WHERE r.source_job_id = j.id AND r.action = 'replay')")
	args = append(args, limit)
	return fmt.Sprintf(`SELECT id FROM {schema}.jobs j WHERE %s ORDER BY id LIMIT $%d FOR UPDATE SKIP LOCKED`,
		strings.Join(where, " AND "), len(args)), args
}

// without returns ids minus drop, in order.
func without(ids, drop []string) []string {
	if len(drop) == 0 {
		return ids
	}
	gone := make(map[string]bool, len(drop))
	for _, d := range drop {
		gone[d] = true
	}
	out := ids[:0]
	for _, id := range ids {
		if !gone[id] {
			out = append(out, id)
		}
	}
	return out
}

// ReplayList returns a page of the replay audit log, newest first.
func (s *Store) ReplayList(ctx context.Context, p *store.ReplayListParams) (*store.ReplayListResult, error) {
	where := []string{"true"}
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	for _, f := range [][2]string{{"source_job_id", p.SourceJobID}, {"original_id", p.OriginalID}, {"replayed_by", p.ReplayedBy}} {
		if f[1] != "" {
			add(f[0]+" = $%d", f[1])
		}
	}
	if !p.Since.IsZero() {
		add("replayed_at >= $%d", p.Since)
	}
	if !p.Until.IsZero() {
		add("replayed_at < $%d", p.Until)
	}
	if p.Cursor != "" {
		after, err := store.DecodeReplayCursor(p.Cursor)
		if err != nil {
			return nil, err
		}
		add("id < $%d", after)
	}
	limit := p.ReplayLimit()
	args = append(args, limit+1)
	rs, err := s.pool.Query(ctx, s.sql(fmt.Sprintf(`SELECT id, source_job_id, new_job_id, original_id, replayed_by,
		replayed_at, coalesce(reason, ''), action, forced FROM {schema}.job_replays WHERE %s ORDER BY id DESC LIMIT $%d`,
		strings.Join(where, " AND "), len(args))), args...)
	if err != nil {
		return nil, s.wrap(err, "list replays")
	}
	replays, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (*store.Replay, error) {
		var rp store.Replay
		err := r.Scan(&rp.ID, &rp.SourceJobID, &rp.NewJobID, &rp.OriginalID, &rp.ReplayedBy, &rp.ReplayedAt, &rp.Reason,
			&rp.Action, &rp.Forced)
		rp.ReplayedAt = rp.ReplayedAt.UTC()
		return &rp, err
	})
	if err != nil {
		return nil, s.wrap(err, "list replays")
	}
	res := &store.ReplayListResult{Replays: replays}
	if len(replays) > limit {
		res.Replays = replays[:limit]
		res.NextCursor = store.EncodeReplayCursor(replays[limit-1].ID)
	}
	return res, nil
}
