package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/hopperjobs/hopper/internal/store/storetest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// Opening a fresh schema applies every embedded migration; two nodes opening it at the same
// time both succeed (the advisory lock serializes them) and apply each migration once;
// reopening applies none.
func TestMigrationsConcurrentOpen(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	files, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	schema := freshSchema(t)
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

	stores := make([]*postgres.Store, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			stores[i], errs[i] = postgres.Open(t.Context(), postgres.Config{
				URL: databaseURL(), Schema: schema, Clock: clk, MaxConns: testConns,
			})
		})
	}
	wg.Wait()
	for i, s := range stores {
		require.NoError(t, errs[i], "open %d", i)
		v, err := s.SchemaVersion(t.Context())
		require.NoError(t, err)
		require.Equal(t, len(files), v)
		require.NoError(t, s.Close())
	}
	applied := appliedAt(t, schema)
	require.Len(t, applied, len(files), "each migration recorded once")

	clk.Advance(time.Hour)
	s := openStore(t, schema, clk)
	v, err := s.SchemaVersion(t.Context())
	require.NoError(t, err)
	require.Equal(t, len(files), v)
	require.Equal(t, applied, appliedAt(t, schema), "reopening re-applied a migration")
}

// The schema holds the same tables as SQLite's and the history triggers.
func TestMigrationsCreateObjects(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	schema := freshSchema(t)
	openStore(t, schema, nil)
	conn := connect(t)
	for _, table := range []string{"jobs", "job_events", "job_attempts", "idempotency_keys", "queues",
		"kinds", "nodes", "leader", "schema_migrations"} {
		var n int
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename = $2`,
			schema, table).Scan(&n))
		require.Equal(t, 1, n, "table %s", table)
	}
	for _, trigger := range []string{"jobs_event_insert", "jobs_event_update", "jobs_history_delete"} {
		var n int
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_trigger tg
			JOIN pg_class c ON c.oid = tg.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND tg.tgname = $2`, schema, trigger).Scan(&n))
		require.Equal(t, 1, n, "trigger %s", trigger)
	}
	// New rows and new row versions stay out of the pages of retained jobs (migration 0021).
	var options []string
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT coalesce(c.reloptions, '{}') FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'jobs'`, schema).Scan(&options))
	require.Contains(t, options, "fillfactor=70")
}

// An odd schema name is quoted everywhere, and a too-long one is refused.
func TestSchemaNameQuoted(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	schema := freshSchema(t, `Odd "name"-`)
	s := openStore(t, schema, nil)
	res, err := s.JobInsertMany(t.Context(), insertParams("default", 2))
	require.NoError(t, err)
	require.Len(t, res, 2)

	_, err = postgres.Open(t.Context(), postgres.Config{URL: databaseURL(), Schema: string(make([]byte, 59))})
	require.ErrorContains(t, err, "longer than")
}

func appliedAt(t *testing.T, schema string) map[int]time.Time {
	t.Helper()
	conn := connect(t)
	rows, err := conn.Query(t.Context(), `SELECT version, applied_at FROM `+pgx.Identifier{schema, "schema_migrations"}.Sanitize())
	require.NoError(t, err)
	out := map[int]time.Time{}
	for rows.Next() {
		var v int
		var at time.Time
		require.NoError(t, rows.Scan(&v, &at))
		out[v] = at.UTC()
	}
	require.NoError(t, rows.Err())
	return out
}

// connect opens a plain connection to the test database, closed at cleanup.
func connect(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), databaseURL())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// A schema migrated by a newer binary is refused with a clear error, as SQLite's file is.
func TestNewerSchemaIsRefused(t *testing.T) {
	requireDatabase(t)
	t.Parallel()
	schema := freshSchema(t)
	openStore(t, schema, nil) // creates and migrates the schema
	conn, err := pgx.Connect(t.Context(), databaseURL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(t.Context(), `INSERT INTO `+pgx.Identifier{schema, "schema_migrations"}.Sanitize()+
		` (version, name, applied_at) VALUES (999, '0999_future', now())`)
	require.NoError(t, err)
	_, err = postgres.Open(t.Context(), postgres.Config{URL: databaseURL(), Schema: schema, MaxConns: testConns})
	require.ErrorContains(t, err, "schema version 999, newer than this binary's")
}

// During a rolling upgrade, processes of the previous version use the tables a new binary
// migrates: a migration must not deadlock with their transactions, which PostgreSQL would end
// by failing one of them (an older binary's enqueue) or the migration (the new binary's
// start). Here a transaction of the older binary reads a table, the migration starts and waits
// for it, and the transaction then inserts a job:
//
//   - it read jobs: a migration that took a weaker lock on jobs first (0018's CREATE INDEX,
//     SHARE) and waited for a stronger one (0020's ALTER TABLE) would block the insert, a
//     deadlock PostgreSQL sees at once; the migration locks every table in its strongest mode
//     before anything else instead;
//   - it read queues: the migration holds jobs and waits for queues, the insert waits for
//     jobs; PostgreSQL looks for the deadlock after deadlock_timeout, here shorter for the
//     older binary's side (500 ms) so that it would be the one failed, and the migration
//     gives way first (its lock_timeout, 200 ms).
//
// In both the insert goes on, and the migration is applied once the transaction has ended.
func TestMigrationGivesWayToRunningTransactions(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	for _, read := range []string{"jobs", "queues"} {
		t.Run("read "+read, func(t *testing.T) {
			t.Parallel()
			schema := freshSchema(t)
			conn := connect(t)
			// 0018 creates an index on jobs (SHARE), 0020 adds columns to it (ACCESS EXCLUSIVE).
			quoted := migrateTo(t, conn, schema, 17)
			old := connect(t)
			_, err := old.Exec(t.Context(), `SET deadlock_timeout = '500ms'`)
			require.NoError(t, err, "set deadlock_timeout (the test's role must be a superuser)")
			tx, err := old.Begin(t.Context())
			require.NoError(t, err)
			defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after Commit
			// ACCESS SHARE on the table, held until the transaction ends.
			_, err = tx.Exec(t.Context(), `SELECT count(*) FROM `+quoted+`.`+read)
			require.NoError(t, err)

			opened := make(chan error, 1)
			go func() {
				s, err := postgres.Open(context.Background(), postgres.Config{URL: databaseURL(), Schema: schema, MaxConns: testConns})
				if err == nil {
					s.Close()
				}
				opened <- err
			}()
			require.Eventually(t, func() bool {
				var waiting bool
				require.NoError(t, conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM pg_locks
					WHERE relation = $1::regclass AND mode = 'AccessExclusiveLock' AND NOT granted)`,
					quoted+"."+read).Scan(&waiting))
				return waiting
			}, 10*time.Second, 2*time.Millisecond, "the migration waits for its lock on %s", read)

			_, err = tx.Exec(t.Context(), fmt.Sprintf(oldInsertSQL, quoted), uuid.NewString())
			require.NoError(t, err, "the older binary's insert goes on while the migration waits")
			require.NoError(t, tx.Commit(t.Context()))
			require.NoError(t, <-opened, "the migration is applied once the transaction has ended")
			var v int
			require.NoError(t, conn.QueryRow(t.Context(), `SELECT max(version) FROM `+quoted+`.schema_migrations`).Scan(&v))
			require.Equal(t, postgres.LatestVersion(), v)
		})
	}
}

