package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// SQLite has one writer (writer.go): the look-up of a kind's waiting jobs and the writes that
// replace them are one step, and no claim runs between them.

// compactInsertSQL makes the job that replaces a group: a queued copy of its oldest job ?2
// (its fairness key too) with args ?3 and merge policy ?4, and no merge key.
const compactInsertSQL = `INSERT INTO jobs (id, kind, queue, priority, args, headers, state, max_attempts,
	run_at, timeout_us, retry_policy, group_key, result_ttl_us, merge_policy,
	last_actor, last_reason, created_actor, created_reason, created_at, updated_at, max_rescues, fairness_key)
	SELECT ?1, kind, queue, priority, ?3, headers, 'queued', max_attempts, ?5, timeout_us,
		retry_policy, group_key, result_ttl_us, ?4, ?6, ?7, ?6, ?7, ?5, ?5, max_rescues, fairness_key
	FROM jobs WHERE id = ?2`

// compactCancelSQL ends the replaced jobs (the %s list, from ?5 on): canceled, kept for their
// own result TTL or retention ?4 (µs).
const compactCancelSQL = `UPDATE jobs SET
	state = 'canceled', version = version + 1, finished_at = ?1, updated_at = ?1,
	last_actor = ?2, last_reason = ?3, last_stack = NULL,
	expires_at = ?1 + CASE WHEN result_ttl_us > 0 THEN result_ttl_us ELSE ?4 END
	WHERE state = 'queued' AND token = 0 AND has_children = 0 AND workflow_id IS NULL AND id IN (%s)`

// compactLineageSQL records the jobs (the %s list of (?n, ?3, ?1, ?2) rows) that ?3 replaced.
const compactLineageSQL = `INSERT INTO job_compactions (replaced_job_id, new_job_id, actor, compacted_at) VALUES %s`

// compactBatchSQL is compactCandidatesSQL for a batch's groups (the %s list, from ?2 on).
const compactBatchSQL = `SELECT id, group_key, args, coalesce(merge_policy, '') FROM jobs
	WHERE kind = ?1 AND state = 'queued' AND group_key IN (%s) AND token = 0 AND has_children = 0 AND workflow_id IS NULL
	ORDER BY group_key, id`

// placeholders is n numbered parameters from ?from on, comma-separated.
func placeholders(from, n int) string {
	marks := make([]string, n)
	for i := range marks {
		marks[i] = fmt.Sprintf("?%d", from+i)
	}
	return strings.Join(marks, ",")
}

// compactListSQL lists what compactCandidatesSQL does without the args: which groups to
// compact, before the batches that compact them.
const compactListSQL = `SELECT id, group_key FROM jobs
	WHERE kind = ?1 AND state = 'queued' AND group_key IS NOT NULL AND token = 0 AND has_children = 0 AND workflow_id IS NULL
	  AND (?2 = '' OR group_key = ?2)
	ORDER BY group_key, id`

// JobCompact replaces the waiting jobs of each group of p.Kind over p.Over by one new job. It
// lists the groups to compact, then compacts them in batches (store.CompactBatches), each in
// one write transaction that reads its groups' jobs again: so the one writer is not held for
// the whole of a large compaction, and each group is still replaced in one transaction.
func (s *Store) JobCompact(ctx context.Context, p *store.CompactParams) (*store.CompactResult, error) {
	listed, err := s.compactList(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("compact kind %q: %w", p.Kind, err)
	}
	out := &store.CompactResult{}
	for _, batch := range store.CompactBatches(store.CompactGroups(p, listed)) {
		keys := make([]any, len(batch))
		for i, g := range batch {
			keys[i] = g[0].GroupKey
		}
		var done []*store.CompactedGroup
		err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
			done = nil // a retried request starts over
			now := micros(s.clock.Now())
			rows, err := tx.QueryContext(ctx, fmt.Sprintf(compactBatchSQL, placeholders(2, len(keys))), append([]any{p.Kind}, keys...)...)
			if err != nil {
				return err
			}
			candidates, err := scanCompactCandidates(rows)
			if err != nil {
				return err
			}
			for _, group := range store.CompactGroups(p, candidates) {
				g, err := compactGroup(ctx, tx, p, group, now)
				if err != nil {
					return err
				}
				done = append(done, g)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("compact kind %q: %w", p.Kind, err)
		}
		out.Groups = append(out.Groups, done...)
	}
	return out, nil
}

