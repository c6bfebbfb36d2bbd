package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// The reads of a batch claim (store.BatchClaimParams), in its transaction. batchHeadsSQL
// locks the groups' first jobs that a claim may take (the claim's group rule, candidatesFrom),
// in claim order, skipping those another claimer holds: two batch claims never read the same
// group, and a normal claim cannot take a group's next job while its first is queued or
// running. batchRunSQL locks a group from its first job on, in group order;
// batchUngroupedSQL locks the kind's jobs without a group, in claim order, skipping locked ones.
const (
	batchHeadsSQL = `SELECT j.id, j.priority, j.group_key FROM {schema}.jobs j
	WHERE j.state = 'queued' AND j.queue = $1 AND j.kind = $2 AND j.group_key IS NOT NULL
	  AND NOT EXISTS (SELECT 1 FROM {schema}.queues q WHERE q.name = $1 AND q.paused)
	  AND NOT EXISTS (SELECT 1 FROM {schema}.jobs g WHERE g.group_key = j.group_key AND g.id < j.id
	                  AND g.state IN ('running', 'queued', 'scheduled', 'suspended'))
	  AND NOT EXISTS (SELECT 1 FROM {schema}.jobs g WHERE g.group_key = j.group_key
	                  AND g.state = 'running' AND g.group_key IS NOT NULL)
	ORDER BY j.priority DESC, j.id
	LIMIT $3
	FOR UPDATE OF j SKIP LOCKED`
	batchRunSQL = `SELECT id, kind, queue, state, run_at FROM {schema}.jobs
	WHERE group_key = $1 AND id >= $2::text AND state IN ('running', 'queued', 'scheduled', 'suspended')
	ORDER BY id LIMIT $3
	FOR UPDATE`
	batchUngroupedSQL = `SELECT j.id, j.priority, j.run_at FROM {schema}.jobs j
	WHERE j.state = 'queued' AND j.queue = $1 AND j.kind = $2 AND j.group_key IS NULL
	  AND NOT EXISTS (SELECT 1 FROM {schema}.queues q WHERE q.name = $1 AND q.paused)
	ORDER BY j.priority DESC, j.id
	LIMIT $3
	FOR UPDATE OF j SKIP LOCKED`
	batchDisabledSQL = `SELECT EXISTS (SELECT 1 FROM {schema}.kinds WHERE kind = $1 AND disabled)`
	// batchClaimSQL moves the locked jobs $6 to running, at $1 (NULL: the database's now).
	batchClaimSQL = `WITH clk AS (SELECT coalesce($1::timestamptz, now()) AS now)
UPDATE {schema}.jobs j SET
	state = 'running', attempt = j.attempt + 1, token = j.token + 1, version = j.version + 1,
	worker_id = $2, lease_expires_at = clk.now + $3 * interval '1 microsecond', heartbeat_at = clk.now,
	started_at = clk.now, updated_at = clk.now, last_actor = 'worker', last_reason = 'claim',
	last_outcome = NULL, last_stack = NULL
FROM clk
WHERE j.id = ANY($4::text[]) AND j.state = 'queued'
RETURNING ` + jCols
)

// JobClaimBatch claims one batch (store.BatchClaimParams) in one transaction, within the caps
// and rate limits that apply (locked and read as the capped claim does, lockCaps).
func (s *Store) JobClaimBatch(ctx context.Context, p *store.BatchClaimParams) (*store.BatchClaim, error) {
	out, err := s.claimBatch(ctx, p)
	if err != nil {
		return nil, s.wrap(err, "claim a batch of kind %q in queue %q", p.Kind, p.Queue)
	}
	return out, nil
}

