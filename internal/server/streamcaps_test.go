package server_test

import (
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/stretchr/testify/require"
)

// fillKind enqueues n jobs of kind in the default queue.
func fillKind(t *testing.T, e *env, kind string, n int) {
	t.Helper()
	jobs := make([]hopper.EnqueueParams, n)
	for i := range jobs {
		jobs[i] = hopper.EnqueueParams{Args: hopper.RawArgs{KindName: kind, JSON: []byte(`{}`)}}
	}
	_, err := e.hopper.EnqueueMany(t.Context(), jobs)
	require.NoError(t, err)
}

// pushed is the next job the stream pushes; it fails the test when none comes within
// 10 seconds, a bound for a stream that stopped pushing, not a measure of time.
func pushed(t *testing.T, received <-chan *hopperv1.ActivatedJob) *hopperv1.ActivatedJob {
	t.Helper()
	select {
	case j, ok := <-received:
		require.True(t, ok, "the stream ended")
		return j
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no job pushed")
		return nil
	}
}

// A stream of kinds a and b with credit 10 and kind_concurrency {a: 2} never holds more than
// 2 a-jobs at once (pushed and not reported), the rest of its credit going to b-jobs; the
// a-jobs it leaves out stay queued for others (a poll takes one), and every job comes in the
// end. The a-jobs are enqueued first, so a stream that ignored the cap would push a-jobs
// only.
func TestStreamKindConcurrencyBoundsAKindInTheStream(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		const credit, capA = 10, 2
		fillKind(t, e, "a", 20)
		fillKind(t, e, "b", 20)
		received := openStream(t, e, &hopperv1.StreamJobsRequest{Worker: "w", Kinds: []string{"a", "b"},
			Credit: credit, KindConcurrency: map[string]int32{"a": capA}})
		queued := map[string]int{"a": 20, "b": 20}
		var held []*hopperv1.ActivatedJob
		heldOf := func(kind string) (n int) {
			for _, j := range held {
				if j.GetKind() == kind {
					n++
				}
			}
			return n
		}
		// receive takes the pushes the stream makes now: as many as its free credit allows
		// of the jobs it may take (a-jobs within the cap's room, any b-job).
		receive := func() {
			t.Helper()
			want := min(credit-len(held), min(capA-heldOf("a"), queued["a"])+queued["b"])
			for range want {
				j := pushed(t, received)
				queued[j.GetKind()]--
				held = append(held, j)
				require.LessOrEqual(t, heldOf("a"), capA, "a-jobs held by the stream")
			}
		}
		receive()
		require.Equal(t, capA, heldOf("a"), "the cap's room is used")
		require.Equal(t, credit-capA, heldOf("b"), "the rest of the credit goes to b-jobs")

		// The a-jobs left out are still queued: a poll for them gets one.
		res, err := e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "other", Kinds: []string{"a"}})
		require.NoError(t, err)
		require.Len(t, res.GetJobs(), 1)
		e.complete(t, res.GetJobs()[0])
		queued["a"]--

		for done := 1; len(held) > 0; done++ {
			// Report the b-jobs first while there are any, so that the a-jobs' room is what
			// limits the stream at the end.
			i := len(held) - 1
			for k, j := range held {
				if j.GetKind() == "b" {
					i = k
					break
				}
			}
			e.complete(t, held[i])
			held = append(held[:i], held[i+1:]...)
			receive()
		}
		require.Equal(t, map[string]int{"a": 0, "b": 0}, queued, "every job came")
	})
}

// A stream's kind_concurrency is checked like its other fields: INVALID_ARGUMENT naming the
// field, through Connect and gRPC.
func TestStreamKindConcurrencyRefusesBadValues(t *testing.T) {
	t.Parallel()
	e := start(t)
	many := map[string]int32{}
	var kinds []string
	for i := range workerapi.MaxStreamKindCaps + 1 {
		kind := fmt.Sprintf("k%02d", i)
		many[kind], kinds = 1, append(kinds, kind)
	}
	cases := []struct {
		kinds []string
		caps  map[string]int32
		field string
	}{
		{[]string{"a"}, map[string]int32{"a": 0}, "kind_concurrency[a]"},
		{[]string{"a"}, map[string]int32{"a": -1}, "kind_concurrency[a]"},
		{[]string{"a"}, map[string]int32{"a": 4}, "kind_concurrency[a]"}, // above the credit
		{[]string{"a"}, map[string]int32{"a": 1, "b": 1}, "kind_concurrency[b]"},
		{nil, map[string]int32{"a": 1}, "kind_concurrency"},
		{kinds, many, "kind_concurrency"},
	}
	for name, opts := range map[string][]connecthttp.Option{"connect": nil, "grpc": {connecthttp.WithGRPC()}} {
		workers := hopperv1connect.NewWorkerServiceClient(connect.NewClient(connecthttp.NewTransport(e.http, e.url, opts...)))
		for _, tc := range cases {
			stream, err := workers.StreamJobs(t.Context(), &hopperv1.StreamJobsRequest{Worker: "w", Credit: 3,
				Kinds: tc.kinds, KindConcurrency: tc.caps})
			if err == nil {
				_, err = stream.Receive()
				require.NoError(t, stream.Close())
			}
			requireCode(t, connect.CodeInvalidArgument, err)
			require.Contains(t, err.Error(), "invalid "+tc.field+":", "%s %v", name, tc.caps)
		}
	}
}
