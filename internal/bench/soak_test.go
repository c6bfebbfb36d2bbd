package bench

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/stretchr/testify/require"
)

// A short soak on each store: rows every second, one job in ten failing its first attempt,
// results kept a second and swept every half second. It asserts what happened, not how fast.
func TestSoakShort(t *testing.T) {
	t.Parallel()
	stores := map[string]string{"SQLite": ""}
	if !testing.Short() {
		stores["PostgreSQL"] = pgtest.URL()
	}
	for name, db := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if db != "" {
				pgtest.Require(t)
			}
			var streamed []SoakRow
			res, err := Soak(t.Context(), SoakConfig{Database: db, Synchronous: "NORMAL", Workers: 10, Rate: 100,
				Duration: 5 * time.Second, Interval: time.Second, ResultTTL: time.Second,
				SweepInterval: 500 * time.Millisecond, FailEvery: 10, Vacuum: time.Second,
				OnRow: func(r SoakRow) { streamed = append(streamed, r) }})
			require.NoError(t, err)
			requireSoak(t, res)
			require.Equal(t, res.Rows, streamed, "OnRow hears every row")
			var vacuumed float64
			for _, r := range res.Rows {
				require.Zero(t, r.VacuumErrors)
				vacuumed += r.VacuumMs
			}
			if db != "" {
				require.Positive(t, vacuumed, "the soak vacuumed its tables")
				require.NotEmpty(t, res.Summary.Autovacuum)
			} else {
				require.Zero(t, vacuumed, "nothing to vacuum on SQLite")
			}
		})
	}
}

// requireSoak checks a short soak's result.
func requireSoak(t *testing.T, res *SoakResult) {
	t.Helper()
	require.Len(t, res.Rows, 5)
	s := res.Summary
	require.Equal(t, 100, s.Rate)
	require.Positive(t, s.Enqueued)
	require.Zero(t, s.EnqueueErrs)
	require.Positive(t, s.Failed, "planned failures")
	require.Positive(t, s.Retried, "the failed jobs were retried")
	require.Positive(t, s.Swept, "expired jobs were swept")
	last := res.Rows[len(res.Rows)-1]
	require.Less(t, last.JobsRows, s.Enqueued, "swept rows are gone from the table")
	require.Positive(t, last.DBBytes)
	require.Positive(t, last.GoroutinesMin)
	require.GreaterOrEqual(t, last.Goroutines, last.GoroutinesMin)
	require.Positive(t, last.HeapInuseBytes)
	for _, r := range res.Rows {
		require.GreaterOrEqual(t, r.LatencyP99Ms, r.LatencyP50Ms, "row %d", r.Row)
		require.GreaterOrEqual(t, r.WALBytes, int64(0), "row %d", r.Row)
	}
	// Rows end at 1 s…5 s; the first jobs can be swept from 1.5 s: two rows of warm-up.
	require.Equal(t, 2, s.WarmupRows)
	require.Equal(t, 1, s.Compared)
	// A verdict for each series, but the latencies and claim times of an end row that no job
	// was enqueued or claimed in (a loaded machine may stall the enqueuer for the second), and
	// the RSS where it cannot be read.
	first, final := res.Rows[s.WarmupRows], res.Rows[len(res.Rows)-1]
	noLatency := first.Enqueued == 0 || final.Enqueued == 0
	noClaims := first.Claims == 0 || final.Claims == 0
	require.Len(t, s.Verdicts, len(soakSeries)-btoi(res.Rows[0].RSSBytes == 0)-2*btoi(noLatency)-btoi(noClaims))
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON(), &m))
	require.Contains(t, m, "rows")
	require.Contains(t, m, "summary")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestSoakValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, SoakConfig{}.Validate())
	for _, c := range []struct {
		cfg  SoakConfig
		want string
	}{
		{SoakConfig{Duration: -time.Second}, "duration"},
		{SoakConfig{Interval: -time.Second}, "soak interval"},
		{SoakConfig{Duration: time.Second}, "duration"}, // shorter than the default interval
		{SoakConfig{Rate: -1}, "rate"},
		{SoakConfig{Rate: MaxRate + 1}, "rate"},
		{SoakConfig{ResultTTL: -time.Second}, "result ttl"},
		{SoakConfig{SweepInterval: time.Millisecond}, "sweep interval"},
		{SoakConfig{Synchronous: "OFF"}, "synchronous"},
	} {
		require.ErrorContains(t, c.cfg.Validate(), c.want, "%+v", c.cfg)
	}
}

func TestVerdicts(t *testing.T) {
	t.Parallel()
	rows := make([]SoakRow, 10)
	for i := range rows {
		rows[i] = SoakRow{Enqueued: 1, Claims: 1, LatencyP50Ms: 1, LatencyP99Ms: float64(1 + i), GoroutinesMin: 50,
			HeapInuseBytes: int64(100 + i), DBBytes: -1, WALBytes: 10, JobsRows: 1000, RSSBytes: 1}
	}
	rows[9].SweepMaxMs = 3
	vs, k := verdicts(rows)
	require.Equal(t, 2, k, "a fifth of 10 rows")
	got := map[string]string{}
	for _, v := range vs {
		got[v.Series] = v.Text
	}
	require.Equal(t, map[string]string{
		"latency_p50_ms": "flat", "latency_p99_ms": "rising +533 %", "claim_p99_ms": "flat",
		"sweep_max_ms": "rising (from 0)", "rss_bytes": "flat", "goroutines_min": "flat",
		"heap_inuse_bytes": "flat", "heap_live_bytes": "flat", "wal_bytes": "flat", "jobs_rows": "flat",
	}, got, "db_bytes was never read")
	_, k = verdicts(make([]SoakRow, 24)) // a 30-minute run after 6 rows of warm-up
	require.Equal(t, 5, k)
}
