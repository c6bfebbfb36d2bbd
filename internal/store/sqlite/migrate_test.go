package sqlite

import (
	"database/sql"
	"encoding/json"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/migrate"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/storetest"
	"github.com/stretchr/testify/require"
)

// Opening an empty file applies every embedded migration and creates the schema; opening it
// again applies none.
func TestMigrationsApplyOnceOnOpen(t *testing.T) {
	t.Parallel()
	files, err := fs.Glob(migrationFS, "migrations/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	path := filepath.Join(t.TempDir(), "hopper.db")
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))

	s := openAt(t, path, clk)
	requireSchemaVersion(t, s, len(files))
	applied := appliedAt(t, s)
	require.Len(t, applied, len(files))
	for _, name := range []string{"jobs", "job_events", "job_attempts", "idempotency_keys", "queues", "kinds"} {
		requireObject(t, s, "table", name)
	}
	for _, name := range []string{"jobs_event_insert", "jobs_event_update", "jobs_attempt_end", "jobs_history_delete"} {
		requireObject(t, s, "trigger", name)
	}
	require.NoError(t, s.Close())

	clk.Advance(time.Hour)
	s = openAt(t, path, clk)
	defer s.Close()
	requireSchemaVersion(t, s, len(files))
	require.Equal(t, applied, appliedAt(t, s), "reopening re-applied a migration")
}

func openAt(t *testing.T, path string, clk clock.Clock) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{Path: path, Clock: clk})
	require.NoError(t, err)
	return s
}

func requireSchemaVersion(t *testing.T, s *Store, want int) {
	t.Helper()
	v, err := s.SchemaVersion(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, v)
}

// appliedAt maps each recorded migration version to when it was applied.
func appliedAt(t *testing.T, s *Store) map[int]int64 {
	t.Helper()
	rows, err := s.writer.QueryContext(t.Context(), `SELECT version, applied_at FROM schema_migrations`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[int]int64{}
	for rows.Next() {
		var v int
		var at int64
		require.NoError(t, rows.Scan(&v, &at))
		out[v] = at
	}
	require.NoError(t, rows.Err())
	return out
}

func requireObject(t *testing.T, s *Store, typ, name string) {
	t.Helper()
	var n int
	err := s.writer.QueryRowContext(t.Context(), `SELECT count(*) FROM sqlite_master WHERE type = ? AND name = ?`, typ, name).Scan(&n)
	require.NoError(t, err)
	require.Equal(t, 1, n, "%s %s", typ, name)
}

// A database migrated by a newer binary is refused with a clear error, not half-used.
func TestNewerSchemaIsRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s, err := Open(t.Context(), Config{Path: path})
	require.NoError(t, err)
	_, err = s.writer.ExecContext(t.Context(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, '0999_future', 0)`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = Open(t.Context(), Config{Path: path})
	require.ErrorContains(t, err, "schema version 999, newer than this binary's")
}

// 0012 moves the caps of kind_limits into kinds, and leaves a kind_limits view from which a
// process of an older binary reads every cap, and a disabled kind as a cap of 0.
func TestKindsMigrationKeepsCaps(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db, ms := migrateTo(t, path, clk, 8)
	_, err := db.ExecContext(t.Context(), `INSERT INTO kind_limits (kind, max_running, updated_at) VALUES ('pdf', 3, 1)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s := openAt(t, path, clk)
	defer s.Close()
	requireSchemaVersion(t, s, len(ms))
	ks, err := s.KindList(t.Context())
	require.NoError(t, err)
	require.Equal(t, []*store.KindSettings{{Name: "pdf", MaxRunning: 3}}, ks)
	require.NoError(t, s.KindSetDisabled(t.Context(), "mail", true))

	rows, err := s.writer.QueryContext(t.Context(), `SELECT kind, max_running FROM kind_limits ORDER BY kind`)
	require.NoError(t, err)
	defer rows.Close()
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

// migrateTo opens the file at path with the first n migrations applied, as an older binary
// left it, and returns the open database and every embedded migration.
func migrateTo(t *testing.T, path string, clk clock.Clock, n int) (*sql.DB, []migrate.Migration) {
	t.Helper()
	ms, err := migrate.Load(migrationFS, "migrations")
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
	require.NoError(t, err)
	old := &Store{clock: clk, writer: db}
	for _, m := range ms[:n] {
		require.NoError(t, old.apply(t.Context(), m))
	}
	return db, ms
}

// Statements as a binary from before migration 0019 (lean history) ran them: an insert that
// leaves created_actor unset, a claim, and a finish that clears worker_id.
const (
	oldInsertSQL = `INSERT INTO jobs (id, kind, queue, args, state, max_attempts, run_at, last_actor,
		last_reason, created_at, updated_at) VALUES (?1, 'old', 'default', CAST('{}' AS BLOB), 'queued', 5, 1, 'api', 'enqueue', 1, 1)`
	oldClaimSQL = `UPDATE jobs SET state = 'running', attempt = attempt + 1, token = token + 1,
		version = version + 1, worker_id = 'old-worker', started_at = 2, updated_at = 2,
		lease_expires_at = 4000000000, last_actor = 'worker', last_reason = 'claim' WHERE id = ?1`
	oldFinishSQL = `UPDATE jobs SET state = 'completed', version = version + 1, worker_id = NULL,
		lease_expires_at = NULL, finished_at = 3, updated_at = 3, last_outcome = 'ok',
		last_actor = 'worker', last_reason = 'success' WHERE id = ?1`
)

// Migration 0019 keeps a job's creation and its last attempt in the job row. History written
// before it, and by older binaries still running beside a newer one after it, reads the same:
// every transition once, every attempt once.
func TestLeanHistoryReadsOlderBinaries(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db, _ := migrateTo(t, path, clk, 18)
	exec := func(db *sql.DB, query, id string) {
		t.Helper()
		_, err := db.ExecContext(t.Context(), query, id)
		require.NoError(t, err)
	}
	id := func() string { return uuid.Must(uuid.NewV7()).String() }
	before, runningBefore, after := id(), id(), id()
	exec(db, oldInsertSQL, before) // finished before the migration
	exec(db, oldClaimSQL, before)
	exec(db, oldFinishSQL, before)
	exec(db, oldInsertSQL, runningBefore) // running across the migration, finished by the new binary
	exec(db, oldClaimSQL, runningBefore)
	require.NoError(t, db.Close())

	s := openAt(t, path, clk)
	defer s.Close()
	errs, err := s.JobFinishMany(t.Context(), []*store.FinishParams{{ID: runningBefore, Token: 1,
		State: hoppertype.StateCompleted, Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker, Reason: "success"}})
	require.NoError(t, err)
	require.NoError(t, errs[0])

	res, err := s.JobInsertMany(t.Context(), []*store.InsertParams{{ID: after, Kind: "new", Queue: "default",
		Args: json.RawMessage(`{}`), MaxAttempts: 5, Actor: hoppertype.ActorAPI, Reason: "enqueue"}})
	require.NoError(t, err)
	require.Len(t, res, 1)
	exec(s.writer, oldClaimSQL, after) // an older binary works a job a newer one enqueued
	exec(s.writer, oldFinishSQL, after)

	oldInsertedAfter := id()
	exec(s.writer, oldInsertSQL, oldInsertedAfter)

	for _, id := range []string{before, runningBefore, after} {
		storetest.RequireCompletedOnce(t, s, id, "old-worker")
	}
	storetest.RequireJustEnqueued(t, s, oldInsertedAfter)
}
