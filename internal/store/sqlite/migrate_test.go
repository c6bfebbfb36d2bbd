package sqlite

import (
	"database/sql"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/migrate"
	"github.com/hopperjobs/hopper/internal/store"
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
	ms, err := migrate.Load(migrationFS, "migrations")
	require.NoError(t, err)
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `CREATE TABLE schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
	require.NoError(t, err)
	old := &Store{clock: clk, writer: db}
	for _, m := range ms[:8] {
		require.NoError(t, old.apply(t.Context(), m))
	}
	_, err = db.ExecContext(t.Context(), `INSERT INTO kind_limits (kind, max_running, updated_at) VALUES ('pdf', 3, 1)`)
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
