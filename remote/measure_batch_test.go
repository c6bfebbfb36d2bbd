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

// TestMeasureBatchesOverTheWire measures 10,000 grouped no-op jobs (groups of 100) worked by
// a remote worker through a local server, in batches and one by one, in both modes. It runs
// only with HOPPER_MEASURE_BATCHWIRE=1 (minutes, and a figure rather than a check):
//
//	HOPPER_MEASURE_BATCHWIRE=1 go test -run TestMeasureBatchesOverTheWire -v ./remote/
func TestMeasureBatchesOverTheWire(t *testing.T) {
	if os.Getenv("HOPPER_MEASURE_BATCHWIRE") == "" {
		t.Skip("set HOPPER_MEASURE_BATCHWIRE=1 to measure")
	}
	const n, group = 10000, 100
	for _, batched := range []bool{true, false} {
		for _, mode := range []remote.Mode{remote.Stream, remote.Poll} {
			url, client := serve(t)
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
			w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, Concurrency: 100, PollWait: time.Second})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			require.Eventually(t, func() bool {
				qs, err := client.Queues(t.Context())
				return err == nil && len(qs) == 1 && qs[0].Counts[hopper.StateCompleted] == n
			}, 5*time.Minute, 20*time.Millisecond)
			d := time.Since(began)
			t.Logf("batched=%v poll=%v: %d jobs in %s = %.0f jobs/s", batched, mode == remote.Poll, n, d.Round(time.Millisecond), float64(n)/d.Seconds())
			stoptest.Within(t, w, 10*time.Second)
		}
	}
}
