package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

var _ store.ScheduleStore = (*Store)(nil)

const scheduleColumns = `name, spec, mode, interval_us, tz, kind, queue, args, headers, priority,
	max_attempts, timeout_us, catch_up, overlap, jitter_us, paused, source, last_fire_at,
	next_fire_at, last_job_id, fired_at, manual_fire_at, manual_job_id, created_at, updated_at, workflow,
	last_workflow_id`

// scheduleUpsertSQL keeps an existing schedule's fire times unless its timing changed, and
// never clears its pause. SET expressions read the row as it was before the update.
const scheduleUpsertSQL = `INSERT INTO {schema}.schedules AS s (name, spec, mode, interval_us, tz, kind,
	queue, args, headers, priority, max_attempts, timeout_us, catch_up, overlap, jitter_us, paused,
	source, last_fire_at, next_fire_at, created_at, updated_at, workflow)
VALUES ($2, $3, $4, $5, $6, $7, $8, $9, $10::text::json, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
	coalesce($1::timestamptz, now()), coalesce($1::timestamptz, now()), $21::text::json)
ON CONFLICT (name) DO UPDATE SET
	spec = excluded.spec, mode = excluded.mode, interval_us = excluded.interval_us, tz = excluded.tz,
	kind = excluded.kind, queue = excluded.queue, args = excluded.args, headers = excluded.headers,
	priority = excluded.priority, max_attempts = excluded.max_attempts, timeout_us = excluded.timeout_us,
	catch_up = excluded.catch_up, overlap = excluded.overlap, jitter_us = excluded.jitter_us,
	workflow = excluded.workflow,
	paused = s.paused OR excluded.paused, source = excluded.source,
	last_fire_at = CASE WHEN ` + timingChanged + ` THEN excluded.last_fire_at ELSE s.last_fire_at END,
	next_fire_at = CASE WHEN ` + timingChanged + ` THEN excluded.next_fire_at ELSE s.next_fire_at END,
	updated_at = excluded.updated_at
RETURNING ` + scheduleColumns

const timingChanged = `(s.spec <> excluded.spec OR s.mode <> excluded.mode
	OR s.interval_us <> excluded.interval_us OR s.tz <> excluded.tz)`

// ScheduleUpsert creates or replaces a schedule's definition.
func (s *Store) ScheduleUpsert(ctx context.Context, sc *store.Schedule) (*store.Schedule, error) {
	out, err := scanSchedule(s.pool.QueryRow(ctx, s.sql(scheduleUpsertSQL), s.nowArg(), sc.Name, sc.Spec,
		sc.Mode, micros(sc.Interval), sc.TZ, sc.Kind, sc.Queue, []byte(sc.Args), encodeHeaders(sc.Headers),
		sc.Priority, sc.MaxAttempts, micros(sc.Timeout), sc.CatchUp, sc.Overlap, micros(sc.Jitter),
		sc.Paused, sc.Source, nullTime(sc.LastFireAt), nullTime(sc.NextFireAt), templateArg(sc.Workflow)))
	if err != nil {
		return nil, s.wrap(err, "upsert schedule %q", sc.Name)
	}
	return out, nil
}

// ScheduleGet returns one schedule.
func (s *Store) ScheduleGet(ctx context.Context, name string) (*store.Schedule, error) {
	sc, err := scanSchedule(s.pool.QueryRow(ctx, s.sql(`SELECT `+scheduleColumns+` FROM {schema}.schedules
		WHERE name = $1`), name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, s.wrap(store.ErrNotFound, "schedule %q", name)
	}
	if err != nil {
		return nil, s.wrap(err, "get schedule %q", name)
	}
	return sc, nil
}

// ScheduleList returns every schedule by name.
func (s *Store) ScheduleList(ctx context.Context) ([]*store.Schedule, error) {
	out, err := s.querySchedules(ctx, `SELECT `+scheduleColumns+` FROM {schema}.schedules ORDER BY name`)
	if err != nil {
		return nil, s.wrap(err, "list schedules")
	}
	return out, nil
}

// ScheduleDue returns the unpaused schedules whose next fire time has come, earliest first,
// and the next fire time after now: one row more than limit, in next fire time order.
func (s *Store) ScheduleDue(ctx context.Context, now time.Time, limit int) ([]*store.Schedule, time.Time, error) {
	limit = limitOr(limit, 100)
	out, err := s.querySchedules(ctx, `SELECT `+scheduleColumns+` FROM {schema}.schedules
		WHERE NOT paused AND next_fire_at IS NOT NULL ORDER BY next_fire_at, name LIMIT $1`, limit+1)
	if err != nil {
		return nil, time.Time{}, s.wrap(err, "list due schedules")
	}
	due, next := store.SplitDue(out, now, limit)
	return due, next, nil
}

func (s *Store) querySchedules(ctx context.Context, query string, args ...any) ([]*store.Schedule, error) {
	rs, err := s.pool.Query(ctx, s.sql(query), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rs, func(r pgx.CollectableRow) (*store.Schedule, error) { return scanSchedule(r) })
}

// ScheduleDelete removes a schedule.
func (s *Store) ScheduleDelete(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, s.sql(`DELETE FROM {schema}.schedules WHERE name = $1`), name)
	if err == nil && tag.RowsAffected() == 0 {
		err = store.ErrNotFound
	}
	if err != nil {
		return s.wrap(err, "delete schedule %q", name)
	}
	return nil
}

