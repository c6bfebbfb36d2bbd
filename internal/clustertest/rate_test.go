package clustertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/pgstore"
	"github.com/stretchr/testify/require"
)

// TestRateLimitHoldsAcrossProcesses runs three worker processes on one PostgreSQL schema with
// a backlog far above a 50/1s rate limit on their queue: together they must start 50 ± 5 jobs
// a second over 20 s (the bucket lets 50 start at once, then 50 a second: 1,050 in 20 s is
// 52.5 a second), and each must have started some, so the limit is shared, not one process's.
// The start times are the store's (jobs.started_at, the database clock).
func TestRateLimitHoldsAcrossProcesses(t *testing.T) {
	pgtest.Require(t)
	if testing.Short() {
		t.Skip("runs three processes for 20 s")
	}
	const (
		limit  = 50
		window = 20 * time.Second
	)
	c := newCluster(t)
	st, err := pgstore.Open(t.Context(), pgstore.Config{URL: pgtest.URL(), Schema: c.schema, MaxConns: 2})
	require.NoError(t, err)
	client, err := hopper.NewClient(hopper.Config{Store: st, DisableMaintenance: true})
	require.NoError(t, err)
	require.NoError(t, client.SetRateLimit(t.Context(), hopper.RateLimit{Queue: hopper.DefaultQueue,
		Rate: hopper.Rate{Limit: limit, Period: time.Second}}))
	require.NoError(t, st.Close())
	c.enqueue(3 * limit * int(window/time.Second)) // never runs dry

	for _, id := range []string{"proc-1", "proc-2", "proc-3"} {
		c.start(id)
	}
	first := c.firstStart(30 * time.Second)
	time.Sleep(time.Until(first.Add(window + time.Second)))
	c.stopAll()

	perSecond := make([]int, window/time.Second)
	rows, err := c.pool.Query(context.Background(), fmt.Sprintf(
		`SELECT started_at FROM %s WHERE started_at >= $1 AND started_at < $2 ORDER BY started_at`, c.table("jobs")),
		first, first.Add(window))
	require.NoError(t, err)
	total := 0
	for rows.Next() {
		var at time.Time
		require.NoError(t, rows.Scan(&at))
		perSecond[at.Sub(first)/time.Second]++
		total++
	}
	require.NoError(t, rows.Err())
	rate := float64(total) / window.Seconds()
	t.Logf("%d starts in %s: %.1f/s; per second: %v", total, window, rate, perSecond)
	require.InDelta(t, limit, rate, 5, "starts per second over %s", window)
	require.LessOrEqual(t, total, limit+limit*int(window/time.Second), "never more than a full bucket and the refill")

	for id, n := range c.runsPerProcess() {
		require.Positive(t, n, "%s started jobs: the limit is shared", id)
	}
}

// firstStart waits for the first job start and returns its time (the database clock).
func (c *cluster) firstStart(within time.Duration) time.Time {
	var first time.Time
	q := fmt.Sprintf(`SELECT coalesce(min(started_at), 'epoch') FROM %s`, c.table("jobs"))
	require.Eventually(c.t, func() bool {
		require.NoError(c.t, c.pool.QueryRow(context.Background(), q).Scan(&first))
		return first.After(time.Unix(0, 0))
	}, within, 10*time.Millisecond, "a job started")
	return first
}

// runsPerProcess counts the handler runs each worker process logged.
func (c *cluster) runsPerProcess() map[string]int {
	out := map[string]int{}
	files, err := filepath.Glob(filepath.Join(c.dir, "*.log"))
	require.NoError(c.t, err)
	for _, name := range files {
		data, err := os.ReadFile(name)
		require.NoError(c.t, err)
		out[strings.TrimSuffix(filepath.Base(name), ".log")] = strings.Count(string(data), "\n")
	}
	require.Len(c.t, out, 3)
	return out
}
