package postgres

import (
	"context"
	"errors"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// outOfRescues holds for a job whose worker is lost once more than its max_rescues allow.
const outOfRescues = `(j.max_rescues >= 0 AND j.rescues >= j.max_rescues)`

// rescueSet is the SET clause of every rescue (expired lease, dead node, lost worker) of the
// jobs row j, the one transition of store.RescueBound: under its bound a job goes back to
// queued, with its attempt given back and the rescue counted; at its bound it fails with
// outcome worker_lost, kept until $4. $1 is now, $2 the actor, $3 the reason; errExpr is why
// the worker was lost. SET expressions read the row as it was, so j.rescues is the old count.
func rescueSet(errExpr string) string {
	return `state = CASE WHEN ` + outOfRescues + ` THEN 'failed' ELSE 'queued' END,
	version = j.version + 1,
	attempt = CASE WHEN ` + outOfRescues + ` THEN j.attempt ELSE j.attempt - 1 END,
	rescues = CASE WHEN ` + outOfRescues + ` THEN j.rescues ELSE j.rescues + 1 END,
	updated_at = coalesce($1::timestamptz, now()),
	finished_at = CASE WHEN ` + outOfRescues + ` THEN coalesce($1::timestamptz, now()) ELSE j.finished_at END,
	expires_at = CASE WHEN ` + outOfRescues + ` THEN $4::timestamptz ELSE j.expires_at END,
	worker_id = CASE WHEN ` + outOfRescues + ` THEN j.worker_id END, lease_expires_at = NULL,
	last_actor = $2::text, last_stack = NULL, last_error_code = NULL,
	last_outcome = CASE WHEN ` + outOfRescues + ` THEN 'worker_lost' ELSE 'lease_expired' END,
	last_reason = CASE WHEN ` + outOfRescues + `
		THEN $3::text || ': out of rescues (max_rescues ' || j.max_rescues || ')' ELSE $3::text END,
	last_error = CASE WHEN ` + outOfRescues + `
		THEN 'worker lost ' || (j.rescues + 1) || ' times (max_rescues ' || j.max_rescues || '); last: ' || ` + errExpr + `
		ELSE ` + errExpr + ` END`
}

// statsFailedSQL is a CTE that counts the failed jobs among the (id, kind, queue, state) rows
// of the statement's CTE from in the failed count of the minute stats (the minute of $1, the
// statement's now), in the statement's own transaction: a rescue's jobs out of rescues (those
// it gave back to their queue count in none), suspended jobs failed at their deadline.
func statsFailedSQL(from string) string {
	return `counted AS (
	INSERT INTO {schema}.job_stats AS s (minute, queue, kind, shard, failed)
	SELECT ` + minuteOf("coalesce($1::timestamptz, now())") + `, queue, kind, pg_backend_pid(), count(*)
	FROM ` + from + ` WHERE state = 'failed' GROUP BY 1, 2, 3 ORDER BY 2, 3
	ON CONFLICT (minute, queue, kind, shard) DO UPDATE SET failed = s.failed + excluded.failed
)`
}

// rescueExpiredSQL rescues running jobs with expired leases ($5 the error, $6 the limit).
// Rows another transaction holds (a finish in flight) are skipped, never waited for.
var rescueExpiredSQL = `WITH picked AS MATERIALIZED (
	SELECT id FROM {schema}.jobs
	WHERE state = 'running' AND lease_expires_at <= coalesce($1::timestamptz, now())
	ORDER BY lease_expires_at LIMIT $6
	FOR UPDATE SKIP LOCKED
), rescued AS (
	UPDATE {schema}.jobs j SET ` + rescueSet(`$5::text`) + `
	FROM picked WHERE j.id = picked.id
	RETURNING j.id, j.kind, j.queue, j.state
), ` + statsFailedSQL("rescued") + `
SELECT id, kind, queue, state FROM rescued`

// rescueLeasesSQL rescues the running attempts named by ids $6 and tokens $7. Rows another
// transaction holds are skipped, as by the other rescues: a finish in flight ends the attempt
// anyway, and anything else leaves the lease to expire, when the leader rescues it.
var rescueLeasesSQL = `WITH picked AS MATERIALIZED (
	SELECT j.id FROM {schema}.jobs j
	JOIN unnest($6::text[], $7::bigint[]) AS l(id, token) ON j.id = l.id AND j.token = l.token
	WHERE ` + runningByID + `
	FOR UPDATE OF j SKIP LOCKED
), rescued AS (
	UPDATE {schema}.jobs j SET ` + rescueSet(`$5::text`) + `
	FROM picked WHERE j.id = picked.id
	RETURNING j.id, j.kind, j.queue, j.state
), ` + statsFailedSQL("rescued") + `
SELECT id, kind, queue, state FROM rescued`

// rescueDeadSQL rescues the running jobs of nodes whose heartbeat is older than $5
// microseconds ($6 the limit) and deregisters those nodes once none of their jobs is left
// running (a job skipped because another transaction holds it keeps its node for the next
// pass). Idle nodes are not dead, however old their heartbeat: they hold no jobs. One that
// claims a job and crashes before its next heartbeat (which says it is no longer idle) leaves
// that job to the rescue of expired leases. An idle node whose heartbeat (when it went idle)
// is older than $7 microseconds (store.IdleNodeTTL) is deregistered like a dead one. The
// caller's own node ($8) is never dead.
var rescueDeadSQL = `WITH dead AS MATERIALIZED (
	SELECT id, idle FROM {schema}.nodes
	WHERE heartbeat_at <= coalesce($1::timestamptz, now())
		- CASE WHEN idle THEN $7::bigint ELSE $5::bigint END * interval '1 microsecond'
		AND id <> $8::text
), picked AS MATERIALIZED (
	SELECT id FROM {schema}.jobs
	WHERE state = 'running' AND worker_id IN (SELECT id FROM dead WHERE NOT idle)
	LIMIT $6
	FOR UPDATE SKIP LOCKED
), rescued AS (
	UPDATE {schema}.jobs j SET ` + rescueSet(`('node ' || j.worker_id || ' stopped heartbeating')`) + `
	FROM picked WHERE j.id = picked.id
	RETURNING j.id, j.kind, j.queue, j.state
), ` + statsFailedSQL("rescued") + `, removed AS (
	DELETE FROM {schema}.nodes n
	WHERE n.id IN (SELECT id FROM dead)
	  AND NOT EXISTS (SELECT 1 FROM {schema}.jobs r WHERE r.state = 'running' AND r.worker_id = n.id
	                  AND r.id NOT IN (SELECT id FROM rescued))
)
SELECT id, kind, queue, state FROM rescued`

// JobRescueExpired rescues running jobs with expired leases.
func (s *Store) JobRescueExpired(ctx context.Context, p *store.RescueParams) (*store.RescueResult, error) {
	res := &store.RescueResult{}
	if err := s.runSteps(ctx, s.expiredStep(p, res)); err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Store) expiredStep(p *store.RescueParams, res *store.RescueResult) step {
	return step{what: "rescue expired leases", sql: rescueExpiredSQL,
		args: []any{s.nowArg(), string(hoppertype.ActorLeader), "lease expired", nullTime(p.ExpiresAt),
			"lease expired before the attempt ended", limitOr(p.Limit, 1000)},
		read: func(rs pgx.Rows) error { return readRescued(rs, res) }}
}

// JobRescueLeases rescues the named attempts, skipping stale tokens.
func (s *Store) JobRescueLeases(ctx context.Context, p *store.RescueLeasesParams) (*store.RescueResult, error) {
	ids, tokens := make([]string, len(p.Leases)), make([]int64, len(p.Leases))
	for i, l := range p.Leases {
		ids[i], tokens[i] = l.ID, l.Token
	}
	rs, err := s.pool.Query(ctx, s.sql(rescueLeasesSQL), s.nowArg(), string(p.Actor), p.Reason,
		nullTime(p.ExpiresAt), p.Error, ids, tokens)
	if err != nil {
		return nil, s.wrap(err, "rescue %d leases", len(p.Leases))
	}
	res := &store.RescueResult{}
	if err := readRescued(rs, res); err != nil {
		return nil, s.wrap(err, "rescue %d leases", len(p.Leases))
	}
	return res, nil
}

// JobRescueDeadNodes rescues the running jobs of nodes that stopped heartbeating. Idle nodes
// are left alone until they have been idle for store.IdleNodeTTL; then they are removed.
func (s *Store) JobRescueDeadNodes(ctx context.Context, p *store.RescueDeadParams) (*store.RescueResult, error) {
	res := &store.RescueResult{}
	st, err := s.deadStep(p, res)
	if err == nil {
		err = s.runSteps(ctx, st)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

func (s *Store) deadStep(p *store.RescueDeadParams, res *store.RescueResult) (step, error) {
	if p.NodeTTL <= 0 {
		return step{}, errors.New("rescue dead nodes: NodeTTL must be positive")
	}
	return step{what: "rescue jobs of dead nodes", sql: rescueDeadSQL,
		args: []any{s.nowArg(), string(hoppertype.ActorLeader), "node dead", nullTime(p.ExpiresAt),
			micros(p.NodeTTL), limitOr(p.Limit, 1000), micros(store.IdleNodeTTL), p.Self},
		read: func(rs pgx.Rows) error { return readRescued(rs, res) }}, nil
}

// JobRescuePass runs the parts of the leader's rescue pass that are set in one batch: one
// round trip and one transaction.
func (s *Store) JobRescuePass(ctx context.Context, p *store.RescuePassParams) (*store.RescuePassResult, error) {
	res := &store.RescuePassResult{}
	var steps []step
	if p.Expired != nil {
		res.Expired = &store.RescueResult{}
		steps = append(steps, s.expiredStep(p.Expired, res.Expired))
	}
	if p.Dead != nil {
		res.Dead = &store.RescueResult{}
		st, err := s.deadStep(p.Dead, res.Dead)
		if err != nil {
			return nil, err
		}
		steps = append(steps, st)
	}
	if p.Overdue != nil {
		steps = append(steps, s.overdueStep(p.Overdue, &res.Overdue))
	}
	if err := s.runSteps(ctx, steps...); err != nil {
		return nil, err
	}
	return res, nil
}

// step is one statement of a batch: what it does (for errors), its SQL (with {schema}), its
// arguments and what reads its rows (and must close them).
type step struct {
	what string
	sql  string
	args []any
	read func(pgx.Rows) error
}

// runSteps runs one step as a query, several as one batch: one round trip, and one
// transaction (a batch outside a transaction runs in an implicit one), so a failed step
// undoes those before it.
func (s *Store) runSteps(ctx context.Context, steps ...step) error {
	if len(steps) == 1 {
		st := steps[0]
		rs, err := s.pool.Query(ctx, s.sql(st.sql), st.args...)
		if err == nil {
			err = st.read(rs)
		}
		if err != nil {
			return s.wrap(err, "%s", st.what)
		}
		return nil
	}
	b := &pgx.Batch{}
	for _, st := range steps {
		b.Queue(s.sql(st.sql), st.args...)
	}
	br := s.pool.SendBatch(ctx, b)
	for _, st := range steps {
		rs, err := br.Query()
		if err == nil {
			err = st.read(rs)
		}
		if err != nil {
			br.Close() //nolint:errcheck // the step's error says what failed
			return s.wrap(err, "%s", st.what)
		}
	}
	if err := br.Close(); err != nil {
		return s.wrap(err, "rescue pass")
	}
	return nil
}

// readRescued adds the (id, kind, queue, state) rows of a rescue to res and closes rs.
func readRescued(rs rows, res *store.RescueResult) error {
	defer rs.Close()
	for rs.Next() {
		var id, kind, queue, state string
		if err := rs.Scan(&id, &kind, &queue, &state); err != nil {
			return err
		}
		res.Add(id, kind, queue, hoppertype.JobState(state))
	}
	return rs.Err()
}
