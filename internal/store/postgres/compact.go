package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// Compaction under concurrency (store/compact.go). A first look-up reads which waiting jobs
// each group has, without locking or reading their args; then, for each batch of groups, a
// transaction locks the jobs of the batch's groups (FOR UPDATE SKIP LOCKED), as a claim's look-up does, and reads their args:
// a job a claim holds is skipped, a claim that comes after skips the compaction's, and a job a
// claim moved to running (or a merge changed) before the lock is re-checked and read as it is
// now. Groups are counted again over what was locked. The writes that replace a group then change only
// rows the transaction holds, so a job is either claimed or compacted, never both. A merge
// that waits for one of the locked rows finds it canceled and makes a new job (the new job
// has no merge key).

// compactCandidatesSQL lists the waiting grouped jobs of kind $1 (of group $2 unless empty),
// by group and age. jobs_compact serves it.
const compactCandidatesSQL = `SELECT id, group_key FROM {schema}.jobs
WHERE kind = $1 AND state = 'queued' AND group_key IS NOT NULL AND token = 0 AND NOT has_children AND workflow_id IS NULL
  AND ($2 = '' OR group_key = $2)
ORDER BY group_key, id`

// compactLockSQL locks the jobs $1 that still wait and reads them, by group and age.
const compactLockSQL = `SELECT id, group_key, args, coalesce(merge_policy, '') FROM {schema}.jobs
WHERE id = ANY($1::text[]) AND state = 'queued' AND token = 0 AND NOT has_children AND workflow_id IS NULL
ORDER BY group_key, id
FOR UPDATE SKIP LOCKED`

// compactGroupSQL replaces one group in one statement: the new job $2, a queued copy of the
// oldest job $3 with args $4 and merge policy $5 and no merge key; the replaced jobs $9
// canceled with reason $7, kept for their own result TTL or $8 µs; their lineage rows; and
// their idempotency keys moved to the new job. $6 is the actor, the new job's reason $10. It
// returns how many jobs it canceled.
const compactGroupSQL = `WITH clk AS (SELECT coalesce($1::timestamptz, now()) AS now),
ins AS (
	INSERT INTO {schema}.jobs (id, kind, queue, priority, args, headers, state, max_attempts, run_at,
		timeout_us, retry_policy, group_key, result_ttl_us, merge_policy, last_actor, last_reason,
		created_actor, created_reason, created_at, updated_at, max_rescues, fairness_key)
	SELECT $2, s.kind, s.queue, s.priority, $4::bytea, s.headers, 'queued', s.max_attempts, clk.now,
		s.timeout_us, s.retry_policy, s.group_key, s.result_ttl_us, $5::text, $6::text, $10::text,
		$6::text, $10::text, clk.now, clk.now, s.max_rescues, s.fairness_key
	FROM {schema}.jobs s, clk WHERE s.id = $3
	RETURNING id
), cnl AS (
	UPDATE {schema}.jobs j SET
		state = 'canceled', version = j.version + 1, finished_at = clk.now, updated_at = clk.now,
		last_actor = $6::text, last_reason = $7::text, last_stack = NULL,
		expires_at = clk.now + (CASE WHEN j.result_ttl_us > 0 THEN j.result_ttl_us ELSE $8::bigint END) * interval '1 microsecond'
	FROM clk
	WHERE j.id = ANY($9::text[]) AND j.state = 'queued' AND j.token = 0 AND NOT j.has_children AND j.workflow_id IS NULL
	RETURNING j.id
), lin AS (
	INSERT INTO {schema}.job_compactions (replaced_job_id, new_job_id, actor, compacted_at)
	SELECT cnl.id, $2, $6::text, clk.now FROM cnl, clk
), keys AS (
	UPDATE {schema}.idempotency_keys SET job_id = $2 WHERE job_id = ANY($9::text[])
)
SELECT (SELECT count(*) FROM cnl), (SELECT count(*) FROM ins)`

