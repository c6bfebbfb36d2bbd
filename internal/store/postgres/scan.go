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
	updated_at, expires_at, deadline_at, result_ttl_us, resume_data, rescues, max_rescues,
	last_error_code, fairness_key, has_children, workflow_id, workflow_step`
	jCols = `
	j.id, j.kind, j.queue, j.priority, j.args, j.headers, j.state, j.attempt, j.max_attempts,
	j.token, j.run_at, j.timeout_us, j.worker_id, j.lease_expires_at, j.heartbeat_at,
	j.progress_percent, j.progress_message, j.result, j.last_error, j.checkpoint, j.retry_policy,
	j.idempotency_key, j.group_key, j.merge_key, j.original_id, j.replay_count, j.replayed_by,
	j.schedule_id, j.created_at, j.started_at, j.finished_at, j.updated_at, j.expires_at,
	j.deadline_at, j.result_ttl_us, j.resume_data, j.rescues, j.max_rescues, j.last_error_code,
	j.fairness_key, j.has_children, j.workflow_id, j.workflow_step`
)

// scanner is a row of pgx (pgx.Row, pgx.Rows) or of database/sql (*sql.Rows).
type scanner interface{ Scan(dest ...any) error }

func scanJob(sc scanner) (*hoppertype.JobRow, error) { return newJobScan().scan(sc) }

// jobScan holds the scan targets of a job row, so that the rows of one result share them
// instead of each allocating its own (about twenty values a row). Reusing them is safe: pgx
// and database/sql copy every value they store in a target.
type jobScan struct {
	j                                       hoppertype.JobRow
	args, headers, retry, result, checkpnt  []byte
	resume                                  []byte
	workerID, progressMsg, lastErr          *string
	lastErrCode, fairKey                    *string
	workflowID, step                        *string
	idemKey, groupKey, mergeKey, originalID *string
	replayedBy, scheduleID                  *string
	runAt, createdAt, updatedAt             time.Time
	lease, heartbeat, started, finished     *time.Time
	expires, deadline                       *time.Time
	timeoutUS, resultTTL                    int64
	state                                   string
	dest                                    []any
}

func newJobScan() *jobScan {
	s := &jobScan{}
	j := &s.j
	s.dest = []any{&j.ID, &j.Kind, &j.Queue, &j.Priority, &s.args, &s.headers, &s.state, &j.Attempt,
		&j.MaxAttempts, &j.Token, &s.runAt, &s.timeoutUS, &s.workerID, &s.lease, &s.heartbeat,
		&j.ProgressPercent, &s.progressMsg, &s.result, &s.lastErr, &s.checkpnt, &s.retry, &s.idemKey,
		&s.groupKey, &s.mergeKey, &s.originalID, &j.ReplayCount, &s.replayedBy, &s.scheduleID, &s.createdAt,
		&s.started, &s.finished, &s.updatedAt, &s.expires, &s.deadline, &s.resultTTL, &s.resume, &j.Rescues, &j.MaxRescues, &s.lastErrCode, &s.fairKey,
		&j.HasChildren, &s.workflowID, &s.step}
	return s
}

// scan reads one row (columns cols) into a new JobRow.
func (s *jobScan) scan(sc scanner) (*hoppertype.JobRow, error) {
	if err := sc.Scan(s.dest...); err != nil {
		return nil, err
	}
	j := s.j // the scanned fields; the others are set below from the targets
	j.Args = s.args
	j.State = hoppertype.JobState(s.state)
	j.Timeout = time.Duration(s.timeoutUS) * time.Microsecond
	j.ResultTTL = time.Duration(s.resultTTL) * time.Microsecond
	j.RunAt, j.CreatedAt, j.UpdatedAt = s.runAt.UTC(), s.createdAt.UTC(), s.updatedAt.UTC()
	j.LeaseExpiresAt, j.HeartbeatAt = utc(s.lease), utc(s.heartbeat)
	j.StartedAt, j.FinishedAt = utc(s.started), utc(s.finished)
	j.ExpiresAt, j.DeadlineAt = utc(s.expires), utc(s.deadline)
	j.ProgressMessage, j.LastError, j.LastErrorCode = str(s.progressMsg), str(s.lastErr), str(s.lastErrCode)
	if j.State == hoppertype.StateRunning { // a finished row keeps its last attempt's worker (history.go)
		j.WorkerID = str(s.workerID)
	}
	j.IdempotencyKey, j.GroupKey, j.MergeKey = str(s.idemKey), str(s.groupKey), str(s.mergeKey)
	j.FairnessKey = str(s.fairKey)
	j.WorkflowID, j.Step = str(s.workflowID), str(s.step)
	j.OriginalID, j.ReplayedBy, j.ScheduleID = str(s.originalID), str(s.replayedBy), str(s.scheduleID)
	if len(s.result) > 0 {
		j.Result = s.result
	}
	if len(s.checkpnt) > 0 {
		j.Checkpoint = s.checkpnt
	}
	if len(s.resume) > 0 {
		j.ResumeData = s.resume
	}
	if len(s.headers) > 0 {
		if err := json.Unmarshal(s.headers, &j.Headers); err != nil {
			return nil, fmt.Errorf("job %s: decode headers: %w", j.ID, err)
		}
	}
	if len(s.retry) > 0 {
		j.RetryPolicy = new(hoppertype.RetryPolicy)
		if err := json.Unmarshal(s.retry, j.RetryPolicy); err != nil {
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
	s := newJobScan()
	for rs.Next() {
		j, err := s.scan(rs)
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
