package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Fan-out at run time: store/spawn.go says how a spawn is kept.

const (
	// spawnerSQL reads and locks the spawning job ($1), the lock its ending takes: an ending in
	// flight commits first (and the spawn finds it no longer running), or waits for the spawn
	// (and counts down the children the spawn counted up).
	spawnerSQL = `SELECT state, token, coalesce(workflow_id, ''), coalesce(workflow_step, '')
		FROM {schema}.jobs WHERE id = $1 FOR NO KEY UPDATE`
	// stepJobSQL reads the job of step $2 of workflow $1.
	stepJobSQL = `SELECT ` + jCols + ` FROM ` + stepJobs + `
		WHERE ws.workflow_id = $1 AND ws.step = $2`
	// statesSQL reads the states of the jobs $1.
	statesSQL = `SELECT id, state FROM {schema}.jobs WHERE id = ANY($1::text[])`
	// ancestorsSQL reads the parents of the jobs $1, and whether each waits.
	ancestorsSQL = `SELECT d.parent_id, coalesce(p.state = 'waiting', false) FROM {schema}.job_deps d
		LEFT JOIN {schema}.jobs p ON p.id = d.parent_id WHERE d.child_id = ANY($1::text[])`
	// adoptSQL makes job $2 a parent of the children of spawner $1 that do not wait for it yet,
	// after their other parents: one more pending parent for each waiting one, a dependency row
	// alone for each canceled one (a re-arm, which locks it, counts it), the children locked in
	// id order (the order an ending locks them); $2 is flagged as having children.
	adoptSQL = `WITH kids AS MATERIALIZED (SELECT c.id FROM {schema}.job_deps d JOIN {schema}.jobs c ON c.id = d.child_id
		WHERE d.parent_id = $1 AND c.state IN ('waiting', 'canceled') AND c.id <> $2
		  AND NOT EXISTS (SELECT 1 FROM {schema}.job_deps x WHERE x.parent_id = $2 AND x.child_id = c.id)
		ORDER BY c.id FOR NO KEY UPDATE OF c),
	deps AS (INSERT INTO {schema}.job_deps (parent_id, child_id, parent_outcome, parent_index)
		SELECT $2, k.id, NULL, (SELECT coalesce(max(x.parent_index) + 1, 0) FROM {schema}.job_deps x WHERE x.child_id = k.id)
		FROM kids k ON CONFLICT DO NOTHING RETURNING child_id),
	counted AS (UPDATE {schema}.jobs j SET parents_pending = j.parents_pending + 1
		FROM deps WHERE j.id = deps.child_id AND j.state = 'waiting' RETURNING j.id)
	UPDATE {schema}.jobs p SET has_children = true FROM (SELECT count(*) AS n FROM deps) d
	WHERE p.id = $2 AND d.n > 0 RETURNING p.parent_skipped, p.expires_at`
	// releaseOneSQL counts the ending of job $1 ($2 its outcome, $3 its expiry, $4 the actor)
	// on its children, as an ending's statement does.
	releaseOneSQL = `SELECT {schema}.release_children(ARRAY[$1]::text[], ARRAY[$2]::text[], ARRAY[$3::timestamptz],
		ARRAY[$4]::text[], coalesce($5::timestamptz, now()))`
)

// spawnTries bounds the transactions of one spawn that lost a step name to a concurrent one.
const spawnTries = 3

// JobSpawn adds jobs for a running job in one transaction (store.SpawnStore). A spawn that
// names a step another transaction inserts meanwhile (two steps spawning one name at once)
// loses the race at workflow_steps_name, once the other commits, and runs again: its look-up
// then finds the step, which it makes a parent of its children too, as any spawn of a name
// already there does.
func (s *Store) JobSpawn(ctx context.Context, p *store.SpawnParams) ([]*store.InsertResult, error) {
	if err := store.CheckSpawn(p); err != nil {
		return nil, fmt.Errorf("spawn jobs for job %s: %w", p.ID, err)
	}
	var out []*store.InsertResult
	var err error
	for try := 1; ; try++ {
		err = s.runTx(ctx, pgx.TxOptions{}, func(tx pgx.Tx) error {
			var err error
			out, err = s.spawn(ctx, tx, p)
			return err
		})
		if try == spawnTries || !stepNameTaken(err) {
			break
		}
	}
	if err != nil {
		return nil, s.wrap(err, "spawn jobs for job %s", p.ID)
	}
	return out, nil
}

// stepNameTaken reports whether err is the unique violation of a step name (migration 0039).
func stepNameTaken(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "workflow_steps_name"
}

