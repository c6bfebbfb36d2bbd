package remote_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// TestMeasureBatchesOverTheWire measures 10,000 grouped no-op jobs (groups of 100) worked in
// batches and one by one, by a remote worker of Concurrency 100 through a local server (in
// Stream and in Poll mode) and, for comparison, by a process of 100 slots on the same store
// (in process). It runs only with HOPPER_MEASURE_BATCHWIRE=1 (minutes, and a figure rather
// than a check); HOPPER_MEASURE_STORE=postgres measures on PostgreSQL (pgtest's database)
// instead of SQLite, and -run picks runs by name (store/batched|one-by-one/mode):
//
//	HOPPER_MEASURE_BATCHWIRE=1 go test -run TestMeasureBatchesOverTheWire -v ./remote/
//	HOPPER_MEASURE_BATCHWIRE=1 HOPPER_MEASURE_STORE=postgres go test -run 'TestMeasureBatchesOverTheWire/.*/one-by-one' -v ./remote/
func TestMeasureBatchesOverTheWire(t *testing.T) {
	if os.Getenv("HOPPER_MEASURE_BATCHWIRE") == "" {
		t.Skip("set HOPPER_MEASURE_BATCHWIRE=1 to measure")
	}
	storeName, pg := "sqlite", false
	switch s := os.Getenv("HOPPER_MEASURE_STORE"); s {
	case "", "sqlite":
	case "postgres":
		storeName, pg = s, true
	default:
		t.Fatalf("HOPPER_MEASURE_STORE=%q: sqlite or postgres", s)
	}
	t.Run(storeName, func(t *testing.T) {
		for _, batched := range []bool{true, false} {
			name := map[bool]string{true: "batched", false: "one-by-one"}[batched]
			t.Run(name, func(t *testing.T) {
				for _, mode := range []string{"in-process", "stream", "poll"} {
					t.Run(mode, func(t *testing.T) { measureGrouped(t, pg, batched, mode) })
				}
			})
		}
	})
}

// measureGrouped enqueues the grouped jobs, then works them as mode says and logs the rate.
func measureGrouped(t *testing.T, pg, batched bool, mode string) {
	const n, group = 10000, 100
	var st hopper.Store
	ts, client := remote.ServeForTest(t, remote.ServeOptions{Postgres: pg, Mod: func(c *hopper.Config) { st = c.Store }})
	params := make([]hopper.EnqueueParams, n)
	for i := range params {
		params[i] = hopper.EnqueueParams{Args: resize{Width: i}, Opts: &hopper.InsertOpts{GroupKey: fmt.Sprint("g", i/group)}}
	}
	_, err := client.EnqueueMany(t.Context(), params)
	require.NoError(t, err)
	ws := hopper.NewWorkers()
	if batched {
		hopper.AddBatchWorkerFunc(ws, hopper.BatchOpts{MaxJobs: group}, func(context.Context, *hopper.Batch[resize]) error { return nil })
	} else {
		hopper.AddWorkerFunc(ws, func(context.Context, *hopper.Job[resize]) error { return nil })
	}
	began := time.Now()
	var w stoptest.Stopper
	switch mode {
	case "in-process":
		local, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, WorkerID: "in-process", MaxWorkers: 100})
		require.NoError(t, err)
		require.NoError(t, local.Start(context.Background()))
		w = local
	default:
		m := map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll}[mode]
		rw, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Mode: m, Concurrency: 100, PollWait: time.Second})
		require.NoError(t, err)
		require.NoError(t, rw.Start(context.Background()))
		w = rw
	}
	require.Eventually(t, func() bool {
		qs, err := client.Queues(t.Context())
		return err == nil && len(qs) == 1 && qs[0].Counts[hopper.StateCompleted] == n
	}, 5*time.Minute, 20*time.Millisecond)
	d := time.Since(began)
	t.Logf("%d jobs in %s = %.0f jobs/s", n, d.Round(time.Millisecond), float64(n)/d.Seconds())
	stoptest.Within(t, w, 10*time.Second)
}
