package remote_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// A remote worker given a batch worker runs each job as a batch of one (the worker protocol
// does not carry batches): its outcome and result are the job's, as in process.
func TestRemoteWorkerRunsABatchWorkerOneJobAtATime(t *testing.T) {
	url, client := serve(t)
	ws := hopper.NewWorkers()
	sizes := make(chan int, 4)
	hopper.AddBatchWorkerFunc(ws, hopper.BatchOpts{MaxJobs: 10}, func(ctx context.Context, b *hopper.Batch[resize]) error {
		sizes <- len(b.Jobs)
		if b.Jobs[0].Args.Fail != "" {
			b.Fail(0, hopper.NoRetry(errors.New(b.Jobs[0].Args.Fail)))
			return nil
		}
		return b.SetResult(0, map[string]int{"width": b.Jobs[0].Args.Width * 2})
	})
	w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: remote.Poll, Concurrency: 2, Name: "remote-batch",
		PollWait: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)

	ok, err := client.Enqueue(t.Context(), resize{Width: 21}, &hopper.InsertOpts{GroupKey: "g"})
	require.NoError(t, err)
	job := waitFor(t, client, ok.Job.ID, hopper.StateCompleted)
	require.JSONEq(t, `{"width":42}`, string(job.Result))
	bad, err := client.Enqueue(t.Context(), resize{Fail: "bad image"}, &hopper.InsertOpts{GroupKey: "g"})
	require.NoError(t, err)
	job = waitFor(t, client, bad.Job.ID, hopper.StateFailed)
	require.Contains(t, job.LastError, "bad image")
	require.Equal(t, 1, <-sizes)
	require.Equal(t, 1, <-sizes)
}
