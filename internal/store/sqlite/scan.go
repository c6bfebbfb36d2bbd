package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// jobColumns is the column list every job query returns, in scanJob's order.
const jobColumns = `id, kind, queue, priority, args, headers, state, attempt, max_attempts, token,
	run_at, timeout_us, worker_id, lease_expires_at, heartbeat_at, progress_percent, progress_message,
	result, last_error, checkpoint, retry_policy, idempotency_key, group_key, merge_key, original_id,
	replay_count, replayed_by, schedule_id, created_at, started_at, finished_at, updated_at,
	expires_at, deadline_at, result_ttl_us, resume_data, rescues, max_rescues, last_error_code, fairness_key,
	has_children, workflow_id, workflow_step`

type scanner interface{ Scan(dest ...any) error }

func scanJob(sc scanner) (*hoppertype.JobRow, error) {
	var (
		j                                       hoppertype.JobRow
		headers, retry                          sql.NullString
		workerID, progressMsg, lastErr          sql.NullString
		lastErrCode, fairKey                    sql.NullString
		workflowID, step                        sql.NullString
		idemKey, groupKey, mergeKey, originalID sql.NullString
		replayedBy, scheduleID                  sql.NullString
		runAt, timeoutUS, createdAt, updatedAt  int64
		resultTTL                               int64
		lease, heartbeat, started, finished     sql.NullInt64
		expires, deadline                       sql.NullInt64
		state                                   string
		result, checkpoint, resume              []byte
	)
	err := sc.Scan(&j.ID, &j.Kind, &j.Queue, &j.Priority, &j.Args, &headers, &state, &j.Attempt,
		&j.MaxAttempts, &j.Token, &runAt, &timeoutUS, &workerID, &lease, &heartbeat,
		&j.ProgressPercent, &progressMsg, &result, &lastErr, &checkpoint, &retry, &idemKey,
		&groupKey, &mergeKey, &originalID, &j.ReplayCount, &replayedBy, &scheduleID, &createdAt,
		&started, &finished, &updatedAt, &expires, &deadline, &resultTTL, &resume, &j.Rescues, &j.MaxRescues, &lastErrCode, &fairKey,
		&j.HasChildren, &workflowID, &step)
	if err != nil {
		return nil, err
	}
	j.State = hoppertype.JobState(state)
	j.RunAt = fromMicros(runAt)
	j.Timeout = time.Duration(timeoutUS) * time.Microsecond
	j.ResultTTL = time.Duration(resultTTL) * time.Microsecond
	j.ProgressMessage, j.LastError, j.LastErrorCode = progressMsg.String, lastErr.String, lastErrCode.String
	if j.State == hoppertype.StateRunning { // a finished row keeps its last attempt's worker (history.go)
		j.WorkerID = workerID.String
	}
	j.IdempotencyKey, j.GroupKey, j.MergeKey = idemKey.String, groupKey.String, mergeKey.String
	j.FairnessKey = fairKey.String
	j.WorkflowID, j.Step = workflowID.String, step.String
	j.OriginalID, j.ReplayedBy, j.ScheduleID = originalID.String, replayedBy.String, scheduleID.String
	j.LeaseExpiresAt, j.HeartbeatAt = nullTime(lease), nullTime(heartbeat)
	j.CreatedAt, j.UpdatedAt = fromMicros(createdAt), fromMicros(updatedAt)
	j.StartedAt, j.FinishedAt = nullTime(started), nullTime(finished)
	j.ExpiresAt, j.DeadlineAt = nullTime(expires), nullTime(deadline)
	if len(result) > 0 {
		j.Result = result
	}
	if len(checkpoint) > 0 {
		j.Checkpoint = checkpoint
	}
	if len(resume) > 0 {
		j.ResumeData = resume
	}
	if headers.Valid && headers.String != "" {
		if err := json.Unmarshal([]byte(headers.String), &j.Headers); err != nil {
			return nil, fmt.Errorf("job %s: decode headers: %w", j.ID, err)
		}
	}
	if retry.Valid && retry.String != "" {
		j.RetryPolicy = new(hoppertype.RetryPolicy)
		if err := json.Unmarshal([]byte(retry.String), j.RetryPolicy); err != nil {
			return nil, fmt.Errorf("job %s: decode retry policy: %w", j.ID, err)
		}
	}
	return &j, nil
}

func scanJobs(rows *sql.Rows) ([]*hoppertype.JobRow, error) {
	defer rows.Close()
	var out []*hoppertype.JobRow
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

func micros(t time.Time) int64 { return t.UnixMicro() }

func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// nullMicros stores the zero time as NULL.
func nullMicros(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMicro()
}

func nullTime(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMicros(v.Int64)
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}
