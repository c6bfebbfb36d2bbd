package bench

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/hopperjobs/hopper"
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
	require.GreaterOrEqual(t, math.Round(res.ClaimJobs*float64(res.Claims)), 300.0, "the claims returned every job")
	require.GreaterOrEqual(t, res.DeadTuples, int64(2*(300+20)))
	require.Positive(t, res.JobsBytes)
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON(), &m))
	for _, k := range []string{"pinned", "pin_held", "claim_p50_ms", "claim_p99_ms", "claim_jobs_mean", "dead_tuples", "jobs_per_sec", "latency_p99_ms"} {
		require.Contains(t, m, k)
	}

	// The baseline, with claiming ahead off: no claim asks for more than the free slots.
	cfg.ClaimAhead = hopper.NoClaimAhead
	res, err = Horizon(t.Context(), cfg, false)
	require.NoError(t, err)
	require.False(t, res.Pinned)
	require.False(t, res.PinHeld)
	require.Positive(t, res.Claims)
	require.LessOrEqual(t, res.ClaimJobs, 10.0)
	require.Equal(t, hopper.NoClaimAhead, res.ClaimAhead)
}

func TestHorizonNeedsPostgres(t *testing.T) {
	t.Parallel()
	_, err := Horizon(t.Context(), Config{Jobs: 10, Database: t.TempDir() + "/b.db"}, true)
	require.ErrorContains(t, err, "PostgreSQL")
}

// On PostgreSQL the standard run reports the server's WAL bytes and write transactions per job
// of its work phase. Other tests write to the same server meanwhile, so only floors are
// asserted: each job's claim and completion write WAL, and the first claim takes at most the
// 10 free slots (nothing has ended yet to claim ahead for), so the 300 jobs take at least two
// claims and one outcome batch, each a write transaction of its own. On SQLite the fields are
// absent.
func TestRunReportsServerCost(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	res, err := Run(t.Context(), Config{Jobs: 300, Workers: 10, Batch: 100, LatencyJobs: -1, Database: pgtest.URL()})
	require.NoError(t, err)
	require.Greater(t, res.WALPerJob, 100.0)
	require.GreaterOrEqual(t, res.WriteXactsPerJob, 3.0/300)
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON(), &m))
	require.Contains(t, m, "wal_bytes_per_job")
	require.Contains(t, m, "write_xacts_per_job")

	res, err = Run(t.Context(), Config{Jobs: 50, Workers: 10, Batch: 50, LatencyJobs: -1, Database: t.TempDir() + "/b.db"})
	require.NoError(t, err)
	m = nil
	require.NoError(t, json.Unmarshal(res.JSON(), &m))
	require.NotContains(t, m, "wal_bytes_per_job")
}
