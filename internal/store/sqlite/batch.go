package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// The reads of a batch claim (store.BatchClaimParams). batchHeadsSQL finds the groups whose
// first unfinished job is a queued job of the kind, none of whose jobs runs (the claim's group
// rule, candidateFrom, with the states spelled out so that the probe is a range of jobs_group
// and not a scan of the table: TestBatchPlans), in claim order; batchRunSQL reads a group from its first job on, in
// group order; batchUngroupedSQL the kind's jobs without a group, in claim order.
const (
	batchHeadsSQL = `SELECT j.id, j.priority, j.group_key FROM jobs j
	WHERE j.state = 'queued' AND j.queue = ?1 AND j.kind = ?2 AND j.group_key IS NOT NULL
	  AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = ?1 AND q.paused = 1)
	  AND NOT EXISTS (SELECT 1 FROM jobs g WHERE g.group_key = j.group_key
	        AND g.state IN ('running', 'queued', 'scheduled', 'suspended') AND (g.state = 'running' OR g.id < j.id))
	ORDER BY j.priority DESC, j.id
	LIMIT +?3`
	batchRunSQL = `SELECT id, kind, queue, state, run_at FROM jobs
	WHERE group_key = ?1 AND id >= ?2 AND state IN ('running', 'queued', 'scheduled', 'suspended')
	ORDER BY id LIMIT +?3`
	batchUngroupedSQL = `SELECT j.id, j.priority, j.run_at FROM jobs j
	WHERE j.state = 'queued' AND j.queue = ?1 AND j.kind = ?2 AND j.group_key IS NULL
	  AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = ?1 AND q.paused = 1)
	ORDER BY j.priority DESC, j.id
	LIMIT +?3`
)

