package server_test

import (
	"context"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// streamOne opens a stream with lease, receives one job and returns it with the stream's
// cancel.
func streamOne(t *testing.T, e *env, lease time.Duration) (*hopperv1.ActivatedJob, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "fragile", Credit: 1,
		LeaseTimeout: durationpb.New(lease)})
	require.NoError(t, err)
	t.Cleanup(func() { stream.Close() })
	msg, err := stream.Receive()
	require.NoError(t, err)
	require.Len(t, msg.GetJobs(), 1)
	return msg.GetJobs()[0], cancel
}

// waitJob waits until job id is in state and has seen that many rescues.
func (e *env) waitJob(t *testing.T, id, state string, rescues int32) *hopperv1.Job {
	t.Helper()
	var job *hopperv1.Job
	require.Eventually(t, func() bool {
		job = e.get(t, id)
		return job.GetState() == state && job.GetRescues() == rescues
	}, 5*time.Second, 5*time.Millisecond, "job %s never reached %s with %d rescues", id, state, rescues)
	return job
}

// A streaming worker that goes away under its jobs (killed, say, by the job itself) stops
// renewing their leases: they lapse within one lease and the leader rescues the job, counting
// it; after the job's max_rescues the next loss dead-letters it, with the hook.
func TestStreamWorkerThatGoesAwayIsALostWorker(t *testing.T) {
	dead := make(chan *hopper.JobRow, 1)
	s := serve(t, nil, func(c *hopper.Config) {
		c.OnDeadLetter = func(_ context.Context, job *hopper.JobRow) { dead <- job }
		c.LeaseDuration, c.RescueInterval = time.Second, 50*time.Millisecond
	}, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	res, err := e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "poison", MaxRescues: 1}})
	require.NoError(t, err)
	id := res.GetJob().GetId()
	require.Equal(t, int32(1), res.GetJob().GetMaxRescues())

	job, cancel := streamOne(t, e, time.Second)
	require.Equal(t, id, job.GetId())
	cancel() // the worker dies
	e.waitJob(t, id, "queued", 1)

	_, cancel = streamOne(t, e, time.Second)
	cancel() // and dies again
	got := e.waitJob(t, id, "failed", 1)
	require.Contains(t, got.GetLastError(), "worker lost 2 times (max_rescues 1)")
	require.NotNil(t, got.GetExpiresAt(), "kept for the dead-letter retention")

	ev, err := e.jobs.Events(t.Context(), &hopperv1.EventsRequest{Id: id})
	require.NoError(t, err)
	attempts := ev.GetAttempts()
	require.Len(t, attempts, 2)
	require.Equal(t, "lease_expired", attempts[0].GetOutcome())
	require.Equal(t, "worker_lost", attempts[1].GetOutcome())
	last := ev.GetEvents()[len(ev.GetEvents())-1]
	require.Equal(t, "failed", last.GetTo())

	select {
	case j := <-dead:
		require.Equal(t, id, j.ID)
	case <-time.After(5 * time.Second):
		t.Fatal("the on-dead-letter hook was not called")
	}
}

// A stream the server ends because it shuts down leaves the jobs it pushed to their worker,
// which goes on running them and reports their outcomes to whichever server answers next:
// nothing is undone, no rescue is counted.
func TestShutdownLeavesStreamedJobsToTheirWorker(t *testing.T) {
	e := start(t)
	id := e.enqueue(t, "long", `{}`).GetId()
	job, cancel := streamOne(t, e, time.Hour)
	defer cancel()
	e.srv.Shutdown()
	got := e.get(t, id)
	require.Equal(t, "running", got.GetState())
	require.Equal(t, job.GetLeaseToken(), got.GetLeaseToken(), "still the worker's attempt")
	// The worker reports to another node of the cluster (here: the library on the same store).
	require.NoError(t, workerapi.Of(e.hopper).CompleteJob(t.Context(), id, job.GetLeaseToken(), nil))
	require.Equal(t, "completed", e.get(t, id).GetState())
	require.Equal(t, int32(0), e.get(t, id).GetRescues())
}
