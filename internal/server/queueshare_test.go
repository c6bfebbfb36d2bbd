package server_test

import (
	"context"
	"fmt"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Contract 14 for remote workers: a worker that asks for several queues, by long poll or by
// stream, gets their jobs shared by the weights stored for the queues.

// fill enqueues n jobs of kind k in queue.
func fill(t *testing.T, e *env, queue string, n int) {
	t.Helper()
	jobs := make([]hopper.EnqueueParams, n)
	for i := range jobs {
		jobs[i] = hopper.EnqueueParams{Args: hopper.RawArgs{KindName: "k", JSON: []byte(`{}`)},
			Opts: &hopper.InsertOpts{Queue: queue}}
	}
	_, err := e.hopper.EnqueueMany(t.Context(), jobs)
	require.NoError(t, err)
}

// openStream opens a job stream and returns the jobs it pushes, one by one; the stream closes
// at the test's end.
func openStream(t *testing.T, e *env, req *hopperv1.StreamJobsRequest) <-chan *hopperv1.ActivatedJob {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	stream, err := e.workers.StreamJobs(ctx, req)
	require.NoError(t, err)
	received := make(chan *hopperv1.ActivatedJob, 1000)
	done := make(chan struct{})
	go func() {
		defer close(done)
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
	t.Cleanup(func() {
		cancel()
		require.NoError(t, stream.Close())
		<-done
	})
	return received
}

func (e *env) complete(t *testing.T, j *hopperv1.ActivatedJob) {
	t.Helper()
	_, err := e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken()})
	require.NoError(t, err)
}

func next(t *testing.T, received <-chan *hopperv1.ActivatedJob) *hopperv1.ActivatedJob {
	t.Helper()
	j, ok := <-received
	require.True(t, ok, "the stream ended")
	return j
}

// Two backlogged queues with weights 3 and 1: a stream on both gets three jobs of the first
// for each of the second, on either store.
func TestStreamSharesItsCreditBetweenQueuesByWeight(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		require.NoError(t, e.hopper.SetQueueWeight(t.Context(), "reports", 3))
		fill(t, e, "reports", 400)
		fill(t, e, "emails", 200)
		received := openStream(t, e, &hopperv1.StreamJobsRequest{Worker: "w", Queues: []string{"reports", "emails"},
			Credit: 20})
		got := map[string]int{}
		for range 400 {
			j := next(t, received)
			got[j.GetQueue()]++
			e.complete(t, j)
		}
		require.InDelta(t, 3.0, float64(got["reports"])/float64(got["emails"]), 0.3, "3:1 within 10%% (%v)", got)
	})
}

// A stream on several queues claims for each queue apart, each within its share of the
// credit: its claim loop counts every claim's credit, so claims of two queues may be out at
// once, and a queue whose claim came back full has a second out beside it.
func TestAStreamOnSeveralQueuesClaimsForEachQueue(t *testing.T) {
	a := openGatedStream(t, &hopperv1.StreamJobsRequest{Worker: "ahead", Queues: []string{"reports", "emails"},
		Credit: 4, LeaseTimeout: durationpb.New(time.Hour)})
	fill(t, a.e, "reports", 10)
	fill(t, a.e, "emails", 10)
	// Equal weights: a claim of each queue for its half of the credit, both out at once.
	c1, c2 := a.claim(2, 0, "the first claims"), a.claim(2, 0, "the first claims")
	require.ElementsMatch(t, []string{"reports", "emails"}, []string{c1.queue, c2.queue})
	c1.let()
	c2.let()
	byQueue := map[string][]*hopperv1.ActivatedJob{}
	for range 4 {
		j := a.next()
		byQueue[j.GetQueue()] = append(byQueue[j.GetQueue()], j)
	}
	a.complete(byQueue["reports"][0])
	x := a.claim(1, 0, "reports freed a credit: a claim of reports, none ahead (nothing ended during its last)")
	require.Equal(t, "reports", x.queue)
	a.complete(byQueue["reports"][1]) // a credit of reports frees while x is on its way
	y := a.claim(1, 0, "x's queue came back full: a second claim beside it")
	x.let()
	y.let()
	a.next()
	a.next()
	a.complete(byQueue["emails"][0])
	z := a.claim(1, 0, "emails freed a credit")
	require.Equal(t, "emails", z.queue)
	z.let()
	a.next()
}