// JobClaimBatch claims one batch (store.BatchClaimParams) in one write transaction: SQLite has
// one writer, so the group read and the claim cannot race another claim.
func (s *Store) JobClaimBatch(ctx context.Context, p *store.BatchClaimParams) (*store.BatchClaim, error) {
	out := &store.BatchClaim{}
	if p.MaxJobs <= 0 {
		return out, nil
	}
	queries := []string{queueCapSQL, queueRunningSQL, kindRulesSQL, writeQueueBucketSQL, writeKindBucketSQL,
		batchHeadsSQL, batchRunSQL, batchUngroupedSQL}
	err := s.write(ctx, queries, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		now := s.clock.Now()
		c, disabled, err := loadCaps(ctx, stmts[0:3], &store.ClaimParams{Queue: p.Queue, Kinds: []string{p.Kind}}, now)
		if err != nil || slices.Contains(disabled, p.Kind) {
			return err
		}
		limit := c.Limit(p.MaxJobs)
		var keys *store.KeyLeft // what the limits per key left the batch, nil when none applies
		if left, ok := c.KindLeft[p.Kind]; ok {
			limit = min(limit, left)
		}
		if limit > 0 {
			cands, err := batchCandidates(ctx, stmts[5:8], p)
			if err != nil {
				return err
			}
			best, readyAt := store.PickBatch(cands, limit, p.MaxWait, now)
			out.ReadyAt = readyAt
			if best != nil {
				ids := best.IDs
				if len(c.KeyLimits) > 0 {
					if ids, keys, err = boundBatchByKey(ctx, tx, p, c.KeyLimits, best, now); err != nil {
						return err
					}
				}
				if len(ids) > 0 {
					if out.Jobs, err = claimIDs(ctx, tx, p, ids, now); err != nil {
						return err
					}
				}
			}
		}
		out.Hold, err = c.Spend(p.MaxJobs, out.Jobs, func(kinds []string) (bool, error) {
			var ok bool
			err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'queued' AND queue = ? AND kind = ?)`,
				p.Queue, p.Kind).Scan(&ok)
			return ok, err
		})
		if err != nil {
			return err
		}
		if keys != nil {
			keys.Spend(out.Jobs)
			keys.Hold(&out.Hold, p.MaxJobs, len(out.Jobs))
			if err := writeKeyBuckets(ctx, tx, keys, limit, now); err != nil {
				return err
			}
		}
		return writeBuckets(ctx, stmts[3:5], p.Queue, c, now)
	})
	if err != nil {
		return nil, fmt.Errorf("claim a batch of kind %q in queue %q: %w", p.Kind, p.Queue, err)
	}
	return out, nil
}

// batchCandidates reads the candidate batches in claim order, with the statements of
// batchHeadsSQL, batchRunSQL and batchUngroupedSQL: the groups' (at most store.BatchHeadScan,
// one without a linger) and, with Ungrouped, the ungrouped jobs as one candidate.
func batchCandidates(ctx context.Context, stmts []*sql.Stmt, p *store.BatchClaimParams) ([]*store.BatchCandidate, error) {
	scan := store.BatchHeadScan
	if p.MaxWait <= 0 {
		scan = 1
	}
	type head struct {
		c     *store.BatchCandidate
		group string
	}
	var heads []head
	rows, err := stmts[0].QueryContext(ctx, p.Queue, p.Kind, scan)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		h := head{c: &store.BatchCandidate{}}
		if err := rows.Scan(&h.c.FirstID, &h.c.Priority, &h.group); err != nil {
			rows.Close()
			return nil, err
		}
		heads = append(heads, h)
	}
	if err := rows.Close(); err != nil {
		return nil, err
	}
	cands := make([]*store.BatchCandidate, 0, len(heads)+1)
	for _, h := range heads {
		run, err := readRun(ctx, stmts[1], h.group, h.c.FirstID, p.MaxJobs)
		if err != nil {
			return nil, err
		}
		store.TakeRun(h.c, run, p.Kind, p.Queue, p.MaxJobs)
		cands = append(cands, h.c)
	}
	if p.Ungrouped {
		c, err := ungrouped(ctx, stmts[2], p)
		if err != nil || c == nil {
			return cands, err
		}
		cands = append(cands, c)
	}
	return cands, nil
}

// readRun reads up to n jobs of group from its first unfinished job, first, on.
func readRun(ctx context.Context, st *sql.Stmt, group, first string, n int) ([]store.BatchRun, error) {
	rows, err := st.QueryContext(ctx, group, first, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var run []store.BatchRun
	for rows.Next() {
		var r store.BatchRun
		var at int64
		if err := rows.Scan(&r.ID, &r.Kind, &r.Queue, &r.State, &at); err != nil {
			return nil, err
		}
		r.RunAt = fromMicros(at)
		run = append(run, r)
	}
	return run, rows.Err()
}

// ungrouped is the candidate batch of the kind's jobs without a group; nil when none waits.
func ungrouped(ctx context.Context, st *sql.Stmt, p *store.BatchClaimParams) (*store.BatchCandidate, error) {
	rows, err := st.QueryContext(ctx, p.Queue, p.Kind, p.MaxJobs)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var c *store.BatchCandidate
	for rows.Next() {
		var id string
		var prio int
		var at int64
		if err := rows.Scan(&id, &prio, &at); err != nil {
			return nil, err
		}
		if c == nil {
			c = &store.BatchCandidate{FirstID: id, Priority: prio, Oldest: fromMicros(at)}
		}
		c.IDs = append(c.IDs, id)
		if t := fromMicros(at); t.Before(c.Oldest) {
			c.Oldest = t
		}
	}
	return c, rows.Err()
}

// claimIDs moves the jobs ids, queued, to running, each with its own lease and token, in ids'
// order.
func claimIDs(ctx context.Context, tx *sql.Tx, p *store.BatchClaimParams, ids []string, now time.Time) ([]*hoppertype.JobRow, error) {
	marks := make([]string, len(ids))
	args := []any{p.WorkerID, micros(now.Add(p.LeaseDuration)), micros(now)}
	for i, id := range ids {
		marks[i] = fmt.Sprintf("?%d", 4+i)
		args = append(args, id)
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(claimSQL, strings.Join(marks, ",")), args...)
	if err != nil {
		return nil, err
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, err
	}
	if len(jobs) != len(ids) {
		return nil, fmt.Errorf("batch claim: %d of %d jobs moved", len(jobs), len(ids))
	}
	store.SortByIDs(jobs, ids)
	return jobs, nil
}

// boundBatchByKey cuts a batch before its first job whose fairness key has no slot or start
// left under the limits per key, read in the claim's transaction (as the fair claim reads them).
func boundBatchByKey(ctx context.Context, tx *sql.Tx, p *store.BatchClaimParams, limits []store.KeyLimit,
	best *store.BatchCandidate, now time.Time) ([]string, *store.KeyLeft, error) {
	args := make([]any, len(best.IDs))
	for i, id := range best.IDs {
		args[i] = id
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(args)), ",")
	rows, err := tx.QueryContext(ctx, `SELECT id, coalesce(fairness_key, '') FROM jobs WHERE id IN (`+marks+`)`, args...)
	if err != nil {
		return nil, nil, err
	}
	keyOf := map[string]string{}
	for rows.Next() {
		var id, key string
		if err := rows.Scan(&id, &key); err != nil {
			rows.Close()
			return nil, nil, err
		}
		keyOf[id] = key
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, nil, err
	}
	cands := store.BatchCandidates(best, p.Kind, keyOf)
	kl, err := loadKeyLeft(ctx, tx, p.Queue, limits, cands, now)
	if err != nil {
		return nil, nil, err
	}
	return best.IDs[:kl.BatchPrefix(cands)], kl, nil
}