// ScheduleSetPaused pauses or resumes a schedule.
func (s *Store) ScheduleSetPaused(ctx context.Context, name string, paused bool) (*store.Schedule, error) {
	sc, err := scanSchedule(s.pool.QueryRow(ctx, s.sql(`UPDATE {schema}.schedules
		SET paused = $3, updated_at = coalesce($1::timestamptz, now())
		WHERE name = $2 RETURNING `+scheduleColumns), s.nowArg(), name, paused))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, s.wrap(err, "set schedule %q paused=%t", name, paused)
	}
	return sc, nil
}

// scheduleCASSQL is the fire step's compare-and-set (a schedule paused since it was read does
// not fire). Its row lock holds a concurrent fire step
// of the same schedule until this transaction ends; that one then re-checks last_fire_at,
// finds it changed and updates nothing.
const scheduleCASSQL = `UPDATE {schema}.schedules
SET last_fire_at = $3, next_fire_at = $4, updated_at = coalesce($1::timestamptz, now())
WHERE name = $2 AND last_fire_at IS NOT DISTINCT FROM $5 AND NOT paused`

// ScheduleFire compare-and-sets the schedule's fire times and inserts its jobs, atomically.
func (s *Store) ScheduleFire(ctx context.Context, p *store.ScheduleFireParams) (*store.ScheduleFireResult, error) {
	if err := store.CheckFire(p); err != nil {
		return nil, fmt.Errorf("fire schedule %q: %w", p.Name, err)
	}
	out, err := s.fire(ctx, p)
	if err != nil {
		return nil, s.wrap(err, "fire schedule %q", p.Name)
	}
	return out, nil
}

func (s *Store) fire(ctx context.Context, p *store.ScheduleFireParams) (*store.ScheduleFireResult, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	tag, err := tx.Exec(ctx, s.sql(scheduleCASSQL), s.nowArg(), p.Name, nullTime(p.NewLast),
		nullTime(p.NewNext), nullTime(p.ExpectedLast))
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		return &store.ScheduleFireResult{}, nil // another fire step (or an edit) got there first
	}
	out := &store.ScheduleFireResult{Fired: true}
	if len(p.Workflows) > 0 {
		if err := s.fireWorkflows(ctx, tx, p, out); err != nil {
			return nil, err
		}
		return out, tx.Commit(ctx)
	}
	if len(p.Jobs) == 0 {
		return out, tx.Commit(ctx)
	}
	byKey, err := s.liveKeys(ctx, tx, p.Jobs)
	if err != nil {
		return nil, err
	}
	var fresh []*store.InsertParams
	for _, j := range p.Jobs {
		if _, live := byKey[j.IdempotencyKey]; !live {
			fresh = append(fresh, j)
		}
	}
	if len(fresh) > 0 {
		res, err := s.insertMany(ctx, pgxDB{tx}, fresh, nil)
		if err != nil {
			return nil, err
		}
		for i, r := range res {
			byKey[fresh[i].IdempotencyKey] = r.Job.ID
			if !r.Existing {
				out.Jobs = append(out.Jobs, r.Job)
			}
		}
	}
	if _, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.schedules SET last_job_id = $2, fired_at = $3 WHERE name = $1`),
		p.Name, byKey[p.Jobs[len(p.Jobs)-1].IdempotencyKey], nullTime(p.FiredAt)); err != nil {
		return nil, err
	}
	return out, tx.Commit(ctx)
}

// fireWorkflows inserts a fire step's workflows, but those whose fire key a stored workflow
// has, and records the last one as the schedule's LastWorkflowID. The unique index on the
// fire key refuses a concurrent insert of the same key, failing that transaction.
func (s *Store) fireWorkflows(ctx context.Context, tx pgx.Tx, p *store.ScheduleFireParams, out *store.ScheduleFireResult) error {
	last := ""
	for _, wp := range p.Workflows {
		var existing string
		err := tx.QueryRow(ctx, s.sql(`SELECT id FROM {schema}.workflows WHERE fire_key = $1`), wp.FireKey).Scan(&existing)
		switch {
		case err == nil:
			last = existing
			continue
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("look up fire key: %w", err)
		}
		res, err := s.insertWorkflow(ctx, tx, wp)
		if err != nil {
			return err
		}
		last = wp.ID
		out.Jobs = append(out.Jobs, res.Jobs...)
	}
	_, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.schedules SET last_workflow_id = $2, fired_at = $3 WHERE name = $1`),
		p.Name, last, nullTime(p.FiredAt))
	return err
}

