package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// In a table of mostly finished jobs, analyzed (as autovacuum does), PostgreSQL estimates the
// running and the expired jobs at about one row. The statements that find jobs by id, and the
// sweep's window, must still go through the primary key: a scan of jobs_lease is O(running jobs)
// and, joined to a batch, quadratic; a sequential scan reads the whole table
// (docs/benchmarks.md#at-scale). The plans are asserted, not the times.
func TestPlansAtScaleUseThePrimaryKey(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.jobs (id, kind, queue, args, state, attempt, max_attempts,
		token, version, run_at, last_actor, created_at, updated_at, finished_at, expires_at)
		SELECT '0000' || lpad(i::text, 32, '0'), 'old', 'default', '{}', 'completed', 1, 25, 1, 3, now(), 'worker',
			now(), now(), now(), now() + interval '1 day'
		FROM generate_series(1, 50000) i`))
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, s.sql(`ANALYZE {schema}.jobs`)) // as autovacuum would, while no job runs
	require.NoError(t, err)
	params := make([]*store.InsertParams, 300)
	for i := range params {
		params[i] = &store.InsertParams{ID: uuid.Must(uuid.NewV7()).String(), Kind: "noop", Queue: "default",
			Args: []byte(`{}`), MaxAttempts: 3, Actor: hoppertype.ActorAPI, Reason: "enqueue"}
	}
	_, err = s.JobInsertMany(ctx, params)
	require.NoError(t, err)
	jobs, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: "default", Limit: 300, WorkerID: "w", LeaseDuration: time.Minute})
	require.NoError(t, err)
	require.Len(t, jobs, 300)

	fin := &finishArrays{}
	ids, tokens, durations := []string{}, []int64{}, []int64{}
	for i, j := range jobs {
		fin.add(i, &store.FinishParams{ID: j.ID, Token: j.Token, State: hoppertype.StateCompleted,
			Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker})
		ids, tokens, durations = append(ids, j.ID), append(tokens, j.Token), append(durations, 60_000_000)
	}
	var last string
	require.NoError(t, s.pool.QueryRow(ctx, s.sql(sweepWindowSQL), "", 5000, nil).Scan(&last, new(int64), new(int64), new(*time.Time), new(int64)))
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"finish":    {finishSQL, append([]any{nil}, fin.args()...)},
		"extend":    {extendSQL, []any{nil, ids, tokens, durations}},
		"heartbeat": {`UPDATE {schema}.jobs AS j SET heartbeat_at = now() WHERE j.id = $1 AND j.token = $2 AND ` + runningByID, []any{ids[0], tokens[0]}},
		"rescue":    {rescueLeasesSQL, []any{nil, "leader", "lost", nil, "lost", ids, tokens}},
		"window":    {sweepWindowSQL, []any{"", 5000, nil}},
		"sweep":     {sweepSQL, []any{"", last, nil}},
	} {
		plan := explain(t, s, q.sql, q.args...)
		require.Contains(t, plan, "jobs_pkey", "%s:\n%s", name, plan)
		require.NotContains(t, plan, "jobs_lease", "%s:\n%s", name, plan)
		require.NotContains(t, plan, "Seq Scan on jobs", "%s:\n%s", name, plan)
	}
	// What is due reads the expiries of the oldest jobs through the primary key (and asks
	// jobs_lease whether any job runs), never every job's.
	plan := explain(t, s, dueSQL, nil, store.DueHeadJobs)
	require.Contains(t, plan, "jobs_pkey", plan)
	require.NotContains(t, plan, "Seq Scan on jobs", plan)
}

// openPlanStore opens a store on a fresh schema, closed at cleanup, for the tests that look
// inside its statements (plans, locks).
func openPlanStore(t *testing.T) *Store {
	t.Helper()
	pgtest.Require(t)
	s, err := Open(t.Context(), Config{URL: pgtest.URL(), Schema: pgtest.FreshSchema(t, "hopper_test_plan_"), MaxConns: 2})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// explain returns the plan PostgreSQL makes for the statement with these arguments.
func explain(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	rs, err := s.pool.Query(t.Context(), "EXPLAIN "+s.sql(query), args...)
	require.NoError(t, err)
	defer rs.Close()
	var lines []string
	for rs.Next() {
		var line string
		require.NoError(t, rs.Scan(&line))
		lines = append(lines, line)
	}
	require.NoError(t, rs.Err())
	return strings.Join(lines, "\n")
}

// With a backlog of queued jobs, analyzed, a claim from a cursor must still read only about as
// many jobs as it claims: each range walks jobs_claim under a constant LIMIT, and the update
// finds the picked jobs by primary key. Its ranges' LIMITs were "$3 minus what the ranges before
// found", which the planner estimates as a tenth of the queue: it walked the primary key
// and hash-joined the update to a sequential scan of the table, a second per claim with
// 800,000 queued jobs in the PostgreSQL soak (docs/benchmarks.md#soak).
func TestClaimPlansWithABacklog(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.jobs (id, kind, queue, args, state, attempt, max_attempts,
		token, version, run_at, last_actor, created_at, updated_at, finished_at, expires_at)
		SELECT '0000' || lpad(i::text, 32, '0'), 'noop', CASE WHEN i % 4 = 0 THEN 'other' ELSE 'default' END, '{}',
			CASE WHEN i <= 50000 THEN 'completed' ELSE 'queued' END, 0, 25, 0, 1, now(), 'api', now(), now(),
			CASE WHEN i <= 50000 THEN now() END, CASE WHEN i <= 50000 THEN now() + interval '1 day' END
		FROM generate_series(1, 250000) i`))
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, s.sql(`ANALYZE {schema}.jobs`))
	require.NoError(t, err)
	cursor := "0000" + strings.Repeat("0", 27) + "60001" // the first queued job of the claims to come
	for name, q := range map[string]struct {
		sql  string
		args []any
	}{
		"cursor":   {claimCursorSQL, []any{nil, "default", 100, "w", int64(60_000_000), []string{}, 0, cursor}},
		"uncapped": {claimUncappedSQL, []any{nil, "default", 100, "w", int64(60_000_000), []string{}}},
	} {
		plan := explain(t, s, q.sql, q.args...)
		require.NotContains(t, plan, "Seq Scan on jobs", "%s:\n%s", name, plan)
		require.NotContains(t, plan, "Hash Join", "%s:\n%s", name, plan)
		require.Contains(t, plan, "Nested Loop", "%s:\n%s", name, plan)
	}
	// And it claims in claim order from the cursor, as before.
	jobs, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: "default", Limit: 3, WorkerID: "w", LeaseDuration: time.Minute})
	require.NoError(t, err)
	require.Len(t, jobs, 3)
}

