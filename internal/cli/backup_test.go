package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

type reportArgs struct{ N int }

func (reportArgs) Kind() string { return "report" }

// backup copies the database while another process's store has it open and writes to it, and
// the copy is a database the CLI reads: the jobs enqueued before it are there.
func TestBackupCopiesADatabaseInUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.enqueue(t, "report", `{"n":1}`)
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: b.db})
	require.NoError(t, err)
	defer st.Close()
	client, err := hopper.NewClient(hopper.Config{Store: st, DisableMaintenance: true})
	require.NoError(t, err)
	_, err = client.Enqueue(t.Context(), reportArgs{N: 2}, nil)
	require.NoError(t, err)

	to := filepath.Join(t.TempDir(), "copy.db")
	res := b.run(t, "backup", "--to", to)
	require.Equal(t, ExitOK, res.code, res.stderr)
	require.Regexp(t, "^"+regexp.QuoteMeta(b.db+": copied to "+to+" (")+`[0-9.]+ MiB, schema version \d+\) in \S+\n$`, res.stdout)

	copied := &testBundle{db: to}
	ls := copied.run(t, "jobs", "ls", "--json")
	require.Equal(t, ExitOK, ls.code, ls.stderr)
	var page struct{ Jobs []struct{ ID string } }
	require.NoError(t, json.Unmarshal([]byte(ls.stdout), &page))
	require.Len(t, page.Jobs, 2)
	require.Contains(t, []string{page.Jobs[0].ID, page.Jobs[1].ID}, id)

	again := b.run(t, "backup", "--to", filepath.Join(t.TempDir(), "second.db"), "--json")
	require.Equal(t, ExitOK, again.code, again.stderr)
	var out backupJSON
	require.NoError(t, json.Unmarshal([]byte(again.stdout), &out))
	require.Equal(t, b.db, out.Database)
	require.Positive(t, out.Bytes)
	require.Positive(t, out.SchemaVersion)
}

// What backup cannot do is a usage error (exit 2) that says why, and leaves files alone.
func TestBackupRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, ExitOK, b.run(t, "migrate").code)
	existing := filepath.Join(t.TempDir(), "existing.db")
	require.NoError(t, os.WriteFile(existing, []byte("keep"), 0o600))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"backup"}, "--to is required"},
		{[]string{"backup", "--to", existing}, "exists: backup never overwrites a file"},
		{[]string{"--database", "postgres://hopper@127.0.0.1/hopper", "backup", "--to", "x.db"}, "pg_dump"},
		{[]string{"--server", "http://127.0.0.1:1", "backup", "--to", "x.db"}, "not --server"},
		{[]string{"--database", filepath.Join(t.TempDir(), "missing.db"), "backup", "--to", "x.db"}, "does not exist"},
	} {
		res := b.run(t, c.args...)
		require.Equal(t, ExitUsage, res.code, "%v: %s", c.args, res.stderr)
		require.Contains(t, res.stderr, c.want, "%v", c.args)
	}
	kept, err := os.ReadFile(existing)
	require.NoError(t, err)
	require.Equal(t, "keep", string(kept))
}
