package sqlite_test

import (
	"testing"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/hopperjobs/hopper/internal/store/storetest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, opener)
}

// The job row holds what it can of the history (history.go): the rows written are counted.

// The buckets of the rate limits per key do not grow without bound.
func TestKeyBuckets(t *testing.T) {
	storetest.RunKeyBuckets(t, opener, func(t *testing.T, st store.Store) int {
		n, err := sqlite.KeyBucketRows(st.(*sqlite.Store))
		require.NoError(t, err)
		return n
	})
}
func TestLeanHistory(t *testing.T) {
	t.Parallel()
	storetest.RunLeanHistory(t, opener, func(t *testing.T, st store.Store, id string) (int, int) {
		events, attempts, err := sqlite.HistoryRows(st.(*sqlite.Store), id)
		require.NoError(t, err)
		return events, attempts
	})
}

// opener opens the store under test on a fresh database.
func opener(t testing.TB, clk clock.Clock) func() store.Store {
	path := sqlitetest.Path(t)
	return func() store.Store {
		s, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clk})
		require.NoError(t, err)
		return s
	}
}

// openFresh opens the store on a migrated database of its own, closed at cleanup, for the
// tests that look inside it (plans, what a call reports).
func openFresh(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: t.TempDir() + "/hopper.db"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}