// A compaction's look-up of a kind's waiting grouped jobs goes through jobs_compact, which holds
// only queued grouped jobs: a backlog of other queued jobs, or of ended ones, is not read. Its
// lock of the groups' jobs and its replacement of a group find the jobs by primary key.
func TestCompactPlansWithABacklog(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.jobs (id, kind, queue, args, state, attempt, max_attempts,
		token, version, run_at, last_actor, created_at, updated_at, finished_at, expires_at, group_key)
		SELECT '0000' || lpad(i::text, 32, '0'), 'noop', 'default', '{}',
			CASE WHEN i <= 50000 THEN 'completed' ELSE 'queued' END, 0, 25, 0, 1, now(), 'api', now(), now(),
			CASE WHEN i <= 50000 THEN now() END, CASE WHEN i <= 50000 THEN now() + interval '1 day' END,
			CASE WHEN i % 1000 = 0 THEN 'g' || (i % 7000) END
		FROM generate_series(1, 200000) i`))
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, s.sql(`ANALYZE {schema}.jobs`))
	require.NoError(t, err)
	for _, group := range []string{"", "g3000"} {
		plan := explain(t, s, compactCandidatesSQL, "noop", group)
		require.Contains(t, plan, "jobs_compact", "group %q:\n%s", group, plan)
		require.NotContains(t, plan, "Seq Scan on jobs", "group %q:\n%s", group, plan)
	}
	ids := []string{"0000" + strings.Repeat("0", 26) + "100000", "0000" + strings.Repeat("0", 26) + "101000"}
	plan := explain(t, s, compactLockSQL, ids)
	require.Contains(t, plan, "jobs_pkey", plan)
	require.NotContains(t, plan, "Seq Scan on jobs", plan)
	plan = explain(t, s, compactGroupSQL, nil, "new", ids[0], []byte(`{}`), nil, "leader", "compacted into new",
		int64(60_000_000), ids, "compacted 2 jobs (keep)")
	require.Contains(t, plan, "jobs_pkey", plan)
	require.NotContains(t, plan, "Seq Scan on jobs", plan)
}

// With one key's flood queued and analyzed, the fair claim's read of each key's head walks
// jobs_fair under the key, and the unkeyed jobs' too. Ordered as the whole queue is, the
// planner walked jobs_claim and filtered by key (the statistics say one key holds every job):
// 25 ms a quiet key behind 100,000 jobs, a quarter of a second a claim
// (docs/benchmarks.md#fairness-between-tenants-fairness-keys).
func TestFairReadPlanWithAFlood(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	insert := func(from, to int, key string) {
		_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.jobs (id, kind, queue, args, state, attempt, max_attempts,
			token, version, run_at, last_actor, created_at, updated_at, fairness_key)
			SELECT '0000' || lpad(i::text, 32, '0'), 'noop', 'default', '{}', 'queued', 0, 25, 0, 1, now(), 'api', now(), now(),
				$3 || CASE WHEN $3 = 'flood' THEN '' ELSE i::text END
			FROM generate_series($1::int, $2::int) i`), from, to, key)
		require.NoError(t, err)
	}
	insert(1, 100000, "flood")
	_, err := s.pool.Exec(ctx, s.sql(`ANALYZE {schema}.jobs`)) // as autovacuum does during the flood
	require.NoError(t, err)
	insert(100001, 100009, "quiet-")
	plan := explain(t, s, fairReadSQL, store.FairKeysPerClaim(1), "default", 1, []string{})
	require.Equal(t, 2, strings.Count(plan, "using jobs_fair on jobs"), plan)
	require.NotContains(t, plan, "Seq Scan on jobs", plan)
	// The claim runs it on its generic plan (genericPlansSQL), which must walk the same indexes.
	plan = explainGeneric(t, s, fairReadSQL, "int, text, int, text[]", "17, 'default', 1, '{}'")
	require.Equal(t, 2, strings.Count(plan, "using jobs_fair on jobs"), plan)
	require.NotContains(t, plan, "Seq Scan on jobs", plan)
}