func (s *Store) spawn(ctx context.Context, tx pgx.Tx, p *store.SpawnParams) ([]*store.InsertResult, error) {
	sp := &store.Spawner{ID: p.ID}
	err := tx.QueryRow(ctx, s.sql(spawnerSQL), p.ID).Scan(&sp.State, &sp.Token, &sp.WorkflowID, &sp.Step)
	if errors.Is(err, pgx.ErrNoRows) {
		sp = nil
	} else if err != nil {
		return nil, fmt.Errorf("read job %s: %w", p.ID, err)
	}
	if err := store.PrepareSpawn(sp, p); err != nil {
		return nil, err
	}
	walk := s.ancestors(tx)
	out := make([]*store.InsertResult, len(p.Jobs))
	aliases := store.Aliases{}
	var fresh []*store.InsertParams // the items to insert, each a copy with After resolved
	var freshAt []int               // their places in p.Jobs
	inCall := map[string]bool{}
	for i, j := range p.Jobs {
		if j.WorkflowID != "" {
			existing, err := scanJob(tx.QueryRow(ctx, s.sql(stepJobSQL), j.WorkflowID, j.Step))
			switch {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return nil, fmt.Errorf("look up step %q: %w", j.Step, err)
			default:
				if err := checkAdoptable(ctx, walk, sp, i, "step", existing); err != nil {
					return nil, err
				}
				out[i] = &store.InsertResult{Job: existing, Existing: true}
				aliases.Note(j, out[i])
				continue
			}
		}
		c := *j
		c.After = aliases.Resolve(j.After)
		if err := s.checkNamed(ctx, tx, walk, sp, i, c.After, inCall); err != nil {
			return nil, err
		}
		inCall[c.ID] = true
		fresh, freshAt = append(fresh, &c), append(freshAt, i)
	}
	if len(fresh) > 0 {
		res, err := s.insertMany(ctx, pgxDB{tx}, fresh, nil)
		if err != nil {
			var pe *store.ParentError
			if errors.As(err, &pe) {
				return nil, store.UnknownParent(freshAt[pe.Item], pe.Index, pe.ID)
			}
			return nil, err
		}
		n := 0
		for k, r := range res {
			i := freshAt[k]
			if r.Existing {
				if err := checkAdoptable(ctx, walk, sp, i, "idempotency_key", r.Job); err != nil {
					return nil, err
				}
			} else {
				n++
			}
			out[i] = r
		}
		if sp.WorkflowID != "" && n > 0 {
			if _, err := tx.Exec(ctx, s.sql(`UPDATE {schema}.workflows SET steps = steps + $2 WHERE id = $1`), sp.WorkflowID, n); err != nil {
				return nil, fmt.Errorf("count the spawned steps: %w", err)
			}
		}
	}
	for i, r := range out {
		if err := s.adopt(ctx, tx, sp.ID, r.Job, p.Jobs[i].Actor); err != nil {
			return nil, fmt.Errorf("make job %s a parent of job %s's children: %w", r.Job.ID, sp.ID, err)
		}
	}
	return out, nil
}

// checkNamed refuses item i when a job it names in after (not one inserted earlier in the
// call) waits for the spawner.
func (s *Store) checkNamed(ctx context.Context, tx pgx.Tx, walk store.AncestorsFunc, sp *store.Spawner, i int, after []string, inCall map[string]bool) error {
	var named []string
	for _, id := range after {
		if !inCall[id] {
			named = append(named, id)
		}
	}
	if len(named) == 0 {
		return nil
	}
	rs, err := tx.Query(ctx, s.sql(statesSQL), named)
	if err != nil {
		return fmt.Errorf("read the parents of item %d: %w", i, err)
	}
	var from []store.Ancestor
	for rs.Next() {
		var id, state string
		if err := rs.Scan(&id, &state); err != nil {
			rs.Close()
			return err
		}
		from = append(from, store.Ancestor{ID: id, Waiting: state == string(hoppertype.StateWaiting)})
	}
	rs.Close()
	if err := rs.Err(); err != nil {
		return err
	}
	found, err := store.WaitsFor(ctx, walk, sp.ID, from)
	if err != nil || found == "" {
		return err
	}
	return store.WaitsForSpawner(i, fmt.Sprintf("after[%d]", slices.Index(after, found)), found)
}

// checkAdoptable refuses a job already there that item i (its field) names, when it cannot
// become a parent of the spawner's children: the spawner itself, or a job that waits for it.
func checkAdoptable(ctx context.Context, walk store.AncestorsFunc, sp *store.Spawner, i int, field string, job *hoppertype.JobRow) error {
	if job.ID == sp.ID {
		return &store.SpawnError{Item: i, Name: field, Why: "names the spawning job itself"}
	}
	found, err := store.WaitsFor(ctx, walk, sp.ID, []store.Ancestor{{ID: job.ID, Waiting: job.State == hoppertype.StateWaiting}})
	if err != nil || found == "" {
		return err
	}
	return store.WaitsForSpawner(i, field, found)
}

// ancestors reads parents one level up, in tx.
func (s *Store) ancestors(tx pgx.Tx) store.AncestorsFunc {
	return func(ctx context.Context, ids []string) ([]store.Ancestor, error) {
		rs, err := tx.Query(ctx, s.sql(ancestorsSQL), ids)
		if err != nil {
			return nil, err
		}
		defer rs.Close()
		var out []store.Ancestor
		for rs.Next() {
			var a store.Ancestor
			if err := rs.Scan(&a.ID, &a.Waiting); err != nil {
				return nil, err
			}
			out = append(out, a)
		}
		return out, rs.Err()
	}
}

// adopt makes job a parent of the waiting and canceled children of spawner that do not wait
// for it yet;
// when job has ended already (a spawned job canceled at once by a failed parent, or one found
// ended), its ending counts for them at once.
func (s *Store) adopt(ctx context.Context, tx pgx.Tx, spawner string, job *hoppertype.JobRow, actor hoppertype.Actor) error {
	var skipped bool
	var expires *time.Time
	err := tx.QueryRow(ctx, s.sql(adoptSQL), spawner, job.ID).Scan(&skipped, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // no child to adopt
	}
	if err != nil {
		return err
	}
	if !job.State.Terminal() {
		return nil
	}
	_, err = tx.Exec(ctx, s.sql(releaseOneSQL), job.ID, string(store.OutcomeOf(job.State, skipped)), expires,
		string(actor), s.nowArg())
	return err
}
