package upgrade

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// previousRelease picks, in order: $HOPPER_UPGRADE_FROM, the newest tag v* before HEAD, HEAD
// when the tree has uncommitted migrations, else the parent of the commit that added the
// newest migration.
func TestPreviousRelease(t *testing.T) {
	t.Setenv(fromEnv, "")
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		out, err := git(dir, args...)
		require.NoError(t, err)
		return out
	}
	commit := func(msg string, files ...string) string {
		t.Helper()
		for _, f := range files {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(msg), 0o644))
		}
		run("add", "-A")
		run("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", msg)
		return run("rev-parse", "HEAD")
	}
	run("init", "-q")
	commit("first migration", pgMigrations+"/0001_init.sql")
	beforeSecond := commit("code", "main.go")
	commit("second migration", pgMigrations+"/0002_more.sql")
	commit("more code", "other.go")

	r, err := previousRelease(dir)
	require.NoError(t, err)
	require.Equal(t, beforeSecond, r.commit, "the parent of the commit that added the newest migration")
	n, err := migrationsAt(dir, r.commit)
	require.NoError(t, err)
	require.Equal(t, 1, n)

	require.NoError(t, os.WriteFile(filepath.Join(dir, pgMigrations, "0003_new.sql"), nil, 0o644))
	r, err = previousRelease(dir)
	require.NoError(t, err)
	require.Equal(t, run("rev-parse", "HEAD"), r.commit, "uncommitted migrations: HEAD is the previous version")
	require.NoError(t, os.Remove(filepath.Join(dir, pgMigrations, "0003_new.sql")))

	run("tag", "v1.0.0", beforeSecond)
	tagged := commit("release 1.1", "notes.md")
	run("tag", "v1.1.0", tagged)
	r, err = previousRelease(dir)
	require.NoError(t, err)
	require.Equal(t, "v1.0.0", r.ref, "a tag on HEAD is this release, not the previous one")
	commit("after the release", "after.go")
	r, err = previousRelease(dir)
	require.NoError(t, err)
	require.Equal(t, "v1.1.0", r.ref)
	require.Equal(t, tagged, r.commit)

	t.Setenv(fromEnv, beforeSecond[:10])
	r, err = previousRelease(dir)
	require.NoError(t, err)
	require.Equal(t, beforeSecond, r.commit)
	t.Setenv(fromEnv, "no-such-ref")
	_, err = previousRelease(dir)
	require.ErrorContains(t, err, "not a commit")
}
