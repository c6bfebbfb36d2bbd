package sqlite

import (
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
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
	for _, name := range []string{"jobs", "job_events", "job_attempts", "idempotency_keys", "queues", "kind_limits"} {
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
