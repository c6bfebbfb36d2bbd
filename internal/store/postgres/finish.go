package postgres

import (
	"context"
	"fmt"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/jobstate"
	"github.com/hopperjobs/hopper/internal/store"
	"sort"
	"time"
)

// runningByID is "job j is running" in the statements that find their jobs by id (finishes,
// lease renewals, heartbeats, rescues of named leases, a job's history), written so that the
// planner cannot match it to the predicate of jobs_lease (state = 'running'). In a table of
// mostly finished jobs, ANALYZE's statistics put the running jobs at about one row, so a scan
// of jobs_lease looks cheaper than looking the ids up in the primary key, and is O(running
// jobs) instead; joined to a batch of ids it became the outer side of a nested loop over the
// batch: a finish of 1,000 jobs beside 200,000 finished ones took 240 ms instead of 13
// (docs/benchmarks.md#at-scale).
const runningByID = `(j.state || '') = 'running'`

// finishSQL ends a batch of running attempts in one statement. The token fences each item: a
// stale token matches no row. RETURNING names the items (by ordinal) that matched; a job named
// twice in one batch is finished once, and the second item's lease is lost, as in SQLite.
// An attempt that ends the job leaves its worker_id in the row, which then holds the attempt
// in place of a job_attempts row (migration 0020, history.go).
// The same statement counts the ends in the minute's stats (stats.go): $19 holds the wait
// histogram's bounds in microseconds.
var finishSQL = `WITH done AS (UPDATE {schema}.jobs AS j SET
	state = u.state, version = j.version + 1, attempt = j.attempt - u.give_back,
	run_at = coalesce(u.run_at, j.run_at), lease_expires_at = NULL,
	worker_id = CASE WHEN u.state IN ('completed', 'failed', 'canceled') THEN j.worker_id END,
	updated_at = clk.now,
	finished_at = CASE WHEN u.state IN ('completed', 'failed', 'canceled') THEN clk.now END,
	result = coalesce(u.result, j.result), last_error = u.error, last_outcome = u.outcome,
	last_stack = u.stack, last_actor = u.actor, last_reason = u.reason,
	checkpoint = coalesce(u.checkpoint, j.checkpoint), expires_at = coalesce(u.expires_at,
		CASE WHEN u.expires_after_us IS NOT NULL THEN clk.now + (CASE WHEN j.result_ttl_us > 0
			THEN j.result_ttl_us ELSE u.expires_after_us END) * interval '1 microsecond' END,
		j.expires_at),
	deadline_at = u.deadline_at, max_attempts = coalesce(u.max_attempts, j.max_attempts),
	last_error_code = u.error_code,
	resume_data = CASE WHEN u.outcome = 'suspended' THEN NULL ELSE j.resume_data END
FROM unnest($2::int[], $3::text[], $4::bigint[], $5::text[], $6::int[], $7::timestamptz[],
	$8::bytea[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::bytea[],
	$15::timestamptz[], $16::timestamptz[], $17::int[], $18::bigint[], $20::text[])
	AS u(ord, id, token, state, give_back, run_at, result, error, outcome, stack, actor, reason,
	     checkpoint, expires_at, deadline_at, max_attempts, expires_after_us, error_code),
	(SELECT coalesce($1::timestamptz, now()) AS now) clk
WHERE j.id = u.id AND j.token = u.token AND ` + runningByID + `
RETURNING u.ord, j.queue, j.kind, ` + counterSQL + ` AS counter, clk.now,
	CASE WHEN u.run_at IS NULL AND j.started_at IS NOT NULL THEN
		width_bucket(extract(epoch FROM j.started_at - j.run_at) * 1000000, $19::float8[]) END AS wb),
agg AS (` + statsFinishedSQL + `)
SELECT ord FROM done`

