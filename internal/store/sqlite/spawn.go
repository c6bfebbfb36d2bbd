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

// Fan-out at run time: store/spawn.go says how a spawn is kept.

const (
	// adoptSQL makes job ?2 a parent of the children of spawner ?1 that do not wait for it
	// yet, after their other parents: the waiting ones, and the canceled ones, whose re-arm
	// then waits for it; it returns those children.
	adoptSQL = `INSERT OR IGNORE INTO job_deps (parent_id, child_id, parent_outcome, parent_index)
		SELECT ?2, c.id, NULL, (SELECT coalesce(max(x.parent_index) + 1, 0) FROM job_deps x WHERE x.child_id = c.id)
		FROM job_deps d JOIN jobs c ON c.id = d.child_id
		WHERE d.parent_id = ?1 AND c.state IN ('waiting', 'canceled') AND c.id <> ?2
		RETURNING child_id`
	// ancestorsSQL reads the parents of the jobs of a JSON array ?1, and whether each waits.
	ancestorsSQL = `SELECT d.parent_id, coalesce(p.state = 'waiting', 0) FROM job_deps d
		LEFT JOIN jobs p ON p.id = d.parent_id WHERE d.child_id IN (SELECT value FROM json_each(?1))`
)

// JobSpawn adds jobs for a running job in one write transaction (store.SpawnStore).
func (s *Store) JobSpawn(ctx context.Context, p *store.SpawnParams) ([]*store.InsertResult, error) {
	if err := store.CheckSpawn(p); err != nil {
		return nil, fmt.Errorf("spawn jobs for job %s: %w", p.ID, err)
	}
	var out []*store.InsertResult
	err := s.write(ctx, []string{insertJobSQL, statsSQL}, func(ctx context.Context, tx *sql.Tx, stmts []*sql.Stmt) error {
		now := s.clock.Now()
		sp, err := readSpawner(ctx, tx, p.ID)
		if err != nil {
			return err
		}
		if err := store.PrepareSpawn(sp, p); err != nil {
			return err
		}
		out = make([]*store.InsertResult, len(p.Jobs))
		stats := store.NewStatsBatch(now)
		aliases, fresh, flagged, q := store.Aliases{}, map[string]bool{}, store.FlaggedParents{}, s.cached(tx)
		for i, j := range p.Jobs {
			res, err := s.spawnItem(ctx, q, stmts[0], sp, i, j, aliases, flagged, fresh, now)
			if err != nil {
				return err
			}
			out[i] = res
			aliases.Note(j, res)
			if !res.Existing {
				fresh[res.Job.ID] = true
				stats.Enqueued(res.Job.Queue, res.Job.Kind)
			}
			if err := s.adopt(ctx, tx, sp.ID, res.Job, j.Actor, now); err != nil {
				return fmt.Errorf("make job %s a parent of job %s's children: %w", res.Job.ID, sp.ID, err)
			}
		}
		if sp.WorkflowID != "" && len(fresh) > 0 {
			if _, err := tx.ExecContext(ctx, `UPDATE workflows SET steps = steps + ?2 WHERE id = ?1`, sp.WorkflowID, len(fresh)); err != nil {
				return fmt.Errorf("count the spawned steps: %w", err)
			}
		}
		return writeStats(ctx, stmts[1], stats)
	})
	if err != nil {
		return nil, fmt.Errorf("spawn jobs for job %s: %w", p.ID, err)
	}
	return out, nil
}

