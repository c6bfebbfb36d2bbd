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

var _ store.ScheduleStore = (*Store)(nil)

const scheduleColumns = `name, spec, mode, interval_us, tz, kind, queue, args, headers, priority,
	max_attempts, timeout_us, catch_up, overlap, jitter_us, paused, source, last_fire_at,
	next_fire_at, last_job_id, fired_at, manual_fire_at, manual_job_id, created_at, updated_at, workflow,
	last_workflow_id`

// scheduleUpsertSQL keeps an existing schedule's fire times unless its timing changed, and
// never clears its pause. SET expressions read the row as it was before the update.
const scheduleUpsertSQL = `INSERT INTO schedules (name, spec, mode, interval_us, tz, kind, queue, args,
	headers, priority, max_attempts, timeout_us, catch_up, overlap, jitter_us, paused, source,
	last_fire_at, next_fire_at, created_at, updated_at, workflow)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?20, ?21)
ON CONFLICT (name) DO UPDATE SET
	spec = excluded.spec, mode = excluded.mode, interval_us = excluded.interval_us, tz = excluded.tz,
	kind = excluded.kind, queue = excluded.queue, args = excluded.args, headers = excluded.headers,
	priority = excluded.priority, max_attempts = excluded.max_attempts, timeout_us = excluded.timeout_us,
	catch_up = excluded.catch_up, overlap = excluded.overlap, jitter_us = excluded.jitter_us,
	workflow = excluded.workflow,
	paused = max(schedules.paused, excluded.paused), source = excluded.source,
	last_fire_at = CASE WHEN ` + timingChanged + ` THEN excluded.last_fire_at ELSE schedules.last_fire_at END,
	next_fire_at = CASE WHEN ` + timingChanged + ` THEN excluded.next_fire_at ELSE schedules.next_fire_at END,
	updated_at = excluded.updated_at
RETURNING ` + scheduleColumns

const timingChanged = `(schedules.spec <> excluded.spec OR schedules.mode <> excluded.mode
	OR schedules.interval_us <> excluded.interval_us OR schedules.tz <> excluded.tz)`

// ScheduleUpsert creates or replaces a schedule's definition.
func (s *Store) ScheduleUpsert(ctx context.Context, sc *store.Schedule) (*store.Schedule, error) {
	var out *store.Schedule
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		var err error
		out, err = scanSchedule(tx.QueryRowContext(ctx, scheduleUpsertSQL, sc.Name, sc.Spec, sc.Mode,
			sc.Interval.Microseconds(), sc.TZ, sc.Kind, sc.Queue, []byte(sc.Args), encodeHeaders(sc.Headers),
			sc.Priority, sc.MaxAttempts, sc.Timeout.Microseconds(), sc.CatchUp, sc.Overlap,
			sc.Jitter.Microseconds(), sc.Paused, sc.Source, nullMicros(sc.LastFireAt),
			nullMicros(sc.NextFireAt), micros(s.clock.Now()), store.EncodeTemplate(sc.Workflow)))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("upsert schedule %q: %w", sc.Name, err)
	}
	return out, nil
}