// JobFinishMany ends running attempts in one statement. Items the state machine refuses get
// ErrInvalidTransition without reaching the database; stale tokens get ErrLeaseLost.
func (s *Store) JobFinishMany(ctx context.Context, params []*store.FinishParams) ([]error, error) {
	errs := make([]error, len(params))
	var valid []int
	for i, p := range params {
		if err := jobstate.Check(hoppertype.StateRunning, p.State); err != nil {
			errs[i] = err
			continue
		}
		valid = append(valid, i)
	}
	if len(valid) == 0 {
		return errs, nil
	}
	// Rows are locked in id order, so two batches can't deadlock on each other.
	sort.SliceStable(valid, func(a, b int) bool { return params[valid[a]].ID < params[valid[b]].ID })
	a := &finishArrays{}
	for _, i := range valid {
		a.add(i, params[i])
	}
	rs, err := s.pool.Query(ctx, s.sql(finishSQL), append([]any{s.nowArg()}, a.args()...)...)
	if err != nil {
		return nil, s.wrap(err, "finish jobs")
	}
	matched, err := ordinals(rs)
	if err != nil {
		return nil, s.wrap(err, "finish jobs")
	}
	var lost []int
	for _, i := range valid {
		if !matched[i] {
			lost = append(lost, i)
		}
	}
	if err := s.refuse(ctx, errs, lost, func(i int) (string, int64) { return params[i].ID, params[i].Token }); err != nil {
		return nil, s.wrap(err, "finish jobs")
	}
	return errs, nil
}

// refuse sets errs[i] for each fenced item i that changed nothing: NoSuchJob when no job has
// its id, else ErrLeaseLost. It reads the database only when some item was refused, so the
// calls that succeed (nearly all) pay nothing for telling the two apart.
func (s *Store) refuse(ctx context.Context, errs []error, items []int, ref func(i int) (string, int64)) error {
	if len(items) == 0 {
		return nil
	}
	ids := make([]string, len(items))
	for n, i := range items {
		ids[n], _ = ref(i)
	}
	rs, err := s.pool.Query(ctx, s.sql(`SELECT id FROM {schema}.jobs WHERE id = ANY($1::text[])`), ids)
	if err != nil {
		return err
	}
	defer rs.Close()
	exists := map[string]bool{}
	for rs.Next() {
		var id string
		if err := rs.Scan(&id); err != nil {
			return err
		}
		exists[id] = true
	}
	if err := rs.Err(); err != nil {
		return err
	}
	for _, i := range items {
		id, token := ref(i)
		if exists[id] {
			errs[i] = fmt.Errorf("job %s token %d: %w", id, token, store.ErrLeaseLost)
		} else {
			errs[i] = store.NoSuchJob(id)
		}
	}
	return nil
}

type finishArrays struct {
	ords, giveBack                []int32
	maxAttempts                   []*int32
	expiresAfter                  []*int64
	ids, states, outcomes, actors []string
	tokens                        []int64
	runAt, expiresAt, deadlineAt  []*time.Time
	results, checkpoints          [][]byte
	errors, stacks, reasons       []*string
	errorCodes                    []*string
}

func (a *finishArrays) add(i int, p *store.FinishParams) {
	giveBack := int32(0)
	if p.GiveBack {
		giveBack = 1
	}
	a.ords, a.giveBack = append(a.ords, int32(i)), append(a.giveBack, giveBack)
	a.ids, a.tokens, a.states = append(a.ids, p.ID), append(a.tokens, p.Token), append(a.states, string(p.State))
	a.runAt, a.results = append(a.runAt, nullTime(p.RunAt)), append(a.results, nullBytes(p.Result))
	// Free text is cleaned: one error message PostgreSQL's text type refuses (a NUL byte,
	// invalid UTF-8) would otherwise fail the whole batch, again at every retry.
	a.errors, a.outcomes = append(a.errors, nullStr(field.Clean(p.Error))), append(a.outcomes, string(p.Outcome))
	a.stacks, a.actors = append(a.stacks, nullStr(field.Clean(p.Stack))), append(a.actors, string(p.Actor))
	a.reasons, a.checkpoints = append(a.reasons, nullStr(field.Clean(p.Reason))), append(a.checkpoints, nullBytes(p.Checkpoint))
	a.expiresAt, a.deadlineAt = append(a.expiresAt, nullTime(p.ExpiresAt)), append(a.deadlineAt, nullTime(p.DeadlineAt))
	a.errorCodes = append(a.errorCodes, nullStr(p.ErrorCode))
	var maxAttempts *int32
	if p.MaxAttempts > 0 {
		n := int32(p.MaxAttempts)
		maxAttempts = &n
	}
	a.maxAttempts = append(a.maxAttempts, maxAttempts)
	var after *int64
	if p.ExpiresAfter > 0 {
		us := p.ExpiresAfter.Microseconds()
		after = &us
	}
	a.expiresAfter = append(a.expiresAfter, after)
}

