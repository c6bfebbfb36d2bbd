package bench

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// The fill writes rows the store reads as its own finished jobs: counted by state, listed, with
// their history and stats, never claimed; and the benchmark runs beside them. No speed is
// asserted.
func TestRetainedFill(t *testing.T) {
	t.Parallel()
	for name, db := range map[string]func(t *testing.T) string{
		"SQLite":     func(t *testing.T) string { return t.TempDir() + "/b.db" },
		"PostgreSQL": func(t *testing.T) string { pgtest.Require(t); return pgtest.URL() },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Jobs: 200, Workers: 10, Batch: 100, LatencyJobs: 20, Rate: 500, Rows: 12000,
				Database: db(t), Synchronous: "NORMAL"}.withDefaults()
			tg, err := openTarget(t.Context(), cfg)
			require.NoError(t, err)
			t.Cleanup(tg.cleanup)
			res := &RetainedResult{}
			require.NoError(t, fillRetained(t.Context(), cfg, tg, res))
			require.Positive(t, res.DBBytes)
			require.Positive(t, res.WalkSeconds)
			requireRetained(t, tg.store, 12000)

			// The sweep's first walk saved the two full windows of 5,000 retained jobs as
			// settled (the last, where new jobs go, is not).
			ws, err := tg.store.SweepSettled(t.Context())
			require.NoError(t, err)
			require.Len(t, ws, 2)
			require.Empty(t, ws[0].After)
			require.Equal(t, ws[0].Last, ws[1].After)
			require.True(t, ws[0].Soonest.After(time.Now().Add(time.Hour)), "within the jobs' retention")

			require.NoError(t, measure(t.Context(), cfg, tg.store, &res.Result))
			require.Positive(t, res.JobsPerSec)
			require.Equal(t, 20, res.LatencyJobs)
			counts := stateCounts(t, tg.store)
			require.Equal(t, int64(12000*97/100+200+20), counts[hoppertype.StateCompleted], "the benchmark's jobs completed too")
		})
	}
}

// requireRetained checks what the store reads of n retained jobs.
func requireRetained(t *testing.T, st store.Store, n int) {
	t.Helper()
	ctx := t.Context()
	require.Equal(t, map[hoppertype.JobState]int64{hoppertype.StateCompleted: int64(n) * 97 / 100,
		hoppertype.StateFailed: int64(n) * 2 / 100, hoppertype.StateCanceled: int64(n) / 100}, stateCounts(t, st))

	jobs, _, err := st.JobClaim(ctx, &store.ClaimParams{Queue: "default", Limit: 100, WorkerID: "w", LeaseDuration: time.Minute})
	require.NoError(t, err)
	require.Empty(t, jobs, "a retained job was claimed")

	failed, err := st.JobList(ctx, &store.ListParams{States: []hoppertype.JobState{hoppertype.StateFailed}, Limit: 500, Ascending: true})
	require.NoError(t, err)
	require.Len(t, failed.Jobs, n*2/100)
	f := failed.Jobs[0]
	require.Equal(t, 3, f.Attempt)
	require.True(t, f.ExpiresAt.After(time.Now().Add(6*24*time.Hour)), "a dead letter is kept a week")
	attempts, err := st.JobAttempts(ctx, f.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 3)
	require.Equal(t, hoppertype.Outcome("error"), attempts[2].Outcome)
	require.Equal(t, attempts[0].WorkerID, attempts[2].WorkerID)
	require.NotEmpty(t, attempts[2].WorkerID)
	events, err := st.JobEvents(ctx, f.ID)
	require.NoError(t, err)
	var path []hoppertype.JobState
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Seq, "the history has every transition once")
		path = append(path, e.To)
	}
	require.Equal(t, []hoppertype.JobState{"queued", "running", "scheduled", "queued", "running", "scheduled",
		"queued", "running", "failed"}, path)

	all, err := st.JobList(ctx, &store.ListParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, all.Jobs, 10)
	require.True(t, all.Jobs[0].CreatedAt.Before(time.Now()))
	require.True(t, all.Jobs[0].ExpiresAt.After(time.Now().Add(time.Hour)), "within its retention")

	stats, err := st.StatsList(ctx, &store.StatsParams{Since: time.Now().Add(-24 * time.Hour)})
	require.NoError(t, err)
	var enqueued, completed, failedN, retried int64
	for _, m := range stats {
		enqueued, completed, failedN, retried = enqueued+m.Enqueued, completed+m.Completed, failedN+m.Failed, retried+m.Retried
	}
	require.Equal(t, [4]int64{int64(n), int64(n) * 97 / 100, int64(n) * 2 / 100, int64(n)*3/100 + int64(n)*4/100},
		[4]int64{enqueued, completed, failedN, retried})
}

func stateCounts(t *testing.T, st store.Store) map[hoppertype.JobState]int64 {
	t.Helper()
	counts, err := st.JobCounts(t.Context())
	require.NoError(t, err)
	out := map[hoppertype.JobState]int64{}
	for _, c := range counts {
		out[c.State] += c.Count
	}
	return out
}

// Retained runs end to end with no retained job (the baseline) and reports every field.
func TestRetainedBaseline(t *testing.T) {
	t.Parallel()
	res, err := Retained(t.Context(), Config{Jobs: 100, Workers: 5, Batch: 50, LatencyJobs: 10, Rate: 500,
		Database: t.TempDir() + "/b.db", Synchronous: "NORMAL"})
	require.NoError(t, err)
	require.Equal(t, 0, res.RetainedRows)
	require.Positive(t, res.DBBytes)
	var m map[string]any
	require.NoError(t, json.Unmarshal(res.JSON(), &m))
	for _, k := range []string{"retained_rows", "fill_seconds", "walk_seconds", "db_bytes", "jobs_per_sec", "latency_p99_ms"} {
		require.Contains(t, m, k)
	}
}