// readSpawner reads the spawning job, nil when there is none.
func readSpawner(ctx context.Context, tx *sql.Tx, id string) (*store.Spawner, error) {
	sp := &store.Spawner{ID: id}
	var wf, step sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT state, token, workflow_id, workflow_step FROM jobs WHERE id = ?1`, id).
		Scan(&sp.State, &sp.Token, &wf, &step)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read job %s: %w", id, err)
	}
	sp.WorkflowID, sp.Step = wf.String, step.String
	return sp, nil
}

// spawnItem inserts item i, j, of a spawn, or returns the job already there for its step name
// or its idempotency key. fresh holds the jobs the call inserted before.
func (s *Store) spawnItem(ctx context.Context, q *cachedTx, ins *sql.Stmt, sp *store.Spawner, i int, j *store.InsertParams,
	aliases store.Aliases, flagged store.FlaggedParents, fresh map[string]bool, now time.Time) (*store.InsertResult, error) {
	tx := q.tx
	walk := ancestors(tx)
	if j.WorkflowID != "" {
		existing, err := scanJob(tx.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM jobs WHERE workflow_id = ?1 AND workflow_step = ?2`,
			j.WorkflowID, j.Step))
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return nil, fmt.Errorf("look up step %q: %w", j.Step, err)
		default:
			if err := checkAdoptable(ctx, walk, sp, i, "step", existing); err != nil {
				return nil, err
			}
			return &store.InsertResult{Job: existing, Existing: true}, nil
		}
	}
	after := aliases.Resolve(j.After)
	for k, id := range after {
		if fresh[id] {
			continue
		}
		var state string
		err := tx.QueryRowContext(ctx, `SELECT state FROM jobs WHERE id = ?1`, id).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			continue // the insert names it (unknown, or compacted into another)
		}
		if err != nil {
			return nil, fmt.Errorf("read parent %s: %w", id, err)
		}
		from := []store.Ancestor{{ID: id, Waiting: state == string(hoppertype.StateWaiting)}}
		if found, err := store.WaitsFor(ctx, walk, sp.ID, from); err != nil {
			return nil, err
		} else if found != "" {
			return nil, store.WaitsForSpawner(i, fmt.Sprintf("after[%d]", k), found)
		}
	}
	res, err := s.insertItem(ctx, q, ins, i, j, aliases, flagged, now)
	if err != nil {
		return nil, err
	}
	if res.Existing {
		if err := checkAdoptable(ctx, walk, sp, i, "idempotency_key", res.Job); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// checkAdoptable refuses a job already there that item i (its field) names, when it cannot
// become a parent of the spawner's children: the spawner itself, or a job that waits for it.
func checkAdoptable(ctx context.Context, walk store.AncestorsFunc, sp *store.Spawner, i int, field string, job *hoppertype.JobRow) error {
	if job.ID == sp.ID {
		return &store.SpawnError{Item: i, Name: field, Why: "names the spawning job itself"}
	}
	found, err := store.WaitsFor(ctx, walk, sp.ID, []store.Ancestor{{ID: job.ID, Waiting: job.State == hoppertype.StateWaiting}})
	if err != nil {
		return err
	}
	if found != "" {
		return store.WaitsForSpawner(i, field, found)
	}
	return nil
}

// ancestors reads parents one level up, in tx.
func ancestors(tx *sql.Tx) store.AncestorsFunc {
	return func(ctx context.Context, ids []string) ([]store.Ancestor, error) {
		rows, err := tx.QueryContext(ctx, ancestorsSQL, jsonStrings(ids))
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []store.Ancestor
		for rows.Next() {
			var a store.Ancestor
			if err := rows.Scan(&a.ID, &a.Waiting); err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		return out, rows.Err()
	}
}

// adopt makes job a parent of the children of spawner that do not wait for it yet: one more
// pending parent for each waiting one, a dependency row alone for each canceled one (a re-arm
// counts it); when job has ended already (a spawned job canceled at once by a failed parent,
// or one found ended), its ending counts for them at once.
func (s *Store) adopt(ctx context.Context, tx *sql.Tx, spawner string, job *hoppertype.JobRow, actor hoppertype.Actor, now time.Time) error {
	kids, err := queryStrings(ctx, tx, adoptSQL, spawner, job.ID)
	if err != nil || len(kids) == 0 {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE jobs SET parents_pending = parents_pending + 1
		WHERE id IN (SELECT value FROM json_each(?1)) AND state = 'waiting'`, jsonStrings(kids)); err != nil {
		return err
	}
	var skipped bool
	var expires sql.NullInt64
	if err := tx.QueryRowContext(ctx, `UPDATE jobs SET has_children = 1 WHERE id = ?1 RETURNING parent_skipped, expires_at`,
		job.ID).Scan(&skipped, &expires); err != nil {
		return err
	}
	if !job.State.Terminal() {
		return nil
	}
	_, err = release(ctx, s.cached(tx), []*store.Ending{{ID: job.ID, Outcome: store.OutcomeOf(job.State, skipped),
		ExpiresAt: nullTime(expires), Actor: actor}}, now)
	return err
}

// jsonStrings is ids as a JSON array, for json_each.
func jsonStrings(ids []string) string {
	b, _ := json.Marshal(ids) // strings always marshal
	return string(b)
}
