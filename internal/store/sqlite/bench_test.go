package sqlite_test

import (
	"testing"

	"github.com/hopperjobs/hopper/internal/store/storetest"
)

// BenchmarkStore runs the shared store microbenchmarks on SQLite (synchronous=FULL).
func BenchmarkStore(b *testing.B) { storetest.Bench(b, opener) }

func BenchmarkKeyLimits(b *testing.B) { storetest.BenchKeyLimits(b, opener) }
