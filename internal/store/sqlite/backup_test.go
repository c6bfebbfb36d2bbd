package sqlite_test

import (
	"database/sql"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

func insertJobs(t *testing.T, s *sqlite.Store, n int) {
	t.Helper()
	ps := make([]*store.InsertParams, n)
	for i := range ps {
		ps[i] = &store.InsertParams{ID: uuid.Must(uuid.NewV7()).String(), Kind: "k", Queue: "default",
			Args: json.RawMessage(`{}`), MaxAttempts: 5, Actor: hoppertype.ActorAPI, Reason: "enqueue"}
	}
	_, err := s.JobInsertMany(t.Context(), ps)
	require.NoError(t, err)
}

func countJobs(t *testing.T, s *sqlite.Store) int {
	t.Helper()
	counts, err := s.JobCounts(t.Context())
	require.NoError(t, err)
	n := 0
	for _, c := range counts {
		n += int(c.Count)
	}
	return n
}

// A backup taken while another connection writes is a consistent database with every job
// committed before it began, at the source's schema version, and nothing else is left in its
// directory.
func TestBackupWhileWriting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(dir, "hopper.db")})
	require.NoError(t, err)
	defer src.Close()
	insertJobs(t, src, 500)

	// Writes go on during the backup; each batch's jobs are counted once it committed.
	var committed atomic.Int64
	committed.Store(500)
	stop, writing := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(writing)
		for {
			select {
			case <-stop:
				return
			default:
			}
			insertJobs(t, src, 10)
			committed.Add(10)
		}
	}()
	out := t.TempDir()
	to := filepath.Join(out, "copy.db")
	before := committed.Load()
	c, err := src.Backup(t.Context(), to)
	require.NoError(t, err)
	after := committed.Load()
	close(stop)
	<-writing

	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, entries, 1, "only the copy is left: %v", entries)

	raw, err := sql.Open("sqlite", "file:"+to+"?mode=ro")
	require.NoError(t, err)
	defer raw.Close()
	var check string
	require.NoError(t, raw.QueryRow(`PRAGMA integrity_check`).Scan(&check))
	require.Equal(t, "ok", check)
	var version int
	require.NoError(t, raw.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&version))
	want, err := src.SchemaVersion(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, version)
	require.Equal(t, want, c.SchemaVersion)
	info, err := os.Stat(to)
	require.NoError(t, err)
	require.Equal(t, info.Size(), c.Bytes)

	copied, err := sqlite.Open(t.Context(), sqlite.Config{Path: to})
	require.NoError(t, err)
	defer copied.Close()
	n := countJobs(t, copied)
	require.GreaterOrEqual(t, int64(n), before, "the copy holds every job committed before the backup")
	require.LessOrEqual(t, int64(n), after+10, "and none committed after it")
	require.Zero(t, n%10, "whole batches: the copy is one transaction's view")
}

// An existing file is never overwritten, and a missing source is an error.
func TestBackupRefusesAnExistingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hopper.db")
	src, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	require.NoError(t, err)
	defer src.Close()
	to := filepath.Join(dir, "exists.db")
	require.NoError(t, os.WriteFile(to, []byte("keep me"), 0o600))

	_, err = sqlite.Backup(t.Context(), path, to, 0)
	require.ErrorIs(t, err, fs.ErrExist)
	b, err := os.ReadFile(to)
	require.NoError(t, err)
	require.Equal(t, "keep me", string(b))

	_, err = sqlite.Backup(t.Context(), filepath.Join(dir, "missing.db"), filepath.Join(dir, "new.db"), 0)
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = sqlite.Backup(t.Context(), path, filepath.Join(dir, "no-such-dir", "new.db"), 0)
	require.ErrorIs(t, err, fs.ErrNotExist)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	names := []string{}
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{"hopper.db", "hopper.db-wal", "hopper.db-shm", "exists.db"}, names)
}
