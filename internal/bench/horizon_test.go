package bench

import (
	"encoding/json"
	"testing"

	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/stretchr/testify/require"
)

// The horizon scenario holds its snapshot to the end of the run, so every row version the
// jobs left behind is still there: a claim and a finish each leave one per job. Without the
// pin it runs the same way. No speed is asserted.
func TestHorizonPinsTheSnapshot(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	cfg := Config{Jobs: 300, Workers: 10, Batch: 100, LatencyJobs: 20, Rate: 500, Database: pgtest.URL()}
	res, err := Horizon(t.Context(), cfg, true)
	require.NoError(t, err)
	require.True(t, res.Pinned)
	require.True(t, res.PinHeld, "the snapshot's horizon was not held to the end")
	require.Equal(t, 300, res.Jobs)
	require.Equal(t, 20, res.LatencyJobs)
	require.Positive(t, res.Claims)
	require.GreaterOrEqual(t, res.ClaimP99Ms, res.ClaimP50Ms)
	require.GreaterOrEqual(t, res.DeadTuples, int64(2*(300+20)))
	require.Positive(t, res.JobsBytes)
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON(), &m))
	for _, k := range []string{"pinned", "pin_held", "claim_p50_ms", "claim_p99_ms", "dead_tuples", "jobs_per_sec", "latency_p99_ms"} {
		require.Contains(t, m, k)
	}

	res, err = Horizon(t.Context(), cfg, false)
	require.NoError(t, err)
	require.False(t, res.Pinned)
	require.False(t, res.PinHeld)
	require.Positive(t, res.Claims)
}

func TestHorizonNeedsPostgres(t *testing.T) {
	t.Parallel()
	_, err := Horizon(t.Context(), Config{Jobs: 10, Database: t.TempDir() + "/b.db"}, true)
	require.ErrorContains(t, err, "PostgreSQL")
}
