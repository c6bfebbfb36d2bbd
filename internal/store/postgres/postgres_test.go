package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/hopperjobs/hopper/internal/store/storetest"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testConns keeps each test's pool small: the suite runs many tests at once on 2 cores.
const testConns = 4

func databaseURL() string { return pgtest.URL() }

func requireDatabase(t testing.TB) { pgtest.Require(t) }

// freshSchema names a new, empty schema (prefix, then random) dropped at cleanup.
func freshSchema(t testing.TB, prefix ...string) string {
	t.Helper()
	return pgtest.FreshSchema(t, "hopper_test_"+strings.Join(prefix, ""))
}

// openStore opens a store on schema and closes it at cleanup.
func openStore(t testing.TB, schema string, clk clock.Clock) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Config{
		URL: databaseURL(), Schema: schema, Clock: clk, MaxConns: testConns,
	})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	storetest.Run(t, opener)
}

// The job row holds what it can of the history (history.go): the rows written are counted.

// The buckets of the rate limits per key do not grow without bound.
func TestKeyBuckets(t *testing.T) {
	storetest.RunKeyBuckets(t, opener, func(t *testing.T, st store.Store) int {
		n, err := postgres.KeyBucketRows(st.(*postgres.Store))
		require.NoError(t, err)
		return n
	})
}
func TestLeanHistory(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	storetest.RunLeanHistory(t, opener, func(t *testing.T, st store.Store, id string) (int, int) {
		events, attempts, err := postgres.HistoryRows(st.(*postgres.Store), id)
		require.NoError(t, err)
		return events, attempts
	})
}

// opener opens the store under test on a fresh database.
func opener(t testing.TB, clk clock.Clock) func() store.Store {
	schema := freshSchema(t)
	return func() store.Store {
		s, err := postgres.Open(t.Context(), postgres.Config{
			URL: databaseURL(), Schema: schema, Clock: clk, MaxConns: testConns,
		})
		require.NoError(t, err)
		return s
	}
}
