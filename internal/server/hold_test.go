package server_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Contract 15 through the API: a remote worker held by its governor gets nothing from its
// long poll, at once, and the queue's queued jobs await compute while it is the queue's only
// worker; let go, it gets them. The server runs on a fake clock that stands still: a poll that
// waited for its timeout, or for a look at the store, would never answer.
func TestHeldPollWorkerAwaitsCompute(t *testing.T) {
	s := serve(t, clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)), nil, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	ctx := t.Context()
	hold := func(held bool) {
		t.Helper()
		_, err := e.workers.Hold(ctx, &hopperv1.HoldRequest{Worker: "w1", Queue: "mail", Held: held})
		require.NoError(t, err)
	}
	hold(true)
	job, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", Args: `{}`, Queue: "mail"}})
	require.NoError(t, err)

	type result struct {
		res *hopperv1.ActivateResponse
		err error
	}
	polled := make(chan result, 1)
	go func() {
		res, err := e.workers.Activate(ctx, &hopperv1.ActivateRequest{Worker: "w1", Queue: "mail",
			RequestTimeout: durationpb.New(time.Minute)})
		polled <- result{res, err}
	}()
	r := recv(t, polled) // and answers at once: the clock stands still
	require.NoError(t, r.err)
	require.Empty(t, r.res.GetJobs(), "a held worker's poll claims nothing")

	held := func() bool {
		list, err := e.queues.List(ctx, &hopperv1.QueueServiceListRequest{})
		require.NoError(t, err)
		for _, q := range list.GetQueues() {
			if q.GetName() == "mail" {
				require.EqualValues(t, 1, q.GetAwaitingCompute(), "the queued job awaits compute, held or not")
				return q.GetHeldByGovernor()
			}
		}
		t.Fatal("no queue mail")
		return false
	}
	require.Eventually(t, held, 10*time.Second, 10*time.Millisecond,
		"the server's heartbeat counts its held worker")
	workers, err := e.admin.ListWorkers(ctx, &hopperv1.ListWorkersRequest{})
	require.NoError(t, err)
	require.True(t, workers.GetWorkers()[0].GetHeld())

	hold(false)
	require.Eventually(t, func() bool { return !held() }, 10*time.Second, 10*time.Millisecond)
	got := e.activate(t, &hopperv1.ActivateRequest{Queue: "mail"})
	require.Equal(t, job.GetJob().GetId(), got[0].GetId())

	_, err = e.workers.Hold(ctx, &hopperv1.HoldRequest{Worker: "", Queue: "mail", Held: true})
	requireCode(t, connect.CodeInvalidArgument, err)
}

// A held stream worker keeps its stream, but the server claims nothing for it (its waiting
// claim ends at once): a job enqueued meanwhile is there for other workers. Let go, the
// stream claims again.
func TestHeldStreamWorkerGetsNoNewJob(t *testing.T) {
	e := start(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "streamer", Queue: "mail", Credit: 2})
	require.NoError(t, err)
	defer stream.Close()
	received := make(chan *hopperv1.ActivatedJob, 10)
	go func() {
		for {
			msg, err := stream.Receive()
			if err != nil {
				close(received)
				return
			}
			for _, j := range msg.GetJobs() {
				received <- j
			}
		}
	}()
	require.Eventually(t, func() bool {
		res, err := e.admin.ListStreams(t.Context(), &hopperv1.ListStreamsRequest{})
		return err == nil && len(res.GetStreams()) == 1
	}, 10*time.Second, 10*time.Millisecond, "the stream is open (and waits for a job)")

	_, err = e.workers.Hold(t.Context(), &hopperv1.HoldRequest{Worker: "streamer", Queue: "mail", Held: true})
	require.NoError(t, err)
	first := e.enqueueIn(t, "mail")
	// A claim of the stream under way when the hold came may take the job: it goes back to
	// the queue at once, so the other worker's long poll gets it either way.
	other := e.activate(t, &hopperv1.ActivateRequest{Worker: "other", Queue: "mail", RequestTimeout: durationpb.New(10 * time.Second)})
	require.Len(t, other, 1, "the held stream left the job for another worker")
	require.Equal(t, first, other[0].GetId())
	require.Empty(t, received)

	_, err = e.workers.Hold(t.Context(), &hopperv1.HoldRequest{Worker: "streamer", Queue: "mail", Held: false})
	require.NoError(t, err)
	second := e.enqueueIn(t, "mail")
	select {
	case j := <-received:
		require.Equal(t, second, j.GetId(), "let go, the stream takes jobs again")
	case <-time.After(10 * time.Second):
		t.Fatal("the stream took no job once its worker was let go")
	}
}

func (e *env) enqueueIn(t *testing.T, queue string) string {
	t.Helper()
	res, err := e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", Args: `{}`, Queue: queue}})
	require.NoError(t, err)
	return res.GetJob().GetId()
}
