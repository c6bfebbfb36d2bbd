package sqlitetest_test

import (
	"testing"

	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// A copy of the template is a database of its own, migrated and empty: what one test writes,
// the next copy does not see.
func TestCopiesAreFreshAndSeparate(t *testing.T) {
	open := func() *sqlite.Store {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		return st
	}
	a := open()
	_, err := a.JobInsertMany(t.Context(), []*store.InsertParams{{ID: "job-1", Kind: "k", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1}})
	require.NoError(t, err)
	_, err = a.JobGet(t.Context(), "job-1")
	require.NoError(t, err)

	b := open()
	_, err = b.JobGet(t.Context(), "job-1")
	require.ErrorIs(t, err, store.ErrNotFound)

	require.Error(t, sqlitetest.Write(sqlitetest.Path(t)), "an existing file is not overwritten")
}
