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

// JobGet returns one job.
func (s *Store) JobGet(ctx context.Context, id string) (*hoppertype.JobRow, error) {
	job, err := scanJob(s.reader.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE id = ?1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, wrap(err, "get job %s", id)
	}
	if now := s.clock.Now(); !job.ExpiresAt.IsZero() && !job.ExpiresAt.After(now) {
		s.removeExpired(ctx, id, now)
		return nil, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return job, nil
}

// removeExpired deletes an expired job a read came across (contract 12: removed lazily on
// read, swept periodically), unless its idempotency key is live, as the sweep would: once a
// reader was told the job is gone, a clock stepped back must not bring it back. It is best
// effort: if the write fails, the sweep deletes the job later.
func (s *Store) removeExpired(ctx context.Context, id string, now time.Time) {
	_ = s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM jobs WHERE id = ?1 AND expires_at <= ?2
			AND NOT EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.job_id = jobs.id AND k.expires_at > ?2)`,
			id, micros(now))
		return err
	})
}

// JobList returns one page of jobs, filtered, in id (creation) order.
func (s *Store) JobList(ctx context.Context, p *store.ListParams) (*store.ListResult, error) {
	limit := store.PageLimit(p.Limit)
	// An expired job is gone for readers, swept or not (contract 12).
	where := []string{"(expires_at IS NULL OR expires_at > ?)"}
	args := []any{micros(s.clock.Now())}
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		where = append(where, col+" IN ("+strings.TrimSuffix(strings.Repeat("?,", len(vals)), ",")+")")
		for _, v := range vals {
			args = append(args, v)
		}
	}
	states := make([]string, len(p.States))
	for i, st := range p.States {
		states[i] = string(st)
	}
	in("state", states)
	if onlyRare(p.States) {
		// The literal term lets SQLite use the partial index jobs_state_rare, which a bound
		// parameter cannot prove applicable: listing dead letters stays an index range.
		where = append(where, "state IN ('failed', 'canceled', 'suspended')")
	}
	if len(states) == 1 && p.States[0] == hoppertype.StateWaiting {
		where = append(where, "state = 'waiting'") // the partial index jobs_waiting, likewise
	}
	in("queue", p.Queues)
	in("kind", p.Kinds)
	in("last_error_code", p.ErrorCodes)
	in("fairness_key", p.FairnessKeys)
	if !p.CreatedAfter.IsZero() {
		where, args = append(where, "created_at >= ?"), append(args, micros(p.CreatedAfter))
	}
	if !p.CreatedBefore.IsZero() {
		where, args = append(where, "created_at < ?"), append(args, micros(p.CreatedBefore))
	}
	if !p.FinishedAfter.IsZero() {
		where, args = append(where, "finished_at >= ?"), append(args, micros(p.FinishedAfter))
	}
	if !p.FinishedBefore.IsZero() {
		where, args = append(where, "finished_at < ?"), append(args, micros(p.FinishedBefore))
	}
	if p.ArgsContains != "" {
		where, args = append(where, "instr(args, ?) > 0"), append(args, []byte(p.ArgsContains))
	}
	if p.ExcludeReplayed {
		where = append(where, notReplayed)
	}
	order, cmp := "DESC", "<"
	if p.Ascending {
		order, cmp = "ASC", ">"
	}
	if p.Cursor != "" {
		after, err := store.DecodeCursor(p.Cursor)
		if err != nil {
			return nil, err
		}
		where, args = append(where, "id "+cmp+" ?"), append(args, after)
	}
	query := `SELECT ` + jobColumns + ` FROM jobs WHERE ` + strings.Join(where, " AND ")
	query += " ORDER BY id " + order + " LIMIT ?"
	args = append(args, limit+1)
	rows, err := s.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap(err, "list jobs")
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, wrap(err, "list jobs")
	}
	res := &store.ListResult{Jobs: jobs}
	if len(jobs) > limit {
		res.Jobs = jobs[:limit]
		res.NextCursor = store.EncodeCursor(jobs[limit-1].ID)
	}
	return res, nil
}

// live is the condition of a job that has not expired, with the store's clock as ?2.
const live = `(expires_at IS NULL OR expires_at > ?2)`

// onlyRare reports whether states is not empty and holds only the states jobs_state_rare
// indexes.
func onlyRare(states []hoppertype.JobState) bool {
	for _, st := range states {
		if st != hoppertype.StateFailed && st != hoppertype.StateCanceled && st != hoppertype.StateSuspended {
			return false
		}
	}
	return len(states) > 0
}