// The fair claim looks its chosen jobs up, and locks them, one by one by primary key in the
// order given, even when the statistics predate a flood (analyzed while the queue was empty, as
// a fresh table or a quiet one is): a join of the ids with jobs was planned as a hash join of
// the whole flood, 140–290 ms a claim behind 100,000 jobs
// (docs/benchmarks.md#fairness-between-tenants-fairness-keys).
func TestFairClaimPlanWithAFlood(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, s.sql(`ANALYZE {schema}.jobs`)) // while the queue is empty
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.jobs (id, kind, queue, args, state, attempt, max_attempts,
		token, version, run_at, last_actor, created_at, updated_at, fairness_key)
		SELECT '0000' || lpad(i::text, 32, '0'), 'noop', 'default', '{}', 'queued', 0, 25, 0, 1, now(), 'api', now(), now(), 'flood'
		FROM generate_series(1, 100000) i`))
	require.NoError(t, err)
	ids := []string{"0000" + strings.Repeat("0", 27) + "10", "0000" + strings.Repeat("0", 27) + "11"}
	check := func(plan string) {
		t.Helper()
		picked := plan[strings.Index(plan, "CTE picked"):strings.Index(plan, "CTE Scan on picked")]
		require.Contains(t, picked, "Function Scan on unnest", plan)
		require.Contains(t, picked, "Index Scan using jobs_pkey", plan)
		require.Contains(t, picked, "Index Cond: (id = c.id)", plan)
		require.NotContains(t, picked, "Hash", plan)
		require.NotContains(t, picked, "Sort", plan)
		require.NotContains(t, picked, "jobs_fair", plan)
		require.NotContains(t, plan, "Seq Scan on jobs", plan)
	}
	check(explain(t, s, fairClaimSQL, nil, "default", 2, "w", int64(30_000_000), ids))
	check(explainGeneric(t, s, fairClaimSQL, "timestamptz, text, int, text, bigint, text[]",
		"NULL, 'default', 2, 'w', 30000000, '{"+ids[0]+","+ids[1]+"}'"))
}

// explainGeneric returns the generic plan PostgreSQL makes for the statement, prepared with
// the parameter types types, executed with the arguments args (SQL literals).
func explainGeneric(t *testing.T, s *Store, query, types, args string) string {
	t.Helper()
	ctx := t.Context()
	conn, err := s.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `SET plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)
	defer conn.Exec(context.WithoutCancel(ctx), `RESET plan_cache_mode`) //nolint:errcheck // the pool's connection, reset for the next user
	_, err = conn.Exec(ctx, "PREPARE generic("+types+") AS "+s.sql(query))
	require.NoError(t, err)
	defer conn.Exec(context.WithoutCancel(ctx), `DEALLOCATE generic`) //nolint:errcheck // as above
	rs, err := conn.Query(ctx, "EXPLAIN EXECUTE generic("+args+")")
	require.NoError(t, err)
	var lines []string
	for rs.Next() {
		var line string
		require.NoError(t, rs.Scan(&line))
		lines = append(lines, line)
	}
	require.NoError(t, rs.Err())
	return strings.Join(lines, "\n")
}