// A queue that wakes up with work while another's backlog holds the whole credit gets its
// share as credit comes free, one finished job at a time, not after the backlog: here its
// first job comes with the first free credit, and the stream soon holds 15 and 5 of its 20.
func TestAQueueThatWakesUpGetsItsShareAsCreditFrees(t *testing.T) {
	t.Parallel()
	e := start(t)
	require.NoError(t, e.hopper.SetQueueWeight(t.Context(), "reports", 3))
	fill(t, e, "reports", 200)
	received := openStream(t, e, &hopperv1.StreamJobsRequest{Worker: "w", Queues: []string{"reports", "emails"},
		Credit: 20})
	var held []*hopperv1.ActivatedJob // oldest first
	for range 20 {
		j := next(t, received)
		require.Equal(t, "reports", j.GetQueue(), "alone with work, reports takes the whole credit")
		held = append(held, j)
	}

	fill(t, e, "emails", 50)
	first := -1
	for i := range 60 { // each finished job frees one credit, which the stream fills
		e.complete(t, held[0])
		held = append(held[1:], next(t, received))
		if first < 0 && held[len(held)-1].GetQueue() == "emails" {
			first = i
		}
	}
	require.LessOrEqual(t, first, 1, "emails' first job comes with the first credit freed (or, if its wake-up is a moment late, the next)")
	holding := map[string]int{}
	for _, j := range held {
		holding[j.GetQueue()]++
	}
	require.Equal(t, map[string]int{"reports": 15, "emails": 5}, holding)
}

// A queue with no ready jobs leaves its share to the others: the heavier queue is empty, so
// the lighter one gets the whole credit, from a stream and from a poll.
func TestAnEmptyQueuesShareGoesToTheOthers(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		require.NoError(t, e.hopper.SetQueueWeight(t.Context(), "emails", 3))
		fill(t, e, "reports", 60)
		jobs := e.activate(t, &hopperv1.ActivateRequest{Queues: []string{"emails", "reports"}, MaxJobs: 20})
		require.Len(t, jobs, 20, "emails' 15 go to reports in the same call")
		received := openStream(t, e, &hopperv1.StreamJobsRequest{Worker: "w", Queues: []string{"emails", "reports"},
			Credit: 20})
		for range 20 {
			require.Equal(t, "reports", next(t, received).GetQueue())
		}
	})
}

// Activate over several queues shares max_jobs by weight, and a queue with fewer ready jobs
// than its share gives the rest to the others.
func TestActivateSharesMaxJobsBetweenQueuesByWeight(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		require.NoError(t, e.hopper.SetQueueWeight(t.Context(), "reports", 3))
		fill(t, e, "reports", 400)
		fill(t, e, "emails", 102)
		got := map[string]int{}
		for range 20 {
			for _, j := range e.activate(t, &hopperv1.ActivateRequest{Queue: "reports", Queues: []string{"emails"}, MaxJobs: 20}) {
				got[j.GetQueue()]++
			}
		}
		require.Equal(t, map[string]int{"reports": 300, "emails": 100}, got)
		got = map[string]int{}
		for _, j := range e.activate(t, &hopperv1.ActivateRequest{Queues: []string{"reports", "emails"}, MaxJobs: 20}) {
			got[j.GetQueue()]++
		}
		require.Equal(t, map[string]int{"reports": 18, "emails": 2}, got, "emails has 2 of its 5")
	})
}

