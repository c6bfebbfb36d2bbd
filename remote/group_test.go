package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// A group's next job reaches a remote worker as soon as the outcome of the job before it is
// written, as in process: the server wakes the stream's claim loop and the waiting long polls
// then. On a fake clock that never moves, no poll or recheck timer could deliver it instead
// (the stream once waited for its one-second recheck after each of a group's jobs).
func TestRemoteGroupNextJobFollowsTheOutcome(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			url, client := serveOn(t, clk)
			ids := enqueueGroup(t, client, resize{Width: 1}, resize{Width: 2}, resize{Width: 3})
			ran := make(chan int, len(ids))
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(_ context.Context, job *hopper.Job[resize]) error {
				ran <- job.Args.Width
				return nil
			})
			w, err := remote.NewOnClock(remote.Config{URL: url, Workers: ws, Mode: mode, Concurrency: 10,
				PollWait: time.Minute}, clk)
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer stoptest.Within(t, w, 10*time.Second)
			for _, id := range ids {
				waitFor(t, client, id, hopper.StateCompleted)
			}
			require.Equal(t, []int{1, 2, 3}, []int{<-ran, <-ran, <-ran}, "in the group's order")
		})
	}
}