// 0012 moves the caps of kind_limits into kinds, and leaves a kind_limits view from which a
// node still running an older binary reads (and locks) every cap, and a disabled kind as a cap
// of 0.
func TestKindsMigrationKeepsCaps(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	schema := freshSchema(t)
	conn := connect(t)
	quoted := migrateTo(t, conn, schema, 8)
	_, err := conn.Exec(t.Context(), `INSERT INTO `+quoted+`.kind_limits (kind, max_running, updated_at) VALUES ('pdf', 3, now())`)
	require.NoError(t, err)

	s := openStore(t, schema, nil)
	ks, err := s.KindList(t.Context())
	require.NoError(t, err)
	require.Equal(t, []*store.KindSettings{{Name: "pdf", MaxRunning: 3}}, ks)
	require.NoError(t, s.KindSetDisabled(t.Context(), "mail", true))

	tx, err := conn.Begin(t.Context())
	require.NoError(t, err)
	defer tx.Rollback(context.Background()) //nolint:errcheck // read only
	rows, err := tx.Query(t.Context(), `SELECT kind, max_running FROM `+quoted+`.kind_limits ORDER BY kind FOR UPDATE`)
	require.NoError(t, err)
	caps := map[string]int{}
	for rows.Next() {
		var kind string
		var n int
		require.NoError(t, rows.Scan(&kind, &n))
		caps[kind] = n
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]int{"mail": 0, "pdf": 3}, caps)
}

