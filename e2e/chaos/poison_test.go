//go:build chaos

package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
)

// A poison job kills the worker process that runs it, every time (contract 3, "poison
// jobs end"): with a supervisor restarting the workers, as a process manager would, the job
// must fail with outcome worker_lost after max_rescues losses (default 3) and go to the dead
// letters, while the good jobs enqueued with it complete. Without a bound it is claimed again
// and again forever, killing a worker each time.
func TestPoisonJobEnds(t *testing.T) {
	t.Parallel()
	fig := figures(t)
	h := newHarness(t)
	srv := h.startServer("server", "--database", filepath.Join(h.dir, "hopper.db"))
	workers := []*worker{
		h.startWorker("stream", srv.url(), workerOpts{mode: "stream"}),
		h.startWorker("poll", srv.url(), workerOpts{mode: "poll"}),
	}
	ctx, stopSupervisor := context.WithCancel(t.Context())
	restarts := make(chan int, 1)
	go func() { restarts <- supervise(ctx, workers) }()

	// jobSpec gives its jobs maxRescues; the poison job keeps the server's default bound (3).
	poison := jobSpec(Args{Action: "crash"})
	poison.MaxRescues = 0
	res, err := srv.api.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: poison})
	require.NoError(t, err)
	id := res.GetJob().GetId()
	e := newEnqueuer()
	for range 5 {
		specs := make([]*hopperv1.JobSpec, 10)
		for i := range specs {
			specs[i] = quickJob()
		}
		_, err := e.enqueueOnce(t.Context(), srv.api, specs)
		require.NoError(t, err)
	}

	within := pick(60*time.Second, 90*time.Second)
	var job *hopperv1.Job
	ended := pollUntil(within, 200*time.Millisecond, func() bool {
		got, err := srv.api.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: id})
		if err != nil {
			return false
		}
		job = got.GetJob()
		return job.GetState() == "failed" || job.GetState() == "completed"
	})
	stopSupervisor()
	n := <-restarts
	ev, err := srv.api.jobs.Events(t.Context(), &hopperv1.EventsRequest{Id: id})
	require.NoError(t, err)
	outcomes := map[string]int{}
	for _, a := range ev.GetAttempts() {
		outcomes[a.GetOutcome()]++
	}
	fig.Jobs = "1 poison + 50 good"
	fig.note("the poison job crashed its worker %d times in %s; it ended %s; its attempts: %v",
		n, secs(within), job.GetState(), outcomes)
	require.True(t, ended, "the poison job ends within %s instead of crashing workers forever (%d crashes so far; attempts %v)",
		within, n, outcomes)
	require.Equal(t, "failed", job.GetState())
	last := ev.GetAttempts()[len(ev.GetAttempts())-1]
	require.Equal(t, "worker_lost", last.GetOutcome(), "the poison job's last attempt")
	require.LessOrEqual(t, len(ev.GetAttempts()), 4, "at most three rescues (the default bound), then worker_lost")

	h.waitDrained(func() *api { return srv.api }, 51, 60*time.Second)
	h.stopWorkers()
	hist, err := srv.api.histories(t.Context())
	require.NoError(t, err)
	v := verifyRuns(e.ids(), hist, readWorkerLogs(t, h.dir))
	fig.Lost = fmt.Sprint(v.Lost)
	fig.Dups = v.dupText()
	v.require(t)
}

// supervise restarts the workers that exit, until ctx ends; it returns how many it restarted.
func supervise(ctx context.Context, workers []*worker) int {
	n := 0
	for ctx.Err() == nil {
		for _, w := range workers {
			if !w.alive() && w.tryStart() == nil {
				n++
			}
		}
		sleepCtx(ctx, 100*time.Millisecond) // real time: it watches processes, which say nothing when they exit
	}
	return n
}