// JobCompact replaces the waiting jobs of each group of p.Kind over p.Over by one new job. It
// lists the groups to compact, then compacts them in batches (store.CompactBatches), each in
// one transaction that locks its jobs: so a large compaction does not hold its locks, and its
// new jobs back from the claims, for its whole run.
func (s *Store) JobCompact(ctx context.Context, p *store.CompactParams) (*store.CompactResult, error) {
	rows, err := s.pool.Query(ctx, s.sql(compactCandidatesSQL), p.Kind, p.GroupKey)
	if err != nil {
		return nil, s.wrap(err, "compact kind %q", p.Kind)
	}
	listed, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.CompactCandidate, error) {
		c := &store.CompactCandidate{}
		return c, r.Scan(&c.ID, &c.GroupKey)
	})
	if err != nil {
		return nil, s.wrap(err, "compact kind %q", p.Kind)
	}
	out := &store.CompactResult{}
	for _, batch := range store.CompactBatches(store.CompactGroups(p, listed)) {
		var ids []string
		for _, group := range batch {
			for _, c := range group {
				ids = append(ids, c.ID)
			}
		}
		var done []*store.CompactedGroup
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			done = nil // a retried transaction starts over
			candidates, err := s.compactLock(ctx, tx, ids)
			if err != nil {
				return err
			}
			for _, group := range store.CompactGroups(p, candidates) {
				g, err := s.compactGroup(ctx, tx, p, group)
				if err != nil {
					return err
				}
				done = append(done, g)
			}
			return nil
		})
		if err != nil {
			return nil, s.wrap(err, "compact kind %q", p.Kind)
		}
		out.Groups = append(out.Groups, done...)
	}
	return out, nil
}

// compactLock locks and reads the jobs ids that still wait, by group and age.
func (s *Store) compactLock(ctx context.Context, tx pgx.Tx, ids []string) ([]*store.CompactCandidate, error) {
	rows, err := tx.Query(ctx, s.sql(compactLockSQL), ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*store.CompactCandidate, error) {
		c := &store.CompactCandidate{}
		var policy string
		err := r.Scan(&c.ID, &c.GroupKey, &c.Args, &policy)
		c.Policy = hoppertype.MergePolicy(policy)
		return c, err
	})
}

// compactGroup replaces one locked group's jobs (oldest first) by a new job, or says why not.
func (s *Store) compactGroup(ctx context.Context, tx pgx.Tx, p *store.CompactParams, group []*store.CompactCandidate) (*store.CompactedGroup, error) {
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
	var canceled, inserted int
	err = tx.QueryRow(ctx, s.sql(compactGroupSQL), s.nowArg(), g.NewJobID, group[0].ID, args,
		nullStr(string(policy)), string(p.Actor), store.CompactedReason(g.NewJobID), micros(p.Retention),
		g.Replaced, store.CompactReason(p.Policy, len(group))).Scan(&canceled, &inserted)
	if err != nil {
		return nil, fmt.Errorf("replace group %q: %w", g.GroupKey, err)
	}
	if canceled != len(group) || inserted != 1 {
		return nil, fmt.Errorf("replace group %q: canceled %d of %d jobs, inserted %d: %w", g.GroupKey,
			canceled, len(group), inserted, errors.New("rows changed under their locks"))
	}
	return g, nil
}

// JobCompactedFrom returns the ids of the jobs that job id replaced, oldest first.
func (s *Store) JobCompactedFrom(ctx context.Context, id string) ([]string, error) {
	rows, err := s.pool.Query(ctx, s.sql(`SELECT replaced_job_id FROM {schema}.job_compactions
		WHERE new_job_id = $1 ORDER BY replaced_job_id`), id)
	if err != nil {
		return nil, s.wrap(err, "jobs compacted into %s", id)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.wrap(err, "jobs compacted into %s", id)
	}
	return out, nil
}

// JobCompactedInto returns the job that replaced job id, or "" when none did.
func (s *Store) JobCompactedInto(ctx context.Context, id string) (string, error) {
	var into string
	err := s.pool.QueryRow(ctx, s.sql(`SELECT new_job_id FROM {schema}.job_compactions WHERE replaced_job_id = $1`), id).Scan(&into)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", s.wrap(err, "job compacted from %s", id)
	}
	return into, nil
}
