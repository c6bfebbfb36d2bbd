package postgres_test

import (
	"testing"

	"github.com/hopperjobs/hopper/internal/store/storetest"
)

// BenchmarkStore runs the shared store microbenchmarks on PostgreSQL (synchronous_commit=on).
func BenchmarkStore(b *testing.B) {
	requireDatabase(b)
	storetest.Bench(b, opener)
}
