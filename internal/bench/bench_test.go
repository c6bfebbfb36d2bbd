package bench

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunSmall checks the benchmark runs end to end and reports every field; it asserts no
// speed (timed assertions flake on shared machines).
func TestRunSmall(t *testing.T) {
	t.Parallel()
	res, err := Run(t.Context(), Config{Jobs: 300, Workers: 10, Batch: 100, LatencyJobs: 20, Rate: 500,
		Database: t.TempDir() + "/b.db"})
	require.NoError(t, err)
	require.Equal(t, 300, res.Jobs)
	require.Equal(t, 20, res.LatencyJobs)
	require.Positive(t, res.JobsPerSec)
	require.Positive(t, res.EnqueuePerSec)
	require.Positive(t, res.LatencyP50Ms)
	require.GreaterOrEqual(t, res.LatencyP99Ms, res.LatencyP50Ms)
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON(), &m))
	for _, k := range []string{"enqueue_per_sec", "jobs_per_sec", "latency_p50_ms", "latency_p99_ms", "jobs"} {
		require.Contains(t, m, k)
	}
}

// A rate above a billion made the latency phase's ticker interval 0, and NewTicker panics:
// `hopper bench --rate 2000000000` crashed. Found by FuzzFlags (internal/cli).
func TestValidateBoundsTheRate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Config{Rate: MaxRate}.Validate())
	for _, rate := range []int{MaxRate + 1, 2_000_000_000, int(^uint(0) >> 1)} {
		err := Config{Rate: rate}.Validate()
		require.ErrorContains(t, err, "rate", "rate %d", rate)
	}
}

func TestPercentile(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	require.Equal(t, 50.0, percentileMs(ds, 0.5))
	require.Equal(t, 99.0, percentileMs(ds, 0.99))
	require.Equal(t, 0.0, percentileMs(nil, 0.5))
}
