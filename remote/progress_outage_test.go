package remote_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// outage makes a server unreachable while down is set: every request's connection is cut
// before an answer, as a server that is killed reads to its clients.
type outage struct {
	down     atomic.Bool
	progress atomic.Int64 // ReportProgress and Heartbeat calls cut
}

func (o *outage) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !o.down.Load() {
			next.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == hopperv1connect.WorkerServiceReportProgressProcedure || r.URL.Path == hopperv1connect.WorkerServiceHeartbeatProcedure {
			o.progress.Add(1)
		}
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	})
}

// A handler that reports progress and heartbeats through two server outages (issue 31, item
// 7) is not failed by them: its calls during an outage return nil, the latest progress is
// kept and sent when the server answers again (here: the last one, made while the server is
// down, before the outcome). The job runs one attempt and completes with its final progress
// stored. The 20 s job reporting every 200 ms is here 30 steps driven by the test,
// each outage spanning several of them: the same calls, no sleeps.
func TestProgressDuringAnOutageIsKept(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := &outage{}
			ts, client := remote.ServeForTest(t, remote.ServeOptions{Handler: out.wrap})
			const steps = 30
			step, stepped := make(chan struct{}), make(chan error)
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				for i := 1; i <= steps; i++ {
					<-step
					err := hopper.ReportProgress(ctx, i*100/steps, fmt.Sprintf("step %d", i))
					if err == nil {
						err = hopper.Heartbeat(ctx)
					}
					stepped <- err
				}
				return nil
			})
			w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Mode: mode})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer stoptest.Within(t, w, 10*time.Second)
			res, err := client.Enqueue(t.Context(), resize{Width: 1}, nil)
			require.NoError(t, err)

			// Up for steps 1–5, down 6–12, up 13–20, down 21–30 (the last report made
			// while the server is down), then up again.
			for i := 1; i <= steps; i++ {
				switch i {
				case 6, 21:
					out.down.Store(true)
					ts.CloseClientConnections()
				case 13:
					out.down.Store(false)
				}
				step <- struct{}{}
				require.NoError(t, <-stepped, "step %d: a call during an outage does not fail the handler", i)
			}
			require.Positive(t, out.progress.Load(), "calls were made during the outages")
			out.down.Store(false)

			job := waitFor(t, client, res.Job.ID, hopper.StateCompleted)
			require.Equal(t, 1, job.Attempt, "one attempt")
			require.Equal(t, 100, job.ProgressPercent, "the final progress is stored")
			require.Equal(t, "step 30", job.ProgressMessage)
		})
	}
}