// templateArg is a workflow template as the upsert's text parameter (nil: NULL).
func templateArg(t *store.WorkflowTemplate) *string {
	if t == nil {
		return nil
	}
	b := string(store.EncodeTemplate(t))
	return &b
}

// ScheduleRun inserts a manual fire's job and records it, atomically. The schedule's row is
// locked until the transaction ends, so a delete waits for the run or the run finds no row.
func (s *Store) ScheduleRun(ctx context.Context, p *store.ScheduleRunParams) (*hoppertype.JobRow, error) {
	row, err := s.runSchedule(ctx, p)
	if err != nil {
		return nil, s.wrap(err, "run schedule %q", p.Name)
	}
	return row, nil
}

func (s *Store) runSchedule(ctx context.Context, p *store.ScheduleRunParams) (*hoppertype.JobRow, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // no-op after commit
	sc, err := scanSchedule(tx.QueryRow(ctx, s.sql(`SELECT `+scheduleColumns+` FROM {schema}.schedules
		WHERE name = $1 FOR UPDATE`), p.Name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	res, err := s.insertMany(ctx, pgxDB{tx}, []*store.InsertParams{p.Job(sc)}, nil)
	if err != nil {
		return nil, err
	}
	job := res[0].Job
	if _, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.schedules SET manual_fire_at = $2, manual_job_id = $3
		WHERE name = $1`), p.Name, p.At, job.ID); err != nil {
		return nil, err
	}
	return job, tx.Commit(ctx)
}

// liveKeys returns, by key, the jobs that the jobs' live idempotency keys name: those fire
// times already have a job.
func (s *Store) liveKeys(ctx context.Context, tx pgx.Tx, jobs []*store.InsertParams) (map[string]string, error) {
	keys := make([]string, len(jobs))
	for i, j := range jobs {
		keys[i] = j.IdempotencyKey
	}
	rs, err := tx.Query(ctx, s.sql(`SELECT key, job_id FROM {schema}.idempotency_keys
		WHERE key = ANY($2::text[]) AND expires_at > coalesce($1::timestamptz, now())`), s.nowArg(), keys)
	if err != nil {
		return nil, err
	}
	live := map[string]string{}
	var key, jobID string
	_, err = pgx.ForEachRow(rs, []any{&key, &jobID}, func() error { live[key] = jobID; return nil })
	return live, err
}

// ScheduleLiveJob reports whether a job of the schedule has not ended.
func (s *Store) ScheduleLiveJob(ctx context.Context, name string) (bool, error) {
	var live bool
	err := s.pool.QueryRow(ctx, s.sql(`SELECT EXISTS (SELECT 1 FROM {schema}.jobs WHERE schedule_id = $1
		AND state IN ('scheduled', 'queued', 'running', 'suspended'))`), name).Scan(&live)
	if err != nil {
		return false, s.wrap(err, "look for live jobs of schedule %q", name)
	}
	return live, nil
}

func scanSchedule(sc scanner) (*store.Schedule, error) {
	var (
		s                               store.Schedule
		intervalUS, timeoutUS, jitterUS int64
		created, updated                time.Time
		headers                         []byte
		lastJob, manualJob              *string
		workflow                        []byte
		lastWorkflow                    *string
		lastFire, nextFire, fired       *time.Time
		manualFire                      *time.Time
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
	s.LastFireAt, s.NextFireAt, s.LastJobID = utc(lastFire), utc(nextFire), str(lastJob)
	s.FiredAt, s.ManualFireAt, s.ManualJobID = utc(fired), utc(manualFire), str(manualJob)
	s.CreatedAt, s.UpdatedAt = created.UTC(), updated.UTC()
	s.LastWorkflowID = str(lastWorkflow)
	if s.Workflow, err = store.DecodeTemplate(workflow); err != nil {
		return nil, fmt.Errorf("schedule %q: %w", s.Name, err)
	}
	if len(headers) > 0 {
		if err := json.Unmarshal(headers, &s.Headers); err != nil {
			return nil, fmt.Errorf("schedule %q: decode headers: %w", s.Name, err)
		}
	}
	return &s, nil
}
