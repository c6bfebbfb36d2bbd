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

// enqueueGroup enqueues jobs in group g, in order, and returns their ids.
func enqueueGroup(t *testing.T, client *hopper.Client, jobs ...resize) []string {
	t.Helper()
	params := make([]hopper.EnqueueParams, len(jobs))
	for i, j := range jobs {
		params[i] = hopper.EnqueueParams{Args: j, Opts: &hopper.InsertOpts{GroupKey: "g"}}
	}
	res, err := client.EnqueueMany(t.Context(), params)
	require.NoError(t, err)
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}

// startBatchWorker starts a remote worker in mode whose batch worker for resize runs fn.
func startBatchWorker(t *testing.T, url string, mode remote.Mode, fn func(context.Context, *hopper.Batch[resize]) error) {
	t.Helper()
	ws := hopper.NewWorkers()
	hopper.AddBatchWorkerFunc(ws, hopper.BatchOpts{MaxJobs: 10}, fn)
	w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, Concurrency: 10, Name: "remote-batch",
		PollWait: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() { stoptest.Within(t, w, 10*time.Second) })
}

// A remote worker given a batch worker gets a group's jobs in one batch over the wire and runs
// them with one call; each job's outcome is its own, as in process: the job failed with
// b.Fail fails alone (NoRetry), the others complete with their results.
func TestRemoteWorkerRunsABatchOverTheWire(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			url, client := serve(t)
			ids := enqueueGroup(t, client, resize{Width: 1}, resize{Width: 2, Fail: "bad image"}, resize{Width: 3})
			sizes := make(chan int, 4)
			startBatchWorker(t, url, mode, func(ctx context.Context, b *hopper.Batch[resize]) error {
				sizes <- len(b.Jobs)
				for i, job := range b.Jobs {
					if job.Args.Fail != "" {
						b.Fail(i, hopper.NoRetry(errors.New(job.Args.Fail)))
						continue
					}
					if err := b.SetResult(i, map[string]int{"width": job.Args.Width * 2}); err != nil {
						return err
					}
				}
				return nil
			})
			job := waitFor(t, client, ids[0], hopper.StateCompleted)
			require.JSONEq(t, `{"width":2}`, string(job.Result))
			job = waitFor(t, client, ids[1], hopper.StateFailed)
			require.Contains(t, job.LastError, "bad image")
			job = waitFor(t, client, ids[2], hopper.StateCompleted)
			require.JSONEq(t, `{"width":6}`, string(job.Result))
			require.Equal(t, 3, <-sizes, "one call for the group's three jobs")
		})
	}
}

// A batch handler that panics fails every job of the batch, each as its own attempt: each
// is retried under its own budget.
func TestRemoteWorkerBatchPanicFailsEveryJob(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			url, client := serve(t)
			params := []hopper.EnqueueParams{
				{Args: resize{Width: 1}, Opts: &hopper.InsertOpts{GroupKey: "g", MaxAttempts: 1}},
				{Args: resize{Width: 2}, Opts: &hopper.InsertOpts{GroupKey: "g", MaxAttempts: 1}},
			}
			res, err := client.EnqueueMany(t.Context(), params)
			require.NoError(t, err)
			startBatchWorker(t, url, mode, func(context.Context, *hopper.Batch[resize]) error {
				panic("boom")
			})
			for _, r := range res {
				job := waitFor(t, client, r.Job.ID, hopper.StateFailed)
				require.Contains(t, job.LastError, "boom")
				require.Equal(t, 1, job.Attempt)
			}
		})
	}
}
