package migrate_test

import (
	"testing"
	"testing/fstest"

	"github.com/hopperjobs/hopper/internal/migrate"
	"github.com/stretchr/testify/require"
)

func TestLoadSortsAndChecksGaps(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"m/0002_b.sql": {Data: []byte("B")},
		"m/0001_a.sql": {Data: []byte("A")},
		"m/README.md":  {Data: []byte("x")},
	}
	ms, err := migrate.Load(fsys, "m")
	require.NoError(t, err)
	require.Len(t, ms, 2)
	require.Equal(t, 1, ms[0].Version)
	require.Equal(t, "0001_a", ms[0].Name)
	require.Equal(t, "B", ms[1].SQL)

	fsys["m/0004_d.sql"] = &fstest.MapFile{Data: []byte("D")}
	_, err = migrate.Load(fsys, "m")
	require.ErrorContains(t, err, "want version 3")

	_, err = migrate.Load(fstest.MapFS{"m/x_a.sql": {}}, "m")
	require.ErrorContains(t, err, "bad version")
}
