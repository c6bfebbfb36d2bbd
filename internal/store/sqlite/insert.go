package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// insertJobSQL inserts a job; insertChildSQL a child that waits for ?27 unended parents
// (linkChild), so a plain job's insert binds nothing for dependencies. Both are INSERT OR
// FAIL, for the reason finishSetSQL is an UPDATE OR FAIL (finish.go): no statement journal,
// and an error fails the whole request.
//
// A child is stored apart from the jobs inserted with it: its rowid is one less than the
// smallest (a descent to the table's first leaf), where a job's is one more than the
// largest, so the children of every insert gather at the table's start, the newest first,
// and the jobs that run at once at its end. A child is written after its parents (its
// release, then its claim and its end, in other transactions): on the pages of its parents,
// as a workflow's insert would place it, each page of a fan-out was written again for each
// phase of its fan-in, twice as many pages a job as plain jobs (the WAL frames of the
// workflow benchmark's one-queue run, docs/benchmarks.md). Nothing reads the rowid.
const (
	insertJobSQL   = `INSERT OR FAIL INTO jobs (` + insertColumns + `) VALUES (` + insertValues + `)`
	insertChildSQL = `INSERT OR FAIL INTO jobs (rowid, ` + insertColumns + `, parents_pending)
	VALUES ((SELECT coalesce(min(rowid), 0) - 1 FROM jobs), ` + insertValues + `, ?27)`
	insertColumns = `id, kind, queue, priority, args, headers, state, max_attempts,
	run_at, timeout_us, retry_policy, idempotency_key, group_key, merge_key, schedule_id,
	last_actor, last_reason, created_actor, created_reason, created_at, updated_at, result_ttl_us,
	max_rescues, merge_policy, fairness_key, on_parent_failure, workflow_id, workflow_step`
	insertValues = `?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?16, ?17, ?18, ?19, ?20,
	?21, ?22, ?23, ?24, ?25, ?26`
)

