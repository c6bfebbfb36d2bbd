package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// cols is the column list every job query returns, in scanJob's order; jCols is the same
// qualified by the alias j (for UPDATE … FROM, where names would be ambiguous).
const (
	cols = `
	id, kind, queue, priority, args, headers, state, attempt, max_attempts, token, run_at,
	timeout_us, worker_id, lease_expires_at, heartbeat_at, progress_percent, progress_message,
	result, last_error, checkpoint, retry_policy, idempotency_key, group_key, merge_key,
	original_id, replay_count, replayed_by, schedule_id, created_at, started_at, finished_at,
	updated_at, expires_at, deadline_at, result_ttl_us, resume_data, rescues, max_rescues`
	jCols = `
	j.id, j.kind, j.queue, j.priority, j.args, j.headers, j.state, j.attempt, j.max_attempts,
	j.token, j.run_at, j.timeout_us, j.worker_id, j.lease_expires_at, j.heartbeat_at,
	j.progress_percent, j.progress_message, j.result, j.last_error, j.checkpoint, j.retry_policy,
	j.idempotency_key, j.group_key, j.merge_key, j.original_id, j.replay_count, j.replayed_by,
	j.schedule_id, j.created_at, j.started_at, j.finished_at, j.updated_at, j.expires_at,
	j.deadline_at, j.result_ttl_us, j.resume_data, j.rescues, j.max_rescues`
)

// scanner is a row of pgx (pgx.Row, pgx.Rows) or of database/sql (*sql.Rows).
type scanner interface{ Scan(dest ...any) error }

func scanJob(sc scanner) (*hoppertype.JobRow, error) {
	var (
		j                                       hoppertype.JobRow
		args, headers, retry, result, checkpnt  []byte
		resume                                  []byte
		workerID, progressMsg, lastErr          *string
		idemKey, groupKey, mergeKey, originalID *string
		replayedBy, scheduleID                  *string
		runAt, createdAt, updatedAt             time.Time
		lease, heartbeat, started, finished     *time.Time
		expires, deadline                       *time.Time
		timeoutUS, resultTTL                    int64
		state                                   string
	)
	err := sc.Scan(&j.ID, &j.Kind, &j.Queue, &j.Priority, &args, &headers, &state, &j.Attempt,
		&j.MaxAttempts, &j.Token, &runAt, &timeoutUS, &workerID, &lease, &heartbeat,
		&j.ProgressPercent, &progressMsg, &result, &lastErr, &checkpnt, &retry, &idemKey,
		&groupKey, &mergeKey, &originalID, &j.ReplayCount, &replayedBy, &scheduleID, &createdAt,
		&started, &finished, &updatedAt, &expires, &deadline, &resultTTL, &resume, &j.Rescues, &j.MaxRescues)
	if err != nil {
		return nil, err
	}
	j.Args = args
	j.State = hoppertype.JobState(state)
	j.Timeout = time.Duration(timeoutUS) * time.Microsecond
	j.ResultTTL = time.Duration(resultTTL) * time.Microsecond
	j.RunAt, j.CreatedAt, j.UpdatedAt = runAt.UTC(), createdAt.UTC(), updatedAt.UTC()
	j.LeaseExpiresAt, j.HeartbeatAt = utc(lease), utc(heartbeat)
	j.StartedAt, j.FinishedAt = utc(started), utc(finished)
	j.ExpiresAt, j.DeadlineAt = utc(expires), utc(deadline)
	j.WorkerID, j.ProgressMessage, j.LastError = str(workerID), str(progressMsg), str(lastErr)
	j.IdempotencyKey, j.GroupKey, j.MergeKey = str(idemKey), str(groupKey), str(mergeKey)
	j.OriginalID, j.ReplayedBy, j.ScheduleID = str(originalID), str(replayedBy), str(scheduleID)
	if len(result) > 0 {
		j.Result = result
	}
	if len(checkpnt) > 0 {
		j.Checkpoint = checkpnt
	}
	if len(resume) > 0 {
		j.ResumeData = resume
	}
	if len(headers) > 0 {
		if err := json.Unmarshal(headers, &j.Headers); err != nil {
			return nil, fmt.Errorf("job %s: decode headers: %w", j.ID, err)
		}
	}
	if len(retry) > 0 {
		j.RetryPolicy = new(hoppertype.RetryPolicy)
		if err := json.Unmarshal(retry, j.RetryPolicy); err != nil {
			return nil, fmt.Errorf("job %s: decode retry policy: %w", j.ID, err)
		}
	}
	return &j, nil
}

// rows is what the store reads results from: pgx.Rows, or *sql.Rows behind sqlRows.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// scanJobs reads every row and closes rows.
func scanJobs(rs rows) ([]*hoppertype.JobRow, error) {
	defer rs.Close()
	var out []*hoppertype.JobRow
	for rs.Next() {
		j, err := scanJob(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rs.Err()
}

// idsAndQueues reads (id, queue) rows into the ids and the distinct queues, in order.
func idsAndQueues(rs rows) ([]string, []string, error) {
	defer rs.Close()
	var ids, queues []string
	seen := map[string]bool{}
	for rs.Next() {
		var id, q string
		if err := rs.Scan(&id, &q); err != nil {
			return nil, nil, err
		}
		ids = append(ids, id)
		if !seen[q] {
			seen[q] = true
			queues = append(queues, q)
		}
	}
	return ids, queues, rs.Err()
}

func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

func str(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// nullStr stores "" as NULL.
func nullStr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// nullBytes stores empty bytes as NULL.
func nullBytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