// The queues of Activate, StreamJobs and Hold are checked through Connect and gRPC alike:
// INVALID_ARGUMENT naming the field.
func TestBadQueuesAreInvalidArgumentNamingTheField(t *testing.T) {
	t.Parallel()
	e := start(t)
	many := make([]string, workerapi.MaxActivateQueues+1)
	for i := range many {
		many[i] = fmt.Sprintf("q%d", i)
	}
	cases := []struct {
		queue  string
		queues []string
		field  string
	}{
		{"", many, "queues"},
		{"extra", many[:workerapi.MaxActivateQueues], "queues"},
		{"", []string{"a", ""}, "queues[1]"},
		{"", []string{"bad queue"}, "queues[0]"},
		{"", []string{"a", "b\x00"}, "queues[1]"},
	}
	for name, opts := range map[string][]connecthttp.Option{"connect": nil, "grpc": {connecthttp.WithGRPC()}} {
		workers := hopperv1connect.NewWorkerServiceClient(connect.NewClient(connecthttp.NewTransport(e.http, e.url, opts...)))
		for _, tc := range cases {
			check := func(what string, err error) {
				t.Helper()
				requireCode(t, connect.CodeInvalidArgument, err)
				require.Contains(t, err.Error(), "invalid "+tc.field+":", "%s %s", name, what)
			}
			_, err := workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "w", Queue: tc.queue, Queues: tc.queues})
			check("Activate", err)
			stream, err := workers.StreamJobs(t.Context(), &hopperv1.StreamJobsRequest{Worker: "w", Credit: 1,
				Queue: tc.queue, Queues: tc.queues})
			if err == nil {
				_, err = stream.Receive()
				require.NoError(t, stream.Close())
			}
			check("StreamJobs", err)
			_, err = workers.Hold(t.Context(), &hopperv1.HoldRequest{Worker: "w", Queue: tc.queue, Queues: tc.queues, Held: true})
			check("Hold", err)
		}
	}
	// A queue named twice counts once.
	_, err := e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "w", Queue: "a",
		Queues: append([]string{"a"}, many[:workerapi.MaxActivateQueues-1]...)})
	require.NoError(t, err)
}

// A held worker on several queues holds every stream of it on any of them, and its streams
// are listed with their queues.
func TestStreamOnSeveralQueuesIsListedAndHeld(t *testing.T) {
	t.Parallel()
	e := start(t)
	received := openStream(t, e, &hopperv1.StreamJobsRequest{Worker: "w", Queue: "reports", Queues: []string{"emails", "reports"},
		Credit: 2})
	var streams *hopperv1.ListStreamsResponse
	require.Eventually(t, func() bool {
		var err error
		streams, err = e.admin.ListStreams(t.Context(), &hopperv1.ListStreamsRequest{})
		require.NoError(t, err)
		return len(streams.GetStreams()) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "reports", streams.GetStreams()[0].GetQueue())
	require.Equal(t, []string{"reports", "emails"}, streams.GetStreams()[0].GetQueues())
	workers, err := e.admin.ListWorkers(t.Context(), &hopperv1.ListWorkersRequest{})
	require.NoError(t, err)
	require.Len(t, workers.GetWorkers(), 2, "one entry per queue")

	_, err = e.workers.Hold(t.Context(), &hopperv1.HoldRequest{Worker: "w", Queues: []string{"reports", "emails"}, Held: true})
	require.NoError(t, err)
	job := e.enqueueIn(t, "emails")
	other := e.activate(t, &hopperv1.ActivateRequest{Worker: "other", Queue: "emails", MaxJobs: 1})
	if len(other) == 0 { // the held stream's claim under way took it, and gives it back
		require.Eventually(t, func() bool {
			other = e.activate(t, &hopperv1.ActivateRequest{Worker: "other", Queue: "emails"})
			return len(other) == 1
		}, 10*time.Second, 10*time.Millisecond)
	}
	require.Equal(t, job, other[0].GetId(), "the held stream left the job for another worker")
	_, err = e.workers.Hold(t.Context(), &hopperv1.HoldRequest{Worker: "w", Queues: []string{"reports", "emails"}, Held: false})
	require.NoError(t, err)
	second := e.enqueueIn(t, "emails")
	require.Equal(t, second, next(t, received).GetId(), "let go, the stream takes jobs again")
}