// JobInsertMany inserts every job in one transaction. Items with a merge key merge in their
// order (merge.go): the single writer makes each look-up and its write one step.
func (s *Store) JobInsertMany(ctx context.Context, params []*store.InsertParams) ([]*store.InsertResult, error) {
	if err := store.CheckBatch(params); err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	if err := store.CheckParentOrder(params); err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	var out []*store.InsertResult
	err := s.write(ctx, []string{insertJobSQL, statsSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		var err error
		out, err = s.insertJobs(ctx, tx, stmts, params, s.clock.Now())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("insert jobs: %w", err)
	}
	return out, nil
}

// insertJobs inserts the checked batch params inside tx at now, with the prepared insertJobSQL
// and statsSQL stmts.
func (s *Store) insertJobs(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt, params []*store.InsertParams, now time.Time) ([]*store.InsertResult, error) {
	out := make([]*store.InsertResult, len(params))
	stats := store.NewStatsBatch(now)
	aliases, flagged, q := store.Aliases{}, store.FlaggedParents{}, s.cached(tx)
	for i, p := range params {
		res, err := s.insertItem(ctx, q, stmts[0], i, p, aliases, flagged, now)
		if err != nil {
			return nil, err
		}
		out[i] = res
		aliases.Note(p, res)
		if !res.Existing && !res.Merged {
			stats.Enqueued(res.Job.Queue, res.Job.Kind)
		}
	}
	if err := writeStats(ctx, stmts[1], stats); err != nil {
		return nil, err
	}
	return out, nil
}

// insertItem inserts item i, p, inside q's transaction: the job its idempotency key names, the
// job it merged into, or a new job. A new child waits for the jobs its parents stand for:
// aliases names the earlier items of the call the store returned another job for, flagged the
// parents the call has flagged. q binds the call's statements once for all its items.
func (s *Store) insertItem(ctx context.Context, q *cachedTx, ins *sql.Stmt, i int, p *store.InsertParams, aliases store.Aliases, flagged store.FlaggedParents, now time.Time) (*store.InsertResult, error) {
	tx := q.tx
	if p.IdempotencyKey != "" {
		existing, err := s.idempotentJob(ctx, tx, p)
		if err != nil {
			return nil, err
		}
		if existing != nil {
			return &store.InsertResult{Job: existing, Existing: true}, nil
		}
	}
	if p.MergeKey != "" {
		merged, err := s.merge(ctx, tx, i, p, now)
		if err != nil {
			return nil, err
		}
		if merged != nil {
			return &store.InsertResult{Job: merged, Merged: true}, nil
		}
	}
	if len(p.After) > 0 {
		row, err := insertChild(ctx, q, i, p, aliases.Resolve(p.After), flagged, now)
		if err != nil {
			return nil, err
		}
		return &store.InsertResult{Job: row}, nil
	}
	row, err := insertRow(ctx, tx, ins, p, now)
	if err != nil {
		return nil, err
	}
	return &store.InsertResult{Job: row}, nil
}

// insertRow inserts p's job with the prepared insertJobSQL ins and records its idempotency
// key, inside tx. Callers have checked the key and looked for a job to merge into.
func insertRow(ctx context.Context, tx *sql.Tx, ins *sql.Stmt, p *store.InsertParams, now time.Time) (*hoppertype.JobRow, error) {
	row := newRow(p, now)
	if _, err := ins.ExecContext(ctx, insertArgs(row, p, now)...); err != nil {
		return nil, fmt.Errorf("insert job %s: %w", row.ID, err)
	}
	return row, recordKey(ctx, tx, p, row.ID, now)
}

// insertArgs are insertJobSQL's parameters for p's job row.
func insertArgs(row *hoppertype.JobRow, p *store.InsertParams, now time.Time) []any {
	return []any{row.ID, row.Kind, row.Queue, row.Priority, []byte(row.Args),
		encodeHeaders(row.Headers), string(row.State), row.MaxAttempts, micros(row.RunAt),
		row.Timeout.Microseconds(), encodePolicy(row.RetryPolicy), nullString(row.IdempotencyKey),
		nullString(row.GroupKey), nullString(row.MergeKey), nullString(row.ScheduleID),
		string(p.Actor), nullString(p.Reason), micros(now), micros(now), p.ResultTTL.Microseconds(),
		row.MaxRescues, mergePolicy(p), nullString(row.FairnessKey), parentPolicy(p),
		nullString(p.WorkflowID), nullString(p.Step)}
}

// recordKey makes p's idempotency key, if it has one, name job jobID.
func recordKey(ctx context.Context, tx *sql.Tx, p *store.InsertParams, jobID string, now time.Time) error {
	if p.IdempotencyKey == "" {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO idempotency_keys (key, job_id, payload_hash, expires_at)
		VALUES (?, ?, ?, ?)`, p.IdempotencyKey, jobID, store.PayloadHash(p.Kind, p.Args),
		micros(now.Add(p.IdempotencyTTL))); err != nil {
		return fmt.Errorf("record idempotency key: %w", err)
	}
	return nil
}

// idempotentJob returns the live job the key names, nil when the key is free, or ErrDuplicate
// when the key names a job with another payload.
func (s *Store) idempotentJob(ctx context.Context, tx *sql.Tx, p *store.InsertParams) (*hoppertype.JobRow, error) {
	var jobID, hash string
	err := tx.QueryRowContext(ctx, `SELECT job_id, payload_hash FROM idempotency_keys WHERE key = ? AND expires_at > ?`,
		p.IdempotencyKey, micros(s.clock.Now())).Scan(&jobID, &hash)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up idempotency key: %w", err)
	}
	if hash != store.PayloadHash(p.Kind, p.Args) {
		return nil, fmt.Errorf("idempotency key %q names job %s: %w", p.IdempotencyKey, jobID, store.ErrDuplicate)
	}
	job, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?`, jobID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return job, err
}

// newRow builds the row an insert creates, so callers get it back without a read.
func newRow(p *store.InsertParams, now time.Time) *hoppertype.JobRow {
	n := fromMicros(now.UnixMicro())
	runAt := p.RunAt
	state := hoppertype.StateQueued
	if runAt.IsZero() || !runAt.After(n) {
		runAt = n
	} else {
		state = hoppertype.StateScheduled
	}
	if len(p.After) > 0 {
		state = hoppertype.StateWaiting // insertChild settles it unless it stays waiting
	}
	return &hoppertype.JobRow{
		ID: p.ID, Kind: p.Kind, Queue: p.Queue, Priority: p.Priority, Args: p.Args,
		Headers: p.Headers, State: state, MaxAttempts: p.MaxAttempts, RunAt: fromMicros(runAt.UnixMicro()),
		MaxRescues: store.RescueBound(p.MaxRescues), Timeout: p.Timeout, RetryPolicy: p.RetryPolicy,
		ResultTTL: p.ResultTTL, IdempotencyKey: p.IdempotencyKey, GroupKey: p.GroupKey, MergeKey: p.MergeKey,
		FairnessKey: p.FairnessKey, ScheduleID: p.ScheduleID, WorkflowID: p.WorkflowID, Step: p.Step,
		CreatedAt: n, UpdatedAt: n,
	}
}

func encodeHeaders(h map[string]string) any {
	if len(h) == 0 {
		return nil
	}
	b, _ := json.Marshal(h) // a map of strings always marshals
	return string(b)
}

func encodePolicy(p *hoppertype.RetryPolicy) any {
	if p == nil {
		return nil
	}
	b, _ := json.Marshal(p) // plain numbers always marshal
	return string(b)
}

// parentPolicy is the on_parent_failure of p's job: its policy when it has parents, else NULL.
func parentPolicy(p *store.InsertParams) any {
	if len(p.After) == 0 {
		return nil
	}
	return string(p.OnParentFailure.OrDefault())
}
