package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// A job's history is spread over three places (migrations 0001 and 0019):
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
	AND NOT EXISTS (SELECT 1 FROM job_attempts x WHERE x.job_id = j.id AND x.token = j.token))`

// eventsSQL merges a job's history by sequence number. The creation read from the row names
// the job's current state; JobEvents puts the state it was created in.
const eventsSQL = `SELECT seq, at, from_state, to_state, actor, reason FROM (
	SELECT seq, at, coalesce(from_state, '') AS from_state, to_state, actor, coalesce(reason, '') AS reason
	FROM job_events WHERE job_id = ?1
	UNION ALL
	SELECT start_seq, started_at, 'queued', 'running', 'worker', 'claim' FROM job_attempts WHERE job_id = ?1
	UNION ALL
	SELECT end_seq, ended_at, 'running', to_state, actor, coalesce(reason, '') FROM job_attempts WHERE job_id = ?1
	UNION ALL
	SELECT 1, created_at, '', state, created_actor, coalesce(created_reason, '') FROM jobs
	WHERE id = ?1 AND created_actor IS NOT NULL
	UNION ALL
	SELECT version, started_at, 'queued', 'running', 'worker', 'claim' FROM jobs WHERE id = ?1 AND state = 'running'
	UNION ALL
	SELECT version - 1, started_at, 'queued', 'running', 'worker', 'claim' FROM jobs j WHERE id = ?1 AND ` + rowAttempt + `
	UNION ALL
	SELECT version, finished_at, 'running', state, last_actor, coalesce(last_reason, '') FROM jobs j
	WHERE id = ?1 AND ` + rowAttempt + `
) WHERE NOT EXISTS (SELECT 1 FROM jobs WHERE id = ?1 AND expires_at <= ?2) ORDER BY seq`

// JobEvents returns a job's history, oldest first.
func (s *Store) JobEvents(ctx context.Context, id string) ([]*hoppertype.Event, error) {
	rows, err := s.reader.QueryContext(ctx, eventsSQL, id, micros(s.clock.Now()))
	if err != nil {
		return nil, wrap(err, "job %s events", id)
	}
	defer rows.Close()
	var out []*hoppertype.Event
	for rows.Next() {
		e := &hoppertype.Event{JobID: id}
		var at int64
		var from, to, actor string
		if err := rows.Scan(&e.Seq, &at, &from, &to, &actor, &e.Reason); err != nil {
			return nil, wrap(err, "job %s events", id)
		}
		e.At, e.From, e.To, e.Actor = fromMicros(at), hoppertype.JobState(from), hoppertype.JobState(to), hoppertype.Actor(actor)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "job %s events", id)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	store.SettleCreation(out)
	return out, nil
}

// attemptsSQL lists a job's ended attempts in token order: its job_attempts rows and the one
// its row holds.
const attemptsSQL = `SELECT token, attempt, coalesce(worker_id, ''), started_at, ended_at, outcome,
	coalesce(error, ''), coalesce(stack, ''), coalesce(error_code, '') FROM job_attempts WHERE job_id = ?1
UNION ALL
SELECT token, attempt, worker_id, started_at, finished_at, coalesce(last_outcome, 'error'),
	coalesce(last_error, ''), coalesce(last_stack, ''), coalesce(last_error_code, '') FROM jobs j WHERE id = ?1 AND ` + rowAttempt + `
ORDER BY 1`

// JobAttempts returns a job's ended attempts, oldest first.
func (s *Store) JobAttempts(ctx context.Context, id string) ([]*hoppertype.AttemptRecord, error) {
	if _, err := s.JobGet(ctx, id); err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, attemptsSQL, id)
	if err != nil {
		return nil, wrap(err, "job %s attempts", id)
	}
	defer rows.Close()
	var out []*hoppertype.AttemptRecord
	for rows.Next() {
		a := &hoppertype.AttemptRecord{JobID: id}
		var started sql.NullInt64
		var ended int64
		var outcome string
		if err := rows.Scan(&a.Token, &a.Attempt, &a.WorkerID, &started, &ended, &outcome, &a.Error, &a.Stack, &a.ErrorCode); err != nil {
			return nil, wrap(err, "job %s attempts", id)
		}
		a.StartedAt, a.EndedAt, a.Outcome = nullTime(started), fromMicros(ended), hoppertype.Outcome(outcome)
		out = append(out, a)
	}
	return out, rows.Err()
}
