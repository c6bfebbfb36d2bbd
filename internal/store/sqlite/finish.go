package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/jobstate"
	"github.com/hopperjobs/hopper/internal/store"
)

// finishSQL ends a running attempt of a job without children. The token fences it: a stale
// token matches no row. An attempt that ends the job leaves its worker_id in the row, which
// then holds the attempt in place of a job_attempts row (migration 0019, history.go).
// finishParentSQL is the same for a job with children (deps.go), whose ending releases them:
// only an item finishSQL did not match pays for it. finishFailedParentSQL is finishParentSQL
// for an attempt that ends the job failed or canceled, and returns its expiry, which the
// children its failure cancels keep (releaseSQL); no other ending's expiry is read, so the
// common ending, a completion, does not pay for a RETURNING clause (SQLite gathers its rows in
// a table of its own first: about 40 % of the statement's CPU, BenchmarkStore).
const (
	finishSQL             = finishSetSQL + ` AND has_children = 0`
	finishParentSQL       = finishSetSQL + ` AND has_children = 1`
	finishFailedParentSQL = finishParentSQL + ` RETURNING expires_at`
)

// finishSetSQL is an UPDATE OR FAIL: SQLite then opens no statement journal for it. A
// statement that may abort after a write, as any update of jobs.state may (its triggers
// write history), gets one: a sub-transaction whose release, inside the savepoint of a
// request the writer commits with others (writer.go), walks the savepoint's journal, kept in
// 1 KiB blocks, from its start. Once a finish, that walk cost more than any statement of the
// ending (a tenth of the writer's time, the workflow benchmark's profile: docs/benchmarks.md).
// FAIL keeps what the statement wrote before an error, but no error here is survived: the
// request fails and its savepoint, or the transaction, is rolled back. (A full disk in the
// middle of one makes SQLite roll the whole transaction back, and with it the other requests
// of the group: each gets store.ErrUnavailable, TestAFullDiskIsUnavailable.) Its conflict clause
// overrides those of the triggers it fires, so they must not rely on their own (migration
// 0037).
const finishSetSQL = `UPDATE OR FAIL jobs SET
	state = ?1, version = version + 1, attempt = attempt - ?2,
	run_at = coalesce(?3, run_at), lease_expires_at = NULL,
	worker_id = CASE WHEN ?1 IN ('completed', 'failed', 'canceled') THEN worker_id END,
	updated_at = ?4, finished_at = ?5, result = coalesce(?6, result), last_error = ?7,
	last_outcome = ?8, last_stack = ?9, last_actor = ?10, last_reason = ?11,
	checkpoint = coalesce(?12, checkpoint), expires_at = coalesce(?13,
		CASE WHEN ?18 IS NOT NULL THEN ?4 + (CASE WHEN result_ttl_us > 0 THEN result_ttl_us ELSE ?18 END) END,
		expires_at), deadline_at = ?14,
	max_attempts = coalesce(?17, max_attempts), last_error_code = ?19,
	resume_data = CASE WHEN ?8 = 'suspended' THEN NULL ELSE resume_data END
WHERE id = ?15 AND token = ?16 AND state = 'running'`

// JobFinishMany ends running attempts in one transaction.
func (s *Store) JobFinishMany(ctx context.Context, params []*store.FinishParams) ([]error, error) {
	errs := make([]error, len(params))
	err := s.write(ctx, []string{finishSQL, statsFinishedSQL, statsSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		st, q := stmts[0], s.cached(tx)
		now := s.clock.Now()
		stats := store.NewStatsBatch(now)
		var ended finishedBatch // the ends without their Job: counted from their rows
		var parents []*store.Ending
		var parentItems []int // the items of parents
		for i, p := range params {
			if err := jobstate.Check(hoppertype.StateRunning, p.State); err != nil {
				errs[i] = err
				continue
			}
			// A job claimed with children keeps them (has_children is never cleared): it
			// goes straight to finishParent. One that had none when claimed may have gained
			// some since, so finishOne's miss sends it there too.
			matched := false
			if p.Job == nil || p.Job.ID != p.ID || !p.Job.HasChildren {
				var err error
				if matched, err = s.finishOne(ctx, st, p, now); err != nil {
					return err
				}
			}
			if !matched {
				parent, err := finishParent(ctx, q, p, now)
				if err != nil {
					return err
				}
				if parent == nil {
					errs[i] = refused(ctx, tx, p.ID, p.Token)
					continue
				}
				if p.State.Terminal() {
					parents, parentItems = append(parents, parent), append(parentItems, i)
				}
			}
			if p.Job == nil || p.Job.ID != p.ID {
				ended.add(p)
				continue
			}
			stats.FinishedJob(p.Job, p)
		}
		if err := writeStats(ctx, stmts[2], stats); err != nil {
			return err
		}
		settled, err := release(ctx, q, parents, now)
		if err != nil {
			return err
		}
		if queues := releasedQueues(settled); len(queues) > 0 {
			for _, i := range parentItems {
				params[i].Released = queues
			}
		}
		return ended.write(ctx, stmts[1], now)
	})
	if err != nil {
		return nil, fmt.Errorf("finish jobs: %w", err)
	}
	return errs, nil
}

