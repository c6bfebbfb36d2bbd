package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// outOfRescues holds for a job whose worker is lost once more than its max_rescues allow.
const outOfRescues = `(max_rescues >= 0 AND rescues >= max_rescues)`

// rescueSet is the SET clause of every rescue (expired lease, dead node, lost worker), the
// one transition of store.RescueBound: under its bound a job goes back to queued, with its
// attempt given back and the rescue counted; at its bound it fails with outcome worker_lost,
// kept until ?4. ?1 is now, ?2 the actor, ?3 the reason; errExpr is why the worker was lost.
// SET expressions read the row as it was, so every rescues below is the old count.
func rescueSet(errExpr string) string {
	return `state = CASE WHEN ` + outOfRescues + ` THEN 'failed' ELSE 'queued' END,
	version = version + 1,
	attempt = CASE WHEN ` + outOfRescues + ` THEN attempt ELSE attempt - 1 END,
	rescues = CASE WHEN ` + outOfRescues + ` THEN rescues ELSE rescues + 1 END,
	updated_at = ?1,
	finished_at = CASE WHEN ` + outOfRescues + ` THEN ?1 ELSE finished_at END,
	expires_at = CASE WHEN ` + outOfRescues + ` THEN ?4 ELSE expires_at END,
	worker_id = CASE WHEN ` + outOfRescues + ` THEN worker_id END, lease_expires_at = NULL,
	last_actor = ?2, last_stack = NULL, last_error_code = NULL,
	last_outcome = CASE WHEN ` + outOfRescues + ` THEN 'worker_lost' ELSE 'lease_expired' END,
	last_reason = CASE WHEN ` + outOfRescues + `
		THEN ?3 || ': out of rescues (max_rescues ' || max_rescues || ')' ELSE ?3 END,
	last_error = CASE WHEN ` + outOfRescues + `
		THEN 'worker lost ' || (rescues + 1) || ' times (max_rescues ' || max_rescues || '); last: ' || ` + errExpr + `
		ELSE ` + errExpr + ` END`
}

// rescueExpiredSQL rescues the running jobs whose lease expired (?5 the error, ?6 the limit).
var rescueExpiredSQL = `UPDATE jobs SET ` + rescueSet(`?5`) + `
	WHERE id IN (SELECT id FROM jobs WHERE state = 'running' AND lease_expires_at <= ?1
	             ORDER BY lease_expires_at LIMIT ?6)
	RETURNING id, kind, queue, state`

// rescueLeaseSQL rescues one attempt, fenced by its token (?6 the id, ?7 the token).
var rescueLeaseSQL = `UPDATE jobs SET ` + rescueSet(`?5`) + `
	WHERE id = ?6 AND token = ?7 AND state = 'running'
	RETURNING id, kind, queue, state`

// rescueDeadSQL rescues the running jobs of nodes whose heartbeat is at or before ?5 (?6 the
// limit; ?5 and ?6 stand where the others have their error), except the caller's own (?7). Idle nodes are not dead, however
// old their heartbeat: they hold no jobs. One that claims a job and crashes before its next
// heartbeat (which says it is no longer idle) leaves that job to the rescue of expired leases.
var rescueDeadSQL = `UPDATE jobs SET ` + rescueSet(`('node ' || worker_id || ' stopped heartbeating')`) + `
	WHERE id IN (SELECT id FROM jobs WHERE state = 'running'
	             AND worker_id IN (SELECT id FROM nodes WHERE heartbeat_at <= ?5 AND NOT idle AND id <> ?7) LIMIT +?6)
	RETURNING id, kind, queue, state`

// removeDeadSQL removes the nodes that stopped heartbeating at or before ?1 (idle ones: at or
// before ?2, store.IdleNodeTTL ago), except the caller's own (?3), once none of their jobs is
// left running.
const removeDeadSQL = `DELETE FROM nodes WHERE heartbeat_at <= CASE WHEN idle THEN ?2 ELSE ?1 END AND id <> ?3
	AND NOT EXISTS (SELECT 1 FROM jobs WHERE state = 'running' AND worker_id = nodes.id)`