// A claim's removal of a key none of whose jobs is queued any more finds that out through
// jobs_fair, even under the generic plan a prepared statement gets after five runs: with the
// statistics of a flood of one key, = on the key estimates that every queued job matches, and
// the generic plan scanned the whole table for the first match, 100 ms a dropped key behind
// 100,000 jobs (docs/benchmarks.md#fairness-between-tenants-fairness-keys).
func TestFairDropPlanWithAFlood(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.jobs (id, kind, queue, args, state, attempt, max_attempts,
		token, version, run_at, last_actor, created_at, updated_at, fairness_key)
		SELECT '0000' || lpad(i::text, 32, '0'), 'noop', 'default', '{}', 'queued', 0, 25, 0, 1, now(), 'api', now(), now(), 'flood'
		FROM generate_series(1, 100000) i`))
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, s.sql(`ANALYZE {schema}.jobs`))
	require.NoError(t, err)
	plan := explainGeneric(t, s, fairDropSQL, "text, text", "'default', 'quiet-1'")
	require.Contains(t, plan, "jobs_fair", plan)
	require.NotContains(t, plan, "Seq Scan on jobs", plan)
	// The key bounds the walk of jobs_fair: a walk of the queue's part filtering by key reads
	// the whole flood.
	require.Regexp(t, `Index Cond: \(\(queue = \$1\) AND \(fairness_key >= \$2\)`, plan)
}

// Reading a job's parents costs a look-up of its dependency rows by the child's index, then
// each parent by primary key, in a table of many jobs and dependencies, analyzed: never a
// scan of either.
func TestParentsPlanWithManyDependencies(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.jobs (id, kind, queue, args, state, attempt, max_attempts,
		token, version, run_at, last_actor, created_at, updated_at, finished_at, expires_at, has_children)
		SELECT '0000' || lpad(i::text, 32, '0'), 'old', 'default', '{}', 'completed', 1, 25, 1, 3, now(), 'worker',
			now(), now(), now(), now() + interval '1 day', true
		FROM generate_series(1, 50000) i`))
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.job_deps (parent_id, child_id, parent_outcome, parent_index)
		SELECT '0000' || lpad(i::text, 32, '0'), '0000' || lpad((i / 10 + 1)::text, 32, '0'), 'completed', i % 10
		FROM generate_series(1, 50000) i`))
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, s.sql(`ANALYZE {schema}.jobs; ANALYZE {schema}.job_deps`))
	require.NoError(t, err)
	child := "0000" + strings.Repeat("0", 28) + "0042"
	for name, plan := range map[string]string{"results": explain(t, s, parentResultsSQL, child, nil, 0, nil),
		"no results": explain(t, s, parentsNoResultsSQL, child, nil, 20)} {
		require.Contains(t, plan, "job_deps_child", name, plan)
		require.Contains(t, plan, "jobs_pkey", name, plan)
		require.NotContains(t, plan, "Seq Scan", name, plan)
	}
}

// A page of a workflow's steps walks workflow_steps' key from the cursor in step (job id) order,
// each job read by its key, among 200 workflows of 500 steps each, analyzed: never a sort of
// the workflow's steps (jobs_workflow, by workflow alone, made the planner read and sort them
// all for each page) and never a scan of jobs.
func TestWorkflowStepsPlanWithManySteps(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.jobs (id, kind, queue, args, state, attempt, max_attempts,
		token, version, run_at, last_actor, created_at, updated_at, workflow_id, workflow_step)
		SELECT '0000' || lpad(i::text, 32, '0'), 'step', 'default', '{}', 'waiting', 0, 25, 0, 1, now(), 'api',
			now(), now(), 'wf-' || (i % 200), 's' || i
		FROM generate_series(1, 100000) i`))
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.workflow_steps (workflow_id, job_id, step)
		SELECT workflow_id, id, workflow_step FROM {schema}.jobs`))
	require.NoError(t, err)
	_, err = s.pool.Exec(ctx, s.sql(`ANALYZE {schema}.jobs; ANALYZE {schema}.workflow_steps`))
	require.NoError(t, err)
	for name, p := range map[string]*store.WorkflowStepsParams{
		"first page":   {ID: "wf-1"},
		"a later page": {ID: "wf-1", Cursor: store.EncodeCursor("0000" + strings.Repeat("0", 27) + "50001")},
	} {
		query, args, err := stepsQuery(p, nil, 100)
		require.NoError(t, err)
		plan := explain(t, s, query, args...)
		t.Logf("%s:\n%s", name, plan)
		require.Contains(t, plan, "workflow_steps_pkey", name)
		require.Contains(t, plan, "jobs_pkey", name)
		require.NotContains(t, plan, "Sort", name)
		require.NotContains(t, plan, "Seq Scan", name)
	}
}

// A release (release_children, run by the finish statement's history trigger) of 200 endings
// finds their uncounted dependencies by job_deps' primary key and each child by the jobs'
// keys: never a scan of job_deps or jobs, even in a young table (5,000 dependencies, analyzed)
// where the planner prices a sequential scan below 200 index probes. Such scans, once per
// finish batch, cost 40–110 ms a batch in the workflow benchmark (docs/benchmarks.md). The
// plans of the statements inside the function are read from auto_explain, sent to this
// connection as notices.
func TestReleasePlanByKey(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	job := func(prefix, n, state, pending string) string {
		return `INSERT INTO {schema}.jobs (id, kind, queue, args, state, attempt, max_attempts, token, version, run_at,
			last_actor, created_at, updated_at, finished_at, has_children, parents_pending)
			SELECT '` + prefix + `' || lpad(i::text, 32, '0'), 'noop', 'default', '{}', '` + state + `', 1, 25, 1, 3, now(),
				'worker', now(), now(), now(), true, ` + pending + ` FROM generate_series(1, ` + n + `) i`
	}
	for _, q := range []string{
		job("0000", "5000", "completed", "0"), // old parents, their dependencies counted
		`INSERT INTO {schema}.job_deps (parent_id, child_id, parent_outcome, parent_index)
			SELECT '0000' || lpad(i::text, 32, '0'), '0000' || lpad((i / 10 + 1)::text, 32, '0'), 'completed', i % 10
			FROM generate_series(1, 5000) i`,
		job("1111", "200", "completed", "0"), // the ending parents
		job("2222", "20", "waiting", "10"),   // their children, 10 parents each
		`INSERT INTO {schema}.job_deps (parent_id, child_id, parent_index)
			SELECT '1111' || lpad(i::text, 32, '0'), '2222' || lpad(((i - 1) / 10 + 1)::text, 32, '0'), (i - 1) % 10
			FROM generate_series(1, 200) i`,
		`ANALYZE {schema}.jobs`, `ANALYZE {schema}.job_deps`,
	} {
		_, err := s.pool.Exec(ctx, s.sql(q))
		require.NoError(t, err)
	}
	cfg, err := pgx.ParseConfig(pgtest.URL())
	require.NoError(t, err)
	var mu sync.Mutex
	var plans []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		plans = append(plans, n.Message)
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.Background()) //nolint:errcheck // the release is only looked at
	for _, q := range []string{`LOAD 'auto_explain'`, `SET LOCAL auto_explain.log_min_duration = 0`,
		`SET LOCAL auto_explain.log_nested_statements = on`, `SET LOCAL auto_explain.log_level = notice`} {
		_, err := tx.Exec(ctx, q)
		require.NoError(t, err)
	}
	_, err = tx.Exec(ctx, s.sql(`SELECT {schema}.release_children(ARRAY(SELECT '1111' || lpad(i::text, 32, '0')
		FROM generate_series(1, 200) i ORDER BY 1), array_fill('completed'::text, ARRAY[200]),
		array_fill(NULL::timestamptz, ARRAY[200]), array_fill('worker'::text, ARRAY[200]), now())`))
	require.NoError(t, err)
	var released int
	require.NoError(t, tx.QueryRow(ctx, s.sql(`SELECT count(*) FROM {schema}.jobs WHERE id LIKE '2222%' AND state = 'queued'`)).Scan(&released))
	require.Equal(t, 20, released, "every child released")
	mu.Lock()
	defer mu.Unlock()
	var scans []string
	for _, p := range plans {
		if strings.Contains(p, "Seq Scan on job_deps") || strings.Contains(p, "Seq Scan on jobs") {
			scans = append(scans, p)
		}
	}
	require.Empty(t, scans, "statements of the release that scan a table")
	require.Contains(t, strings.Join(plans, "\n"), "job_deps_pkey")
}

// A release records each parent's outcome on its dependency rows as HOT updates (migration
// 0040): 2,000 dependencies inserted as a workflow's are (pages full at the default fillfactor),
// then the endings of half of them counted in one transaction, which reads its own counts of
// updates from pg_stat_xact_user_tables: every update of job_deps stayed in its page without
// a new index entry. At fillfactor 100 most of them are not HOT.
func TestReleaseOutcomesAreHOT(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	_, err := s.pool.Exec(ctx, s.sql(`INSERT INTO {schema}.job_deps (parent_id, child_id, parent_index)
		SELECT 'p' || lpad(i::text, 6, '0'), 'c' || lpad((i / 10)::text, 6, '0'), i % 10 FROM generate_series(1, 2000) i`))
	require.NoError(t, err)
	tx, err := s.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // read-only test: nothing to keep
	_, err = tx.Exec(ctx, s.sql(`SELECT {schema}.release_children(array_agg(id ORDER BY id), array_agg('completed'::text),
		array_agg(NULL::timestamptz), array_agg('worker'::text), now())
		FROM (SELECT 'p' || lpad(i::text, 6, '0') AS id FROM generate_series(1, 2000, 2) i) e`))
	require.NoError(t, err)
	var updated, hot int64
	require.NoError(t, tx.QueryRow(ctx, s.sql(`SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables
		WHERE relid = '{schema}.job_deps'::regclass`)).Scan(&updated, &hot))
	require.EqualValues(t, 1000, updated, "the outcomes of the 1,000 endings")
	require.Equal(t, updated, hot, "every outcome written as a HOT update")
}
