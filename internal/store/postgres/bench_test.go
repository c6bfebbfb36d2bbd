package postgres_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/hopperjobs/hopper/internal/store/storetest"
	"github.com/stretchr/testify/require"
)

// BenchmarkStore runs the shared store microbenchmarks on PostgreSQL (synchronous_commit=on).
func BenchmarkStore(b *testing.B) {
	requireDatabase(b)
	storetest.Bench(b, opener)
}

// BenchmarkInsertOneEach measures enqueues of one job per transaction from 16 goroutines into
// one queue (the soak's and a web application's pattern), with every insert notifying and with
// the store's held wake-ups (wakes.go). Notifying transactions commit one at a time.
func BenchmarkInsertOneEach(b *testing.B) {
	requireDatabase(b)
	for _, bc := range []struct {
		name     string
		interval time.Duration
	}{{"notify-each", -1}, {"paced-2ms", 0}, {"paced-5ms", 5 * time.Millisecond}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := postgres.Open(b.Context(), postgres.Config{
				URL: databaseURL(), Schema: freshSchema(b), MaxConns: 16, WakeInterval: bc.interval,
			})
			require.NoError(b, err)
			defer s.Close()
			b.SetParallelism(16 / max(1, runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.JobInsertMany(b.Context(), insertParams("one", 1)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkKeyLimits times fair claims with and without limits per key (storetest.BenchKeyLimits).
func BenchmarkKeyLimits(b *testing.B) {
	requireDatabase(b)
	storetest.BenchKeyLimits(b, opener)
}
