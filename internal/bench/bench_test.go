package bench

import (
	"encoding/json"
	"slices"
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

// The fairness scenario runs end to end and reports every field; it asserts no speed and no
// share (the engine's tests check the shares on a fake clock).
func TestFairnessSmall(t *testing.T) {
	fairnessWarmup, fairnessWindow = 50*time.Millisecond, 200*time.Millisecond
	res, err := Fairness(t.Context(), Config{Jobs: 4000, Workers: 4, LatencyJobs: 20, Rate: 500, Synchronous: "NORMAL"})
	require.NoError(t, err)
	require.Equal(t, 20, res.TrickleJobs)
	require.GreaterOrEqual(t, res.TrickleLatencyP99, res.TrickleLatencyP50)
	require.Len(t, res.Shares, 2)
	for _, sh := range res.Shares {
		require.Positive(t, sh.Starts)
		require.InDelta(t, 1, sh.Flood+sh.Trickle, 1e-9)
	}
	require.Equal(t, [2]int{3, 1}, [2]int{res.Shares[1].FloodWeight, res.Shares[1].TrickleWeight})
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON(), &m))
	for _, k := range []string{"trickle_latency_p50_ms", "trickle_latency_p99_ms", "shares", "flood_left"} {
		require.Contains(t, m, k)
	}
}

func TestBatchSmall(t *testing.T) {
	singleWindow = 2 * time.Second
	res, err := Batch(t.Context(), Config{Jobs: 300, Workers: 4, Synchronous: "NORMAL"})
	require.NoError(t, err)
	require.Equal(t, int64(3), res.Batches, "three groups of 100, a batch each")
	require.Positive(t, res.BatchJobsPerSec)
	require.Positive(t, res.SingleJobs)
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON(), &m))
	for _, k := range []string{"batch_jobs_per_sec", "single_jobs_per_sec", "speedup", "batches"} {
		require.Contains(t, m, k)
	}
	_, err = Batch(t.Context(), Config{Jobs: 150})
	require.ErrorContains(t, err, "multiple of 100")
}

// The workflow scenario, small: every fan-in step runs once, after all its parents (the
// scenario fails otherwise), and the figures are in its JSON.
func TestWorkflowSmall(t *testing.T) {
	FanInParents = 50
	res, err := Workflow(t.Context(), Config{Jobs: 20 * (WorkflowWidth + 1), Workers: 8, Synchronous: "NORMAL", LatencyJobs: 10 * (WorkflowWidth + 1), Rate: 400,
		Rounds: 3})
	require.NoError(t, err)
	require.Equal(t, 3, res.Rounds)
	require.Len(t, res.OneQueueRatios, 3)
	require.Equal(t, slices.Sorted(slices.Values(res.OneQueueRatios))[1], res.OneQueueRatio) // the median of three
	require.Equal(t, 20, res.Workflows)
	require.Positive(t, res.WorkflowJobsPerSec)
	require.Positive(t, res.PlainJobsPerSec)
	require.Positive(t, res.FanInJobsPerSec)
	require.Positive(t, res.ReleaseP99Ms)
	require.Positive(t, res.OneQueueJobsPerSec)
	require.Positive(t, res.OneQueueReleaseP99Ms)
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON(), &m))
	require.Equal(t, 10, res.PacedWorkflows)
	require.Positive(t, res.PacedReleaseP99Ms)
	for _, k := range []string{"workflow_jobs_per_sec", "plain_jobs_per_sec", "ratio", "release_p50_ms", "release_p99_ms", "fan_in_release_ms",
		"paced_release_p50_ms", "paced_release_p99_ms", "one_queue_jobs_per_sec", "one_queue_ratio", "one_queue_release_p50_ms",
		"one_queue_release_p99_ms", "rounds", "one_queue_ratios"} {
		require.Contains(t, m, k)
	}
	_, err = Workflow(t.Context(), Config{Jobs: 100})
	require.ErrorContains(t, err, "multiple of 11")
	_, err = Workflow(t.Context(), Config{Jobs: 11, Rounds: MaxRounds + 1})
	require.ErrorContains(t, err, "rounds 21 is outside 1–20")
}

// The per-key scenario on few keys, so that keys have several jobs and workers to spare: the
// capped run never has more than the cap of a key running, read from every job's attempt.
func TestPerKeySmall(t *testing.T) {
	perKeyKeys = 10
	res, err := PerKey(t.Context(), Config{Jobs: 600, Workers: 20, LatencyJobs: -1, Synchronous: "NORMAL"})
	require.NoError(t, err)
	require.Equal(t, 10, res.Keys)
	require.Equal(t, 600, res.Capped.JobsChecked)
	require.Equal(t, 600, res.Uncapped.JobsChecked)
	require.LessOrEqual(t, res.Capped.MaxPerKey, PerKeyCap)
	require.Positive(t, res.Capped.MaxPerKey)
	require.Positive(t, res.Ratio)
	t.Logf("uncapped: most running per key %d; capped: %d", res.Uncapped.MaxPerKey, res.Capped.MaxPerKey)
}