// args returns the arrays in finishSQL's parameter order ($2–$20).
func (a *finishArrays) args() []any {
	return []any{a.ords, a.ids, a.tokens, a.states, a.giveBack, a.runAt, a.results, a.errors,
		a.outcomes, a.stacks, a.actors, a.reasons, a.checkpoints, a.expiresAt, a.deadlineAt, a.maxAttempts,
		a.expiresAfter, waitBoundsUS, a.errorCodes}
}

// ordinals reads a column of item ordinals into a set.
func ordinals(rs rows) (map[int]bool, error) {
	defer rs.Close()
	out := map[int]bool{}
	for rs.Next() {
		var ord int32
		if err := rs.Scan(&ord); err != nil {
			return nil, err
		}
		out[int(ord)] = true
	}
	return out, rs.Err()
}

// extendSQL moves a batch of leases to now + each item's duration.
const extendSQL = `UPDATE {schema}.jobs AS j
SET lease_expires_at = clk.now + u.duration_us * interval '1 microsecond'
FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS u(id, token, duration_us),
	(SELECT coalesce($1::timestamptz, now()) AS now) clk
WHERE j.id = u.id AND j.token = u.token AND ` + runningByID + `
RETURNING j.id, j.token`

type lease struct {
	id    string
	token int64
}

// JobExtendLeases moves each lease's expiry to now + Duration, in one statement.
func (s *Store) JobExtendLeases(ctx context.Context, params []*store.ExtendParams) ([]error, error) {
	errs := make([]error, len(params))
	if len(params) == 0 {
		return errs, nil
	}
	order := make([]int, len(params))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return params[order[a]].ID < params[order[b]].ID })
	ids, tokens, durations := make([]string, len(params)), make([]int64, len(params)), make([]int64, len(params))
	for n, i := range order {
		ids[n], tokens[n], durations[n] = params[i].ID, params[i].Token, micros(params[i].Duration)
	}
	rs, err := s.pool.Query(ctx, s.sql(extendSQL), s.nowArg(), ids, tokens, durations)
	if err != nil {
		return nil, s.wrap(err, "extend leases")
	}
	defer rs.Close()
	held := map[lease]bool{}
	for rs.Next() {
		var l lease
		if err := rs.Scan(&l.id, &l.token); err != nil {
			return nil, s.wrap(err, "extend leases")
		}
		held[l] = true
	}
	if err := rs.Err(); err != nil {
		return nil, s.wrap(err, "extend leases")
	}
	var lost []int
	for i, p := range params {
		if !held[lease{p.ID, p.Token}] {
			lost = append(lost, i)
		}
	}
	if err := s.refuse(ctx, errs, lost, func(i int) (string, int64) { return params[i].ID, params[i].Token }); err != nil {
		return nil, s.wrap(err, "extend leases")
	}
	return errs, nil
}

// JobHeartbeat records a sign of life of a running attempt.
func (s *Store) JobHeartbeat(ctx context.Context, p *store.HeartbeatParams) error {
	return s.touch(ctx, p.ID, p.Token, `UPDATE {schema}.jobs AS j SET heartbeat_at = coalesce($1::timestamptz, now())
		WHERE j.id = $2 AND j.token = $3 AND `+runningByID)
}

// JobProgress stores clamped progress and counts as a heartbeat.
func (s *Store) JobProgress(ctx context.Context, p *store.ProgressParams) error {
	return s.touch(ctx, p.ID, p.Token, `UPDATE {schema}.jobs AS j SET heartbeat_at = coalesce($1::timestamptz, now()),
		progress_percent = $4, progress_message = $5 WHERE j.id = $2 AND j.token = $3 AND `+runningByID,
		store.ClampPercent(p.Percent), nullStr(field.Clean(p.Message)))
}

func (s *Store) touch(ctx context.Context, id string, token int64, query string, extra ...any) error {
	tag, err := s.pool.Exec(ctx, s.sql(query), append([]any{s.nowArg(), id, token}, extra...)...)
	if err != nil {
		return s.wrap(err, "update job %s", id)
	}
	if tag.RowsAffected() > 0 {
		return nil
	}
	errs := make([]error, 1)
	if err := s.refuse(ctx, errs, []int{0}, func(int) (string, int64) { return id, token }); err != nil {
		return s.wrap(err, "update job %s", id)
	}
	return errs[0]
}