// ScheduleGet returns one schedule.
func (s *Store) ScheduleGet(ctx context.Context, name string) (*store.Schedule, error) {
	sc, err := scanSchedule(s.reader.QueryRowContext(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("schedule %q: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, wrap(err, "get schedule %q", name)
	}
	return sc, nil
}

// ScheduleList returns every schedule by name.
func (s *Store) ScheduleList(ctx context.Context) ([]*store.Schedule, error) {
	out, err := s.querySchedules(ctx, `SELECT `+scheduleColumns+` FROM schedules ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list schedules: %w", err)
	}
	return out, nil
}

// ScheduleDue returns the unpaused schedules whose next fire time has come, earliest first,
// and the next fire time after now: one row more than limit, in next fire time order.
func (s *Store) ScheduleDue(ctx context.Context, now time.Time, limit int) ([]*store.Schedule, time.Time, error) {
	if limit <= 0 {
		limit = 100
	}
	out, err := s.querySchedules(ctx, `SELECT `+scheduleColumns+` FROM schedules
		WHERE paused = 0 AND next_fire_at IS NOT NULL ORDER BY next_fire_at, name LIMIT ?`, limit+1)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("list due schedules: %w", err)
	}
	due, next := store.SplitDue(out, now, limit)
	return due, next, nil
}

func (s *Store) querySchedules(ctx context.Context, query string, args ...any) ([]*store.Schedule, error) {
	rows, err := s.reader.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*store.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, rows.Err()
}

// ScheduleDelete removes a schedule.
func (s *Store) ScheduleDelete(ctx context.Context, name string) error {
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM schedules WHERE name = ?`, name)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("delete schedule %q: %w", name, err)
	}
	return nil
}

// ScheduleSetPaused pauses or resumes a schedule.
func (s *Store) ScheduleSetPaused(ctx context.Context, name string, paused bool) (*store.Schedule, error) {
	var out *store.Schedule
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		var err error
		out, err = scanSchedule(tx.QueryRowContext(ctx, `UPDATE schedules SET paused = ?2, updated_at = ?3
			WHERE name = ?1 RETURNING `+scheduleColumns, name, paused, micros(s.clock.Now())))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("set schedule %q paused=%t: %w", name, paused, err)
	}
	return out, nil
}

// ScheduleFire compare-and-sets the schedule's fire times and inserts its jobs, atomically.
func (s *Store) ScheduleFire(ctx context.Context, p *store.ScheduleFireParams) (*store.ScheduleFireResult, error) {
	if err := store.CheckFire(p); err != nil {
		return nil, fmt.Errorf("fire schedule %q: %w", p.Name, err)
	}
	var out *store.ScheduleFireResult
	err := s.write(ctx, []string{insertJobSQL, statsSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		out = &store.ScheduleFireResult{}
		now := s.clock.Now()
		stats := store.NewStatsBatch(now)
		res, err := tx.ExecContext(ctx, `UPDATE schedules SET last_fire_at = ?, next_fire_at = ?, updated_at = ?
			WHERE name = ? AND last_fire_at IS ? AND NOT paused`, nullMicros(p.NewLast), nullMicros(p.NewNext), micros(now),
			p.Name, nullMicros(p.ExpectedLast))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err // another fire step (or an edit) got there first: write nothing
		}
		out.Fired = true
		if len(p.Workflows) > 0 {
			return s.fireWorkflows(ctx, tx, stmts, p, out, now)
		}
		lastJob := ""
		for _, jp := range p.Jobs {
			id, row, err := s.insertFired(ctx, tx, stmts[0], jp, now)
			if err != nil {
				return err
			}
			lastJob = id
			if row != nil {
				out.Jobs = append(out.Jobs, row)
				stats.Enqueued(row.Queue, row.Kind)
			}
		}
		if lastJob == "" {
			return nil
		}
		if err := writeStats(ctx, stmts[1], stats); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE schedules SET last_job_id = ?, fired_at = ? WHERE name = ?`,
			lastJob, nullMicros(p.FiredAt), p.Name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fire schedule %q: %w", p.Name, err)
	}
	return out, nil
}

// fireWorkflows inserts a fire step's workflows, but those whose fire key a stored workflow
// has, and records the last one as the schedule's LastWorkflowID.
func (s *Store) fireWorkflows(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt, p *store.ScheduleFireParams,
	out *store.ScheduleFireResult, now time.Time) error {
	last := ""
	for _, wp := range p.Workflows {
		var existing string
		err := tx.QueryRowContext(ctx, `SELECT id FROM workflows WHERE fire_key = ?`, wp.FireKey).Scan(&existing)
		switch {
		case err == nil:
			last = existing
			continue
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("look up fire key: %w", err)
		}
		res, err := s.insertWorkflow(ctx, tx, stmts, wp, now)
		if err != nil {
			return err
		}
		last = wp.ID
		out.Jobs = append(out.Jobs, res.Jobs...)
	}
	_, err := tx.ExecContext(ctx, `UPDATE schedules SET last_workflow_id = ?, fired_at = ? WHERE name = ?`,
		last, nullMicros(p.FiredAt), p.Name)
	return err
}

// insertFired inserts one fired job unless its idempotency key is live, and returns the id of
// the job the fire time has (new or existing) and the new row (nil when it existed).
func (s *Store) insertFired(ctx context.Context, tx *sql.Tx, ins *sql.Stmt, p *store.InsertParams, now time.Time) (string, *hoppertype.JobRow, error) {
	var existing string
	err := tx.QueryRowContext(ctx, `SELECT job_id FROM idempotency_keys WHERE key = ? AND expires_at > ?`,
		p.IdempotencyKey, micros(now)).Scan(&existing)
	switch {
	case err == nil:
		return existing, nil, nil
	case !errors.Is(err, sql.ErrNoRows):
		return "", nil, fmt.Errorf("look up idempotency key: %w", err)
	}
	row, err := insertRow(ctx, tx, ins, p, now)
	if err != nil {
		return "", nil, err
	}
	return row.ID, row, nil
}

// ScheduleRun inserts a manual fire's job and records it, atomically.
func (s *Store) ScheduleRun(ctx context.Context, p *store.ScheduleRunParams) (*hoppertype.JobRow, error) {
	var row *hoppertype.JobRow
	err := s.write(ctx, []string{insertJobSQL, statsSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		sc, err := scanSchedule(tx.QueryRowContext(ctx, `SELECT `+scheduleColumns+` FROM schedules WHERE name = ?`, p.Name))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		now := s.clock.Now()
		if row, err = insertRow(ctx, tx, stmts[0], p.Job(sc), now); err != nil {
			return err
		}
		stats := store.NewStatsBatch(now)
		stats.Enqueued(row.Queue, row.Kind)
		if err := writeStats(ctx, stmts[1], stats); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE schedules SET manual_fire_at = ?, manual_job_id = ? WHERE name = ?`,
			micros(p.At), row.ID, p.Name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("run schedule %q: %w", p.Name, err)
	}
	return row, nil
}

