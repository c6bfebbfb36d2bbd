package sqlite_test

import (
	"testing"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/hopperjobs/hopper/internal/store/storetest"
	"github.com/stretchr/testify/require"
)

// BenchmarkStore runs the shared store microbenchmarks on SQLite (synchronous=FULL).
func BenchmarkStore(b *testing.B) { storetest.Bench(b, opener) }

// BenchmarkStoreNoSync runs them with synchronous=NORMAL, whose commits do not wait for the
// disk: what the statements cost the single writer's CPU, without the fsync whose time varies
// by tens of percent from one run to the next on a shared machine.
func BenchmarkStoreNoSync(b *testing.B) {
	storetest.Bench(b, func(t testing.TB, clk clock.Clock) func() store.Store {
		path := sqlitetest.Path(t)
		return func() store.Store {
			s, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clk, Synchronous: "NORMAL"})
			require.NoError(t, err)
			return s
		}
	})
}

func BenchmarkKeyLimits(b *testing.B) { storetest.BenchKeyLimits(b, opener) }
