package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// claimSQL moves the best queued jobs of one queue to running. SQLite has one writer, so the
// subquery's LIMIT is exact. A paused queue yields nothing; a job whose group already has a
// running job waits, and only the oldest unfinished job of a group is eligible (in order,
// even while an older one waits for a retry).
//
// "LIMIT +?5", not "LIMIT ?5": with a bare parameter SQLite re-prepares the statement every
// time the limit is rebound (about 10× the cost of the claim itself); the unary plus avoids it.
const claimSQL = `UPDATE jobs SET
	state = 'running', attempt = attempt + 1, token = token + 1, version = version + 1,
	worker_id = ?1, lease_expires_at = ?2, heartbeat_at = ?3, started_at = ?3, updated_at = ?3,
	last_actor = 'worker', last_reason = 'claim', last_outcome = NULL, last_stack = NULL
WHERE id IN (
	SELECT j.id FROM jobs j
	WHERE j.state = 'queued' AND j.queue = ?4 %s
	  AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = ?4 AND q.paused = 1)
	  AND (j.group_key IS NULL OR NOT EXISTS (
	        SELECT 1 FROM jobs g WHERE g.group_key = j.group_key
	        AND (g.state = 'running' OR (g.state IN ('queued', 'scheduled', 'suspended') AND g.id < j.id))))
	ORDER BY j.priority DESC, j.id
	LIMIT +?5)
RETURNING ` + jobColumns

// JobClaim claims up to params.Limit jobs.
func (s *Store) JobClaim(ctx context.Context, p *store.ClaimParams) ([]*hoppertype.JobRow, error) {
	if p.Limit <= 0 {
		return nil, nil
	}
	kindFilter, args := "", []any{}
	if len(p.Kinds) > 0 {
		marks := make([]string, len(p.Kinds))
		for i := range p.Kinds {
			marks[i] = fmt.Sprintf("?%d", i+6)
		}
		kindFilter = "AND j.kind IN (" + strings.Join(marks, ",") + ")"
	}
	now := s.clock.Now()
	args = append(args, p.WorkerID, micros(now.Add(p.LeaseDuration)), micros(now), p.Queue, p.Limit)
	for _, k := range p.Kinds {
		args = append(args, k)
	}
	var jobs []*hoppertype.JobRow
	err := s.write(ctx, []string{fmt.Sprintf(claimSQL, kindFilter)}, func(tx *sql.Tx, stmts []*sql.Stmt) error {
		rows, err := stmts[0].QueryContext(ctx, args...)
		if err != nil {
			return err
		}
		jobs, err = scanJobs(rows)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("claim jobs in queue %q: %w", p.Queue, err)
	}
	sortClaimed(jobs)
	return jobs, nil
}

// sortClaimed puts claimed jobs in claim order (RETURNING order is unspecified).
func sortClaimed(jobs []*hoppertype.JobRow) {
	sort.Slice(jobs, func(i, k int) bool { return claimedBefore(jobs[i], jobs[k]) })
}

func claimedBefore(a, b *hoppertype.JobRow) bool {
	if a.Priority != b.Priority {
		return a.Priority > b.Priority
	}
	return a.ID < b.ID
}