// ScheduleLiveJob reports whether a job of the schedule has not ended.
func (s *Store) ScheduleLiveJob(ctx context.Context, name string) (bool, error) {
	var live bool
	err := s.reader.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE schedule_id = ?
		AND state IN ('scheduled', 'queued', 'running', 'suspended'))`, name).Scan(&live)
	if err != nil {
		return false, wrap(err, "look for live jobs of schedule %q", name)
	}
	return live, nil
}

func scanSchedule(sc scanner) (*store.Schedule, error) {
	var (
		s                               store.Schedule
		intervalUS, timeoutUS, jitterUS int64
		created, updated                int64
		headers, lastJob, manualJob     sql.NullString
		workflow, lastWorkflow          sql.NullString
		lastFire, nextFire, fired       sql.NullInt64
		manualFire                      sql.NullInt64
	)
	err := sc.Scan(&s.Name, &s.Spec, &s.Mode, &intervalUS, &s.TZ, &s.Kind, &s.Queue, &s.Args, &headers,
		&s.Priority, &s.MaxAttempts, &timeoutUS, &s.CatchUp, &s.Overlap, &jitterUS, &s.Paused, &s.Source,
		&lastFire, &nextFire, &lastJob, &fired, &manualFire, &manualJob, &created, &updated,
		&workflow, &lastWorkflow)
	if err != nil {
		return nil, err
	}
	s.Interval = time.Duration(intervalUS) * time.Microsecond
	s.Timeout = time.Duration(timeoutUS) * time.Microsecond
	s.Jitter = time.Duration(jitterUS) * time.Microsecond
	s.LastFireAt, s.NextFireAt, s.LastJobID = nullTime(lastFire), nullTime(nextFire), lastJob.String
	s.FiredAt, s.ManualFireAt, s.ManualJobID = nullTime(fired), nullTime(manualFire), manualJob.String
	s.CreatedAt, s.UpdatedAt = fromMicros(created), fromMicros(updated)
	s.LastWorkflowID = lastWorkflow.String
	if s.Workflow, err = store.DecodeTemplate([]byte(workflow.String)); err != nil {
		return nil, fmt.Errorf("schedule %q: %w", s.Name, err)
	}
	if headers.Valid && headers.String != "" {
		if err := json.Unmarshal([]byte(headers.String), &s.Headers); err != nil {
			return nil, fmt.Errorf("schedule %q: decode headers: %w", s.Name, err)
		}
	}
	return &s, nil
}