// releasedQueues are the queues of the settled children that can be claimed now or later
// (queued or scheduled), each once.
func releasedQueues(settled []*store.Settled) []string {
	var queues []string
	for _, c := range settled {
		if (c.State == hoppertype.StateQueued || c.State == hoppertype.StateScheduled) && !slices.Contains(queues, c.Queue) {
			queues = append(queues, c.Queue)
		}
	}
	return queues
}

// finishOne reports whether the token matched a running attempt.
func (s *Store) finishOne(ctx context.Context, st *sql.Stmt, p *store.FinishParams, now time.Time) (bool, error) {
	res, err := st.ExecContext(ctx, finishArgs(p, now)...)
	if err != nil {
		return false, fmt.Errorf("finish job %s: %w", p.ID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// finishParent ends the attempt p as finishOne does, for a job with children; it returns the
// ending their release needs, or nil when the token matched no running attempt.
func finishParent(ctx context.Context, tx querier, p *store.FinishParams, now time.Time) (*store.Ending, error) {
	e := &store.Ending{ID: p.ID, Outcome: store.OutcomeOf(p.State, false), Actor: p.Actor}
	if !p.State.Terminal() || !e.Outcome.Failed() {
		res, err := tx.ExecContext(ctx, finishParentSQL, finishArgs(p, now)...)
		if err != nil {
			return nil, fmt.Errorf("finish job %s: %w", p.ID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return nil, fmt.Errorf("finish job %s: %w", p.ID, err)
		}
		if n == 0 {
			return nil, nil
		}
		return e, nil
	}
	var expires sql.NullInt64
	err := tx.QueryRowContext(ctx, finishFailedParentSQL, finishArgs(p, now)...).Scan(&expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("finish job %s: %w", p.ID, err)
	}
	e.ExpiresAt = nullTime(expires)
	return e, nil
}

// finishArgs are finishSQL's parameters for p.
func finishArgs(p *store.FinishParams, now time.Time) []any {
	giveBack := 0
	if p.GiveBack {
		giveBack = 1
	}
	var finished any
	if p.State.Terminal() {
		finished = now.UnixMicro()
	}
	return []any{string(p.State), giveBack, nullMicros(p.RunAt), now.UnixMicro(), finished,
		nullBytes(p.Result), nullString(p.Error), string(p.Outcome), nullString(p.Stack), string(p.Actor),
		nullString(p.Reason), nullBytes(p.Checkpoint), nullMicros(p.ExpiresAt), nullMicros(p.DeadlineAt),
		p.ID, p.Token, nullPositive(p.MaxAttempts), nullPositive(int(p.ExpiresAfter.Microseconds())),
		nullString(p.ErrorCode)}
}

const extendSQL = `UPDATE jobs SET lease_expires_at = ? WHERE id = ? AND token = ? AND state = 'running'`

// JobExtendLeases moves each lease's expiry to now + Duration.
func (s *Store) JobExtendLeases(ctx context.Context, params []*store.ExtendParams) ([]error, error) {
	errs := make([]error, len(params))
	err := s.write(ctx, []string{extendSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		st := stmts[0]
		now := s.clock.Now()
		for i, p := range params {
			res, err := st.ExecContext(ctx, micros(now.Add(p.Duration)), p.ID, p.Token)
			if err != nil {
				return fmt.Errorf("extend lease of job %s: %w", p.ID, err)
			}
			if n, _ := res.RowsAffected(); n == 0 {
				errs[i] = refused(ctx, tx, p.ID, p.Token)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("extend leases: %w", err)
	}
	return errs, nil
}

// JobHeartbeat records a sign of life of a running attempt.
func (s *Store) JobHeartbeat(ctx context.Context, p *store.HeartbeatParams) error {
	return s.touch(ctx, p.ID, p.Token, `UPDATE jobs SET heartbeat_at = ?1 WHERE id = ?2 AND token = ?3 AND state = 'running'`)
}

// JobProgress stores clamped progress and counts as a heartbeat.
func (s *Store) JobProgress(ctx context.Context, p *store.ProgressParams) error {
	return s.touch(ctx, p.ID, p.Token, `UPDATE jobs SET heartbeat_at = ?1, progress_percent = ?4, progress_message = ?5
		WHERE id = ?2 AND token = ?3 AND state = 'running'`, store.ClampPercent(p.Percent), nullString(p.Message))
}

func (s *Store) touch(ctx context.Context, id string, token int64, query string, extra ...any) error {
	return s.write(ctx, []string{query}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		res, err := stmts[0].ExecContext(ctx, append([]any{micros(s.clock.Now()), id, token}, extra...)...)
		if err != nil {
			return fmt.Errorf("update job %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return refused(ctx, tx, id, token)
		}
		return nil
	})
}

// refused is the verdict on a fenced call that changed nothing: NoSuchJob when no job has the
// id, else ErrLeaseLost. Only refused calls pay for the read that tells the two apart; if that
// read fails, the verdict stays ErrLeaseLost, which is true either way.
func refused(ctx context.Context, tx *sql.Tx, id string, token int64) error {
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE id = ?)`, id).Scan(&exists); err == nil && !exists {
		return store.NoSuchJob(id)
	}
	return fmt.Errorf("job %s token %d: %w", id, token, store.ErrLeaseLost)
}

// nullPositive is NULL for n ≤ 0 ("keep the stored value").
func nullPositive(n int) any {
	if n <= 0 {
		return nil
	}
	return n
}
