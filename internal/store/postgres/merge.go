package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// Merging under concurrency (contract 9, store/merge.go). Two enqueues with one merge key must
// not both find no job to merge into and both insert one. A unique index cannot say "one
// waiting job per key": the jobs a key can merge into are the never-claimed ones, and the
// check would have to hold for every transition of every keyed job; nor can INSERT … ON
// CONFLICT apply a batch that names a key twice, in order, with the checks a merge makes in
// Go (the shape of the args, their size).
//
// So a batch with merge keys first takes a transaction-level advisory lock on each key (a
// hash of schema, kind and key; sorted, so batches do not deadlock), in a statement of its
// own, and only then looks for the job to merge into. Under READ COMMITTED every statement
// takes a new snapshot: the look-up, which starts after the lock is granted, sees every job
// that the lock's previous holder committed, and nothing can insert a job with the key
// between the look-up and the commit. The look-up locks the row it finds (FOR UPDATE): a
// claim skips it meanwhile (SKIP LOCKED), and a claim that got there first makes the look-up
// re-check the row after that claim commits, find it running and insert a new job. The locks
// end with the transaction (no session state, so poolers in transaction mode are fine); a hash
// collision only makes two keys wait for each other.
//
// Under REPEATABLE READ or SERIALIZABLE (EnqueueTx in such a transaction of the
// application's), the snapshot is older than the lock: a concurrent enqueue with the key may
// then add a second job instead of merging, or fail with a serialization error. Nothing is
// lost either way.

// lockMergeKeysSQL takes the locks in the order of $1, which the caller sorts.
const lockMergeKeysSQL = `SELECT pg_advisory_xact_lock(k) FROM unnest($1::bigint[]) AS k`

// mergeTargetSQL finds the job a merge key merges into: of the item's kind, waiting, never
// claimed. jobs_merge serves it.
const mergeTargetSQL = `SELECT id, args, coalesce(merge_policy, '') FROM {schema}.jobs
WHERE merge_key = $1 AND kind = $2 AND state IN ('queued', 'scheduled') AND token = 0
ORDER BY id LIMIT 1
FOR UPDATE`

// mergeSQL merges into one job: new args ($2; NULL keeps them), a new version and the history
// event with that version as its seq (the history trigger records changes of state only).
const mergeSQL = `WITH m AS (
	UPDATE {schema}.jobs SET args = coalesce($2::bytea, args), version = version + 1,
		updated_at = coalesce($1::timestamptz, now())
	WHERE id = $3
	RETURNING ` + cols + `, version
), e AS (
	INSERT INTO {schema}.job_events (job_id, seq, at, from_state, to_state, actor, reason)
	SELECT id, version, updated_at, state, state, $4, $5 FROM m
)
SELECT ` + cols + ` FROM m`

// moveKeySQL makes an idempotency key that this transaction claimed for a new job name the job
// its item merged into.
const moveKeySQL = `UPDATE {schema}.idempotency_keys SET job_id = $2 WHERE key = $1 AND job_id = $3`

// lockMergeKeys takes the advisory lock of every merge key of the batch, in one statement.
func (s *Store) lockMergeKeys(ctx context.Context, d db, params []*store.InsertParams) error {
	var locks []int64
	for _, p := range params {
		if p.MergeKey != "" {
			locks = append(locks, s.mergeLock(p.Kind, p.MergeKey))
		}
	}
	slices.Sort(locks)
	locks = slices.Compact(locks)
	return s.exec(ctx, d, "lock merge keys", lockMergeKeysSQL, locks)
}

// mergeLock is the advisory lock of one kind's merge key in this store's schema.
func (s *Store) mergeLock(kind, key string) int64 {
	h := fnv.New64a()
	for _, part := range []string{s.schema, kind, key} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

// mergeItems merges or inserts the batch's merge items in their order, so that a later item
// merges into the job an earlier one made or changed. Items an idempotency key resolves are
// left alone: a repeat returns its job without merging again.
func (s *Store) mergeItems(ctx context.Context, d db, plan *insertPlan) error {
	for i, p := range plan.params {
		first := plan.keyed[i]
		if p.MergeKey == "" || (first >= 0 && (first != i || plan.existing[i] != "")) {
			continue
		}
		res, err := s.mergeItem(ctx, d, i, p, plan)
		if err != nil {
			return err
		}
		plan.merged[i] = res
	}
	return nil
}

// mergeItem merges item i into the job its key names, or inserts it when there is none (as
// one of plan's inserts, leaving out the wake-ups it holds).
func (s *Store) mergeItem(ctx context.Context, d db, i int, p *store.InsertParams, plan *insertPlan) (*store.InsertResult, error) {
	t, err := s.mergeTarget(ctx, d, p)
	if err != nil {
		return nil, err
	}
	if t == nil {
		a := &insertArrays{}
		a.add(p)
		jobs, err := s.insertRows(ctx, d, a, nil, plan.held)
		if err != nil {
			return nil, err
		}
		if len(jobs) != 1 {
			return nil, fmt.Errorf("job %s (item %d) missing after insert", p.ID, i)
		}
		plan.inserted = append(plan.inserted, jobs[0])
		return &store.InsertResult{Job: jobs[0]}, nil
	}
	args, err := store.MergedArgs(t, i, p)
	if err != nil {
		return nil, err
	}
	var newArgs any
	if args != nil {
		newArgs = args
	}
	rs, err := d.query(ctx, s.sql(mergeSQL), s.nowArg(), newArgs, t.ID, string(p.Actor), store.MergeReason(p.Merge))
	if err != nil {
		return nil, fmt.Errorf("merge into job %s: %w", t.ID, err)
	}
	jobs, err := scanJobs(rs)
	if err != nil {
		return nil, fmt.Errorf("merge into job %s: %w", t.ID, err)
	}
	if len(jobs) != 1 {
		return nil, fmt.Errorf("merge into job %s: it is gone from under its lock", t.ID)
	}
	if p.IdempotencyKey != "" {
		if err := s.exec(ctx, d, "move idempotency key", moveKeySQL, p.IdempotencyKey, t.ID, p.ID); err != nil {
			return nil, err
		}
	}
	return &store.InsertResult{Job: jobs[0], Merged: true}, nil
}

// mergeTarget locks and returns the job p's merge key merges into, or nil when there is none.
func (s *Store) mergeTarget(ctx context.Context, d db, p *store.InsertParams) (*store.MergeTarget, error) {
	rs, err := d.query(ctx, s.sql(mergeTargetSQL), p.MergeKey, p.Kind)
	if err != nil {
		return nil, fmt.Errorf("look up merge key %q: %w", p.MergeKey, err)
	}
	defer rs.Close()
	if !rs.Next() {
		if err := rs.Err(); err != nil {
			return nil, fmt.Errorf("look up merge key %q: %w", p.MergeKey, err)
		}
		return nil, nil
	}
	t := &store.MergeTarget{}
	var policy string
	if err := rs.Scan(&t.ID, &t.Args, &policy); err != nil {
		return nil, fmt.Errorf("look up merge key %q: %w", p.MergeKey, err)
	}
	t.Policy = hoppertype.MergePolicy(policy)
	return t, nil
}

// exec runs a statement whose rows, if any, are of no interest.
func (s *Store) exec(ctx context.Context, d db, what, query string, args ...any) error {
	rs, err := d.query(ctx, s.sql(query), args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}