// migrateTo creates schema with the first n migrations applied, as an older binary left it,
// and returns its quoted name.
func migrateTo(t *testing.T, conn *pgx.Conn, schema string, n int) string {
	t.Helper()
	quoted := pgx.Identifier{schema}.Sanitize()
	_, err := conn.Exec(t.Context(), `CREATE SCHEMA `+quoted+`; CREATE TABLE `+quoted+`.schema_migrations (
		version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL)`)
	require.NoError(t, err)
	files, err := filepath.Glob("migrations/*.sql")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), n)
	for i, f := range files[:n] {
		body, err := os.ReadFile(f)
		require.NoError(t, err)
		_, err = conn.Exec(t.Context(), strings.ReplaceAll(string(body), "{schema}", quoted))
		require.NoError(t, err, f)
		_, err = conn.Exec(t.Context(), `INSERT INTO `+quoted+`.schema_migrations VALUES ($1, $2, now())`,
			i+1, strings.TrimSuffix(filepath.Base(f), ".sql"))
		require.NoError(t, err)
	}
	return quoted
}

// Statements as a binary from before migration 0020 (lean history) ran them: an insert that
// leaves created_actor unset, a claim, and a finish that clears worker_id.
const (
	oldInsertSQL = `INSERT INTO %[1]s.jobs (id, kind, queue, args, state, max_attempts, run_at, last_actor,
		last_reason, created_at, updated_at) VALUES ($1, 'old', 'default', '{}', 'queued', 5, now(), 'api', 'enqueue', now(), now())`
	oldClaimSQL = `UPDATE %[1]s.jobs SET state = 'running', attempt = attempt + 1, token = token + 1,
		version = version + 1, worker_id = 'old-worker', started_at = now(), updated_at = now(),
		lease_expires_at = now() + interval '1 hour', last_actor = 'worker', last_reason = 'claim' WHERE id = $1`
	oldFinishSQL = `UPDATE %[1]s.jobs SET state = 'completed', version = version + 1, worker_id = NULL,
		lease_expires_at = NULL, finished_at = now(), updated_at = now(), last_outcome = 'ok',
		last_actor = 'worker', last_reason = 'success' WHERE id = $1`
)

// Migration 0020 keeps a job's creation and its last attempt in the job row. History written
// before it, and by older binaries still running beside a newer one after it, reads the same:
// every transition once, every attempt once.
func TestLeanHistoryReadsOlderBinaries(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	schema := freshSchema(t)
	conn := connect(t)
	quoted := migrateTo(t, conn, schema, 19)
	exec := func(query, id string) {
		t.Helper()
		_, err := conn.Exec(t.Context(), fmt.Sprintf(query, quoted), id)
		require.NoError(t, err)
	}
	id := func() string { return uuid.Must(uuid.NewV7()).String() }
	before, runningBefore, after := id(), id(), id()
	exec(oldInsertSQL, before) // finished before the migration
	exec(oldClaimSQL, before)
	exec(oldFinishSQL, before)
	exec(oldInsertSQL, runningBefore) // running across the migration, finished by the new binary
	exec(oldClaimSQL, runningBefore)

	s := openStore(t, schema, nil)
	var token int64
	require.NoError(t, conn.QueryRow(t.Context(), `SELECT token FROM `+quoted+`.jobs WHERE id = $1`, runningBefore).Scan(&token))
	errs, err := s.JobFinishMany(t.Context(), []*store.FinishParams{{ID: runningBefore, Token: token,
		State: hoppertype.StateCompleted, Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker, Reason: "success"}})
	require.NoError(t, err)
	require.NoError(t, errs[0])

	res, err := s.JobInsertMany(t.Context(), []*store.InsertParams{{ID: after, Kind: "new", Queue: "default",
		Args: json.RawMessage(`{}`), MaxAttempts: 5, Actor: hoppertype.ActorAPI, Reason: "enqueue"}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	exec(oldClaimSQL, after) // an older binary works a job a newer one enqueued
	exec(oldFinishSQL, after)

	oldInsertedAfter := id()
	exec(oldInsertSQL, oldInsertedAfter)

	for _, id := range []string{before, runningBefore, after} {
		storetest.RequireCompletedOnce(t, s, id, "old-worker")
	}
	storetest.RequireJustEnqueued(t, s, oldInsertedAfter)
}
