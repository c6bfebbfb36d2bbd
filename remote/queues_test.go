package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

type report struct {
	N int `json:"n"`
}

func (report) Kind() string { return "report" }

// A worker on two queues takes the jobs of both, in both modes; a stream's credit is shared
// by the queues' weights: with weights 3 and 1, a worker of concurrency 4 runs three jobs of
// the first and one of the second while both have work.
func TestRemoteWorkerOnTwoQueues(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			url, client := serve(t)
			require.NoError(t, client.SetQueueWeight(t.Context(), "reports", 3))
			var ids []string
			for _, q := range []string{"reports", "emails"} {
				for i := range 8 {
					res, err := client.Enqueue(t.Context(), report{N: i}, &hopper.InsertOpts{Queue: q})
					require.NoError(t, err)
					ids = append(ids, res.Job.ID)
				}
			}
			started := make(chan string, 16)
			finish := make(chan struct{})
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[report]) error {
				started <- job.Queue
				select {
				case <-finish:
				case <-ctx.Done():
				}
				return nil
			})
			w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, Concurrency: 4, Name: "two-" + name,
				Queue: "reports", Queues: []string{"emails"}, PollWait: time.Second})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer stoptest.Within(t, w, 10*time.Second)

			running := map[string]int{}
			for range 4 {
				running[<-started]++
			}
			if mode == remote.Stream { // a poll asks for the slots free at the moment: its split varies
				require.Equal(t, map[string]int{"reports": 3, "emails": 1}, running)
			}
			close(finish)
			for _, id := range ids {
				waitFor(t, client, id, hopper.StateCompleted)
			}
		})
	}
}