// JobRescueExpired rescues running jobs with expired leases.
func (s *Store) JobRescueExpired(ctx context.Context, p *store.RescueParams) (*store.RescueResult, error) {
	res := &store.RescueResult{}
	err := s.write(ctx, []string{statsSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		now := s.clock.Now()
		rows, err := tx.QueryContext(ctx, rescueExpiredSQL, micros(now), string(hoppertype.ActorLeader),
			"lease expired", nullMicros(p.ExpiresAt), "lease expired before the attempt ended", limitOr(p.Limit, 1000))
		if err != nil {
			return err
		}
		if err := readRescued(rows, res); err != nil {
			return err
		}
		return countRescued(ctx, tx, stmts[0], now, res, hoppertype.ActorLeader)
	})
	if err != nil {
		return nil, fmt.Errorf("rescue expired leases: %w", err)
	}
	return res, nil
}

// JobRescueLeases rescues the named attempts, skipping stale tokens.
func (s *Store) JobRescueLeases(ctx context.Context, p *store.RescueLeasesParams) (*store.RescueResult, error) {
	res := &store.RescueResult{}
	err := s.write(ctx, []string{statsSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		now := s.clock.Now()
		for _, l := range p.Leases {
			rows, err := tx.QueryContext(ctx, rescueLeaseSQL, micros(now), string(p.Actor), p.Reason,
				nullMicros(p.ExpiresAt), p.Error, l.ID, l.Token)
			if err != nil {
				return err
			}
			if err := readRescued(rows, res); err != nil {
				return err
			}
		}
		return countRescued(ctx, tx, stmts[0], now, res, p.Actor)
	})
	if err != nil {
		return nil, fmt.Errorf("rescue %d leases: %w", len(p.Leases), err)
	}
	return res, nil
}

// JobRescueDeadNodes rescues the running jobs of nodes that stopped heartbeating and removes
// those nodes once none of their jobs is left running. Idle nodes are left alone until they
// have been idle for store.IdleNodeTTL; then they are removed.
func (s *Store) JobRescueDeadNodes(ctx context.Context, p *store.RescueDeadParams) (*store.RescueResult, error) {
	if p.NodeTTL <= 0 {
		return nil, errors.New("rescue dead nodes: NodeTTL must be positive")
	}
	res := &store.RescueResult{}
	err := s.write(ctx, []string{statsSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		now := s.clock.Now()
		cutoff := micros(now.Add(-p.NodeTTL))
		rows, err := tx.QueryContext(ctx, rescueDeadSQL, micros(now), string(hoppertype.ActorLeader), "node dead",
			nullMicros(p.ExpiresAt), cutoff, limitOr(p.Limit, 1000), p.Self)
		if err != nil {
			return err
		}
		if err := readRescued(rows, res); err != nil {
			return err
		}
		if err := countRescued(ctx, tx, stmts[0], now, res, hoppertype.ActorLeader); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, removeDeadSQL, cutoff, micros(now.Add(-store.IdleNodeTTL)), p.Self)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rescue jobs of dead nodes: %w", err)
	}
	return res, nil
}

// JobRescuePass runs the parts of the leader's rescue pass that are set, one after the other:
// on one local file a pass costs no round trips, and one that finds nothing writes nothing.
func (s *Store) JobRescuePass(ctx context.Context, p *store.RescuePassParams) (*store.RescuePassResult, error) {
	res := &store.RescuePassResult{}
	var err error
	if p.Expired != nil {
		if res.Expired, err = s.JobRescueExpired(ctx, p.Expired); err != nil {
			return nil, err
		}
	}
	if p.Dead != nil {
		if res.Dead, err = s.JobRescueDeadNodes(ctx, p.Dead); err != nil {
			return nil, err
		}
	}
	if p.Overdue != nil {
		if res.Overdue, err = s.JobFailOverdue(ctx, p.Overdue); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// countRescued adds the jobs res failed (out of rescues) to the failed count of the minute of
// now, with the prepared statsSQL st, in the rescue's transaction tx, and releases their
// children (deps.go).
func countRescued(ctx context.Context, tx *sql.Tx, st *sql.Stmt, now time.Time, res *store.RescueResult, actor hoppertype.Actor) error {
	if len(res.Failed) == 0 {
		return nil
	}
	stats := store.NewStatsBatch(now)
	stats.Rescued(res.Jobs)
	if err := writeStats(ctx, st, stats); err != nil {
		return err
	}
	return releaseFailed(ctx, tx, res.Failed, actor, now)
}

// readRescued adds the (id, kind, queue, state) rows of a rescue to res.
func readRescued(rows *sql.Rows, res *store.RescueResult) error {
	defer rows.Close()
	for rows.Next() {
		var id, kind, queue, state string
		if err := rows.Scan(&id, &kind, &queue, &state); err != nil {
			return err
		}
		res.Add(id, kind, queue, hoppertype.JobState(state))
	}
	return rows.Err()
}