func (s *Store) claimBatch(ctx context.Context, p *store.BatchClaimParams) (*store.BatchClaim, error) {
	out := &store.BatchClaim{}
	if p.MaxJobs <= 0 {
		return out, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after Commit
	kinds := []string{p.Kind}
	c, capsAt, err := s.lockCaps(ctx, tx, p.Queue, kinds, true)
	if err != nil {
		return nil, err
	}
	// The jobs start at the time the buckets were refilled to, as in the capped claim.
	var at any = s.nowArg()
	now := s.Now()
	if !capsAt.IsZero() {
		at, now = capsAt, capsAt
	}
	var disabled bool
	if err := tx.QueryRow(ctx, s.sql(batchDisabledSQL), p.Kind).Scan(&disabled); err != nil || disabled {
		return out, err
	}
	limit := c.Limit(p.MaxJobs)
	var keys *store.KeyLeft // what the limits per key left the batch, nil when none applies
	if left, ok := c.KindLeft[p.Kind]; ok {
		limit = min(limit, left)
	}
	if limit > 0 {
		cands, err := s.batchCandidates(ctx, tx, p)
		if err != nil {
			return nil, err
		}
		best, readyAt := store.PickBatch(cands, limit, p.MaxWait, now)
		out.ReadyAt = readyAt
		if best != nil {
			ids := best.IDs
			if len(c.KeyLimits) > 0 {
				if ids, keys, err = s.boundBatchByKey(ctx, tx, p, c.KeyLimits, best, now); err != nil {
					return nil, err
				}
			}
			if len(ids) > 0 {
				if out.Jobs, err = s.claimIDs(ctx, tx, p, ids, at); err != nil {
					return nil, err
				}
			}
		}
	}
	out.Hold, err = c.Spend(p.MaxJobs, out.Jobs, func(kinds []string) (bool, error) {
		var ok bool
		err := tx.QueryRow(ctx, s.sql(kindsWaitingSQL), p.Queue, kinds).Scan(&ok)
		return ok, err
	})
	if err != nil {
		return nil, err
	}
	if keys != nil {
		keys.Spend(out.Jobs)
		keys.Hold(&out.Hold, p.MaxJobs, len(out.Jobs))
		if err := s.writeKeyBuckets(ctx, tx, keys, limit, now); err != nil {
			return nil, err
		}
	}
	if err := s.writeBuckets(ctx, tx, p.Queue, c, capsAt); err != nil {
		return nil, err
	}
	return out, tx.Commit(ctx)
}

// batchCandidates reads and locks the candidate batches: the groups' (at most
// store.BatchHeadScan, one without a linger) and, with Ungrouped, the ungrouped jobs as one.
func (s *Store) batchCandidates(ctx context.Context, tx pgx.Tx, p *store.BatchClaimParams) ([]*store.BatchCandidate, error) {
	scan := store.BatchHeadScan
	if p.MaxWait <= 0 {
		scan = 1
	}
	rs, err := tx.Query(ctx, s.sql(batchHeadsSQL), p.Queue, p.Kind, scan)
	if err != nil {
		return nil, err
	}
	type head struct {
		c     *store.BatchCandidate
		group string
	}
	var heads []head
	for rs.Next() {
		h := head{c: &store.BatchCandidate{}}
		var prio int32
		if err := rs.Scan(&h.c.FirstID, &prio, &h.group); err != nil {
			rs.Close()
			return nil, err
		}
		h.c.Priority = int(prio)
		heads = append(heads, h)
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, err
	}
	cands := make([]*store.BatchCandidate, 0, len(heads)+1)
	for _, h := range heads {
		run, err := s.readRun(ctx, tx, h.group, h.c.FirstID, p.MaxJobs)
		if err != nil {
			return nil, err
		}
		store.TakeRun(h.c, run, p.Kind, p.Queue, p.MaxJobs)
		cands = append(cands, h.c)
	}
	if !p.Ungrouped {
		return cands, nil
	}
	c, err := s.ungrouped(ctx, tx, p)
	if err != nil || c == nil {
		return cands, err
	}
	return append(cands, c), nil
}

// readRun reads and locks up to n jobs of group from its first unfinished job, first, on.
func (s *Store) readRun(ctx context.Context, tx pgx.Tx, group, first string, n int) ([]store.BatchRun, error) {
	rs, err := tx.Query(ctx, s.sql(batchRunSQL), group, first, n)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var run []store.BatchRun
	for rs.Next() {
		var r store.BatchRun
		var state string
		if err := rs.Scan(&r.ID, &r.Kind, &r.Queue, &state, &r.RunAt); err != nil {
			return nil, err
		}
		r.State = hoppertype.JobState(state)
		run = append(run, r)
	}
	return run, rs.Err()
}

// ungrouped is the candidate batch of the kind's jobs without a group; nil when none waits.
func (s *Store) ungrouped(ctx context.Context, tx pgx.Tx, p *store.BatchClaimParams) (*store.BatchCandidate, error) {
	rs, err := tx.Query(ctx, s.sql(batchUngroupedSQL), p.Queue, p.Kind, p.MaxJobs)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var c *store.BatchCandidate
	for rs.Next() {
		var id string
		var prio int32
		var at time.Time
		if err := rs.Scan(&id, &prio, &at); err != nil {
			return nil, err
		}
		if c == nil {
			c = &store.BatchCandidate{FirstID: id, Priority: int(prio), Oldest: at}
		}
		c.IDs = append(c.IDs, id)
		if at.Before(c.Oldest) {
			c.Oldest = at
		}
	}
	return c, rs.Err()
}

// claimIDs moves the locked queued jobs ids to running, each with its own lease and token,
// and returns them in ids' order.
func (s *Store) claimIDs(ctx context.Context, tx pgx.Tx, p *store.BatchClaimParams, ids []string, at any) ([]*hoppertype.JobRow, error) {
	rs, err := tx.Query(ctx, s.sql(batchClaimSQL), at, p.WorkerID, micros(p.LeaseDuration), ids)
	if err != nil {
		return nil, err
	}
	jobs, err := scanJobs(rs)
	if err != nil {
		return nil, err
	}
	if len(jobs) != len(ids) {
		return nil, fmt.Errorf("batch claim: %d of %d jobs moved", len(jobs), len(ids))
	}
	store.SortByIDs(jobs, ids)
	return jobs, nil
}

// batchKeysSQL reads the fairness keys of a batch's jobs.
const batchKeysSQL = `SELECT id, coalesce(fairness_key, '') FROM {schema}.jobs WHERE id = ANY($1::text[])`

// boundBatchByKey cuts a batch before its first job whose fairness key has no slot or start
// left under the limits per key, read after the claim's locks (as the fair claim reads them).
func (s *Store) boundBatchByKey(ctx context.Context, tx pgx.Tx, p *store.BatchClaimParams, limits []store.KeyLimit,
	best *store.BatchCandidate, now time.Time) ([]string, *store.KeyLeft, error) {
	rs, err := tx.Query(ctx, s.sql(batchKeysSQL), best.IDs)
	if err != nil {
		return nil, nil, err
	}
	keyOf := map[string]string{}
	for rs.Next() {
		var id, key string
		if err := rs.Scan(&id, &key); err != nil {
			rs.Close()
			return nil, nil, err
		}
		keyOf[id] = key
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return nil, nil, err
	}
	cands := store.BatchCandidates(best, p.Kind, keyOf)
	kl, err := s.loadKeyLeft(ctx, tx, p.Queue, limits, cands, now)
	if err != nil {
		return nil, nil, err
	}
	return best.IDs[:kl.BatchPrefix(cands)], kl, nil
}
