package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// SQLite has one writer (writer.go), so the look-up of the job a key merges into and the
// write that merges are one step: no other enqueue runs between them. Requests that share a
// transaction run one after the other, each seeing what the earlier ones wrote.

// mergeTargetSQL finds the job a merge key merges into (store/merge.go): of the item's kind,
// waiting, never claimed. jobs_merge serves it.
const mergeTargetSQL = `SELECT id, args, coalesce(merge_policy, '') FROM jobs
	WHERE merge_key = ? AND kind = ? AND state IN ('queued', 'scheduled') AND token = 0
	ORDER BY id LIMIT 1`

// mergeSQL merges into one job: new args (NULL keeps them) and a new version, the seq of the
// merge's history event. The history triggers fire only on a change of state.
const mergeSQL = `UPDATE jobs SET args = coalesce(?1, args), version = version + 1, updated_at = ?2
	WHERE id = ?3 RETURNING ` + jobColumns

const mergeEventSQL = `INSERT INTO job_events (job_id, seq, at, from_state, to_state, actor, reason)
	SELECT id, version, updated_at, state, state, ?2, ?3 FROM jobs WHERE id = ?1`

// merge merges item i of a batch into the job its merge key names and returns that job as
// the merge left it, or nil when there is none (the item makes a new job).
func (s *Store) merge(ctx context.Context, tx *sql.Tx, i int, p *store.InsertParams, now time.Time) (*hoppertype.JobRow, error) {
	t := &store.MergeTarget{}
	var policy string
	err := tx.QueryRowContext(ctx, mergeTargetSQL, p.MergeKey, p.Kind).Scan(&t.ID, &t.Args, &policy)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up merge key %q: %w", p.MergeKey, err)
	}
	t.Policy = hoppertype.MergePolicy(policy)
	args, err := store.MergedArgs(t, i, p)
	if err != nil {
		return nil, err
	}
	var newArgs any
	if args != nil {
		newArgs = args
	}
	row, err := scanJob(tx.QueryRowContext(ctx, mergeSQL, newArgs, micros(now), t.ID))
	if err != nil {
		return nil, fmt.Errorf("merge into job %s: %w", t.ID, err)
	}
	if _, err := tx.ExecContext(ctx, mergeEventSQL, t.ID, string(p.Actor), store.MergeReason(p.Merge)); err != nil {
		return nil, fmt.Errorf("record merge into job %s: %w", t.ID, err)
	}
	return row, recordKey(ctx, tx, p, row.ID, now)
}

// mergePolicy is the merge_policy column of p's new job.
func mergePolicy(p *store.InsertParams) any {
	if p.MergeKey == "" {
		return nil
	}
	return nullString(string(p.Merge))
}