// compactList lists the waiting grouped jobs of p.Kind (of p.GroupKey when set), without their
// args, by group and age.
func (s *Store) compactList(ctx context.Context, p *store.CompactParams) ([]*store.CompactCandidate, error) {
	rows, err := s.reader.QueryContext(ctx, compactListSQL, p.Kind, p.GroupKey)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.CompactCandidate
	for rows.Next() {
		c := &store.CompactCandidate{}
		if err := rows.Scan(&c.ID, &c.GroupKey); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// scanCompactCandidates reads compactCandidatesSQL's rows and closes them.
func scanCompactCandidates(rows *sql.Rows) ([]*store.CompactCandidate, error) {
	defer rows.Close()
	var out []*store.CompactCandidate
	for rows.Next() {
		c := &store.CompactCandidate{}
		var policy string
		if err := rows.Scan(&c.ID, &c.GroupKey, &c.Args, &policy); err != nil {
			return nil, err
		}
		c.Policy = hoppertype.MergePolicy(policy)
		out = append(out, c)
	}
	return out, rows.Err()
}

// compactGroup replaces one group's jobs (oldest first) by a new job, or says why not.
func compactGroup(ctx context.Context, tx *sql.Tx, p *store.CompactParams, group []*store.CompactCandidate, now int64) (*store.CompactedGroup, error) {
	g := &store.CompactedGroup{GroupKey: group[0].GroupKey}
	for _, c := range group {
		g.Replaced = append(g.Replaced, c.ID)
	}
	args, policy, err := store.CompactArgs(p.Policy, group, p.MaxArgsBytes)
	if err != nil {
		g.Refused = err
		return g, nil
	}
	g.NewJobID = p.NewID()
	if _, err := tx.ExecContext(ctx, compactInsertSQL, g.NewJobID, group[0].ID, args, nullString(string(policy)),
		now, string(p.Actor), store.CompactReason(p.Policy, len(group))); err != nil {
		return nil, fmt.Errorf("insert the job replacing group %q: %w", g.GroupKey, err)
	}
	for chunk := range slices.Chunk(g.Replaced, compactChunk) {
		if err := replaceChunk(ctx, tx, p, g.NewJobID, chunk, now); err != nil {
			return nil, fmt.Errorf("replace the jobs of group %q: %w", g.GroupKey, err)
		}
	}
	return g, nil
}

// compactChunk bounds the jobs one statement replaces: each is a bound parameter, and SQLite
// takes at most 32,766 of them.
const compactChunk = 1000

// replaceChunk cancels the replaced jobs ids, records their lineage and moves their
// idempotency keys to the new job.
func replaceChunk(ctx context.Context, tx *sql.Tx, p *store.CompactParams, newID string, ids []string, now int64) error {
	marks := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	args := make([]any, len(ids))
	lineage := make([]string, len(ids))
	for i, id := range ids {
		args[i] = id
		lineage[i] = fmt.Sprintf("(?%d, ?3, ?1, ?2)", i+4)
	}
	cancelArgs := append([]any{now, string(p.Actor), store.CompactedReason(newID), p.Retention.Microseconds()}, args...)
	res, err := tx.ExecContext(ctx, fmt.Sprintf(compactCancelSQL, marks), cancelArgs...)
	if err != nil {
		return fmt.Errorf("cancel: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(ids)) {
		return fmt.Errorf("cancel: %d of %d changed (%v)", n, len(ids), err)
	}
	lineageArgs := append([]any{string(p.Actor), now, newID}, args...)
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(compactLineageSQL, strings.Join(lineage, ", ")), lineageArgs...); err != nil {
		return fmt.Errorf("record the lineage: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE idempotency_keys SET job_id = ?1 WHERE job_id IN (`+marks+`)`,
		append([]any{newID}, args...)...); err != nil {
		return fmt.Errorf("move the idempotency keys: %w", err)
	}
	return nil
}

// JobCompactedFrom returns the ids of the jobs that job id replaced, oldest first.
func (s *Store) JobCompactedFrom(ctx context.Context, id string) ([]string, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT replaced_job_id FROM job_compactions
		WHERE new_job_id = ?1 ORDER BY replaced_job_id`, id)
	if err != nil {
		return nil, wrap(err, "jobs compacted into %s", id)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, wrap(err, "jobs compacted into %s", id)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "jobs compacted into %s", id)
	}
	return out, nil
}

// JobCompactedInto returns the job that replaced job id, or "" when none did.
func (s *Store) JobCompactedInto(ctx context.Context, id string) (string, error) {
	var into string
	err := s.reader.QueryRowContext(ctx, `SELECT new_job_id FROM job_compactions WHERE replaced_job_id = ?1`, id).Scan(&into)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", wrap(err, "job compacted from %s", id)
	}
	return into, nil
}
