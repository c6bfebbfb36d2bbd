package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// A job's history is spread over three places (migrations 0001 and 0020):
//
//   - job_events: the transitions that neither start nor end an attempt (promotion, cancel of
//     a waiting job, resume, merge), one row each;
//   - job_attempts: one row per attempt that ended without ending the job (a retry, a rescue,
//     a snooze, a suspend), holding both its claim and its end;
//   - the job row: its creation (created_at, created_actor, created_reason), the claim of the
//     attempt running now, and the attempt that ended the job (rowAttempt).
//
// So a job that runs once and completes writes no history row. JobEvents and JobAttempts
// merge the three.

// rowAttempt holds for a job row j that holds its last attempt: it ended the job, and its
// ending statement kept worker_id. A row whose attempt the trigger recorded anyway (an older
// binary's statement) has a job_attempts row with its token, and is not read twice.
const rowAttempt = `(j.state IN ('completed', 'failed', 'canceled') AND j.worker_id IS NOT NULL
	AND NOT EXISTS (SELECT 1 FROM {schema}.job_attempts x WHERE x.job_id = j.id AND x.token = j.token))`

// eventsSQL merges a job's history by sequence number. The creation read from the row names
// the job's current state; JobEvents puts the state it was created in.
var eventsSQL = `SELECT seq, at, from_state, to_state, actor, reason FROM (
	SELECT seq, at, coalesce(from_state, '') AS from_state, to_state, actor, coalesce(reason, '') AS reason
	FROM {schema}.job_events WHERE job_id = $1
	UNION ALL
	SELECT start_seq, started_at, 'queued', 'running', 'worker', 'claim' FROM {schema}.job_attempts WHERE job_id = $1
	UNION ALL
	SELECT end_seq, ended_at, 'running', to_state, actor, coalesce(reason, '') FROM {schema}.job_attempts WHERE job_id = $1
	UNION ALL
	SELECT 1, j.created_at, '', j.state, j.created_actor, coalesce(j.created_reason, '')
	FROM {schema}.jobs j WHERE j.id = $1 AND j.created_actor IS NOT NULL
	UNION ALL
	SELECT j.version, j.started_at, 'queued', 'running', 'worker', 'claim' FROM {schema}.jobs j
	WHERE j.id = $1 AND ` + runningByID + `
	UNION ALL
	SELECT e.seq, e.at, e.from_state, e.to_state, e.actor, e.reason FROM {schema}.jobs j, LATERAL (VALUES
		(j.version - 1, j.started_at, 'queued', 'running', 'worker', 'claim'),
		(j.version, j.finished_at, 'running', j.state, j.last_actor, coalesce(j.last_reason, ''))
	) AS e(seq, at, from_state, to_state, actor, reason)
	WHERE j.id = $1 AND ` + rowAttempt + `
) h WHERE NOT EXISTS (SELECT 1 FROM {schema}.jobs WHERE id = $1 AND expires_at <= coalesce($2::timestamptz, now()))
ORDER BY seq`

// JobEvents returns a job's history, oldest first.
func (s *Store) JobEvents(ctx context.Context, id string) ([]*hoppertype.Event, error) {
	rs, err := s.pool.Query(ctx, s.sql(eventsSQL), id, s.nowArg())
	if err != nil {
		return nil, s.wrap(err, "job %s events", id)
	}
	defer rs.Close()
	var out []*hoppertype.Event
	for rs.Next() {
		e := &hoppertype.Event{JobID: id}
		var from, to, actor string
		if err := rs.Scan(&e.Seq, &e.At, &from, &to, &actor, &e.Reason); err != nil {
			return nil, s.wrap(err, "job %s events", id)
		}
		e.At, e.From, e.To, e.Actor = e.At.UTC(), hoppertype.JobState(from), hoppertype.JobState(to), hoppertype.Actor(actor)
		out = append(out, e)
	}
	if err := rs.Err(); err != nil {
		return nil, s.wrap(err, "job %s events", id)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	store.SettleCreation(out)
	return out, nil
}

// attemptsSQL returns one row per ended attempt, or a single row of NULLs for a job without
// any, or no row for an unknown job: existence and attempts in one round trip.
var attemptsSQL = `SELECT a.token, a.attempt, a.worker_id, a.started_at, a.ended_at, a.outcome, a.error, a.stack,
	a.error_code
FROM {schema}.jobs j LEFT JOIN LATERAL (
	SELECT token, attempt, worker_id, started_at, ended_at, outcome, error, stack, error_code
	FROM {schema}.job_attempts WHERE job_id = j.id
	UNION ALL
	SELECT j.token, j.attempt, j.worker_id, j.started_at, j.finished_at, coalesce(j.last_outcome, 'error'),
		j.last_error, j.last_stack, j.last_error_code
	WHERE ` + rowAttempt + `
) a ON true
WHERE j.id = $1 AND (j.expires_at IS NULL OR j.expires_at > coalesce($2::timestamptz, now()))
ORDER BY a.token`

// JobAttempts returns a job's ended attempts, oldest first.
func (s *Store) JobAttempts(ctx context.Context, id string) ([]*hoppertype.AttemptRecord, error) {
	rs, err := s.pool.Query(ctx, s.sql(attemptsSQL), id, s.nowArg())
	if err != nil {
		return nil, s.wrap(err, "job %s attempts", id)
	}
	defer rs.Close()
	var out []*hoppertype.AttemptRecord
	found := false
	for rs.Next() {
		found = true
		var (
			token           *int64
			attempt         *int32
			worker, outcome *string
			errText, stack  *string
			errCode         *string
			started, ended  *time.Time
		)
		if err := rs.Scan(&token, &attempt, &worker, &started, &ended, &outcome, &errText, &stack, &errCode); err != nil {
			return nil, s.wrap(err, "job %s attempts", id)
		}
		if token == nil {
			continue // the job has no attempt yet
		}
		out = append(out, &hoppertype.AttemptRecord{
			JobID: id, Token: *token, Attempt: int(*attempt), WorkerID: str(worker),
			StartedAt: utc(started), EndedAt: utc(ended), Outcome: hoppertype.Outcome(str(outcome)),
			Error: str(errText), Stack: str(stack), ErrorCode: str(errCode),
		})
	}
	if err := rs.Err(); err != nil {
		return nil, s.wrap(err, "job %s attempts", id)
	}
	if !found {
		return nil, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return out, nil
}
