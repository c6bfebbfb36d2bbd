package remote_test

import (
	"context"
	"errors"
	"sync"
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

// A worker that dies while a batch runs (its handler ignores the hard stop, so no outcome
// and no release is sent: as a killed process) leaves each job of the batch to be rescued
// alone when its own lease expires, counted as one rescue each.
func TestRemoteWorkerDyingMidBatchLeavesEachJobToItsRescue(t *testing.T) {
	ts, client := remote.ServeForTest(t, remote.ServeOptions{Mod: func(c *hopper.Config) {
		c.RescueInterval, c.LeaseDuration = 50*time.Millisecond, 3*time.Second
	}})
	stuck := make(chan struct{})
	unstick := sync.OnceFunc(func() { close(stuck) })
	t.Cleanup(unstick)
	ids := enqueueGroup(t, client, resize{Width: 1}, resize{Width: 2})
	started := make(chan int, 1)
	ws := hopper.NewWorkers()
	hopper.AddBatchWorkerFunc(ws, hopper.BatchOpts{MaxJobs: 10}, func(ctx context.Context, b *hopper.Batch[resize]) error {
		started <- len(b.Jobs)
		<-stuck // deaf to its context
		return ctx.Err()
	})
	w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Concurrency: 4, Name: "doomed", LeaseDuration: time.Second})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	require.Equal(t, 2, <-started)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.NoError(t, w.Stop(ctx)) // leaves the deaf handler running: nothing renews the leases
	for _, id := range ids {
		require.Eventually(t, func() bool {
			job, err := client.Get(t.Context(), id)
			require.NoError(t, err)
			return job.Rescues == 1 && job.State == hopper.StateQueued
		}, 20*time.Second, 20*time.Millisecond, "job %s rescued", id)
	}
	// The handler left behind ends at last, canceled: its jobs are declined (the stream is
	// gone), each alone, and nothing more is sent.
	unstick()
	require.Eventually(t, func() bool { return w.Declined() == 2 }, 10*time.Second, time.Millisecond)
}
