package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// fillGroup enqueues n jobs of kind in group (none: ungrouped) and returns their ids, in order.
func fillGroup(t *testing.T, e *env, kind, group string, n int) []string {
	t.Helper()
	jobs := make([]hopper.EnqueueParams, n)
	for i := range jobs {
		jobs[i] = hopper.EnqueueParams{Args: hopper.RawArgs{KindName: kind, JSON: []byte(`{}`)},
			Opts: &hopper.InsertOpts{GroupKey: group}}
	}
	res, err := e.hopper.EnqueueMany(t.Context(), jobs)
	require.NoError(t, err)
	ids := make([]string, n)
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}

func idsOf(jobs []*hopperv1.ActivatedJob) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.GetId()
	}
	return out
}

// An Activate with batch_kinds gets a group's jobs as one batch, in group order, each with the
// batch's id and its own lease token; max_jobs bounds the batch; the other kinds' jobs come
// alone (no batch_id) for the room left; a request without batch_kinds is unchanged.
func TestActivateDeliversABatch(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		group := fillGroup(t, e, "bulk", "g", 5)
		fillKind(t, e, "one", 3)
		bk := []*hopperv1.BatchKind{{Kind: "bulk", MaxJobs: 10}}
		jobs := e.activate(t, &hopperv1.ActivateRequest{Kinds: []string{"bulk", "one"}, MaxJobs: 4, BatchKinds: bk})
		require.Len(t, jobs, 4, "max_jobs bounds the batch")
		require.Equal(t, group[:4], idsOf(jobs), "the group's first jobs, in order")
		for _, j := range jobs {
			require.NotEmpty(t, j.GetBatchId())
			require.Equal(t, jobs[0].GetBatchId(), j.GetBatchId(), "one batch")
		}
		e.complete(t, jobs[1]) // each job is reported alone, with its own token
		require.Equal(t, "completed", e.get(t, jobs[1].GetId()).GetState())
		require.Equal(t, "running", e.get(t, jobs[0].GetId()).GetState())
		// The group runs: its fifth job waits; the other kind's come alone.
		jobs = e.activate(t, &hopperv1.ActivateRequest{Kinds: []string{"bulk", "one"}, MaxJobs: 10, BatchKinds: bk})
		require.Len(t, jobs, 3)
		for _, j := range jobs {
			require.Equal(t, "one", j.GetKind())
			require.Empty(t, j.GetBatchId())
		}
		// A plain request takes the group's last job alone (its group's batch is not
		// finished, so first finish it).
		for _, id := range []string{group[0], group[2], group[3]} {
			_, err := e.hopper.Cancel(t.Context(), id)
			require.NoError(t, err)
		}
		jobs = e.activate(t, &hopperv1.ActivateRequest{Kinds: []string{"bulk"}, MaxJobs: 10})
		require.Equal(t, group[4:], idsOf(jobs))
		require.Empty(t, jobs[0].GetBatchId())
	})
}

// A stream with batch_kinds pushes a batch whole, in one message, cut to its free credit; the
// batch costs one credit per job: with all of it held, nothing more is pushed until a job of
// the batch is reported.
func TestStreamDeliversABatchInOneMessageWithinItsCredit(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		group := fillGroup(t, e, "bulk", "g", 6)
		other := fillGroup(t, e, "bulk", "h", 2)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "s", Credit: 4, Kinds: []string{"bulk"},
			LeaseTimeout: durationpb.New(time.Hour), BatchKinds: []*hopperv1.BatchKind{{Kind: "bulk", MaxJobs: 10}}})
		require.NoError(t, err)
		defer stream.Close()
		next := func() []*hopperv1.ActivatedJob {
			for {
				msg, err := stream.Receive()
				require.NoError(t, err)
				if len(msg.GetJobs()) > 0 {
					return msg.GetJobs()
				}
			}
		}
		first := next()
		require.Equal(t, group[:4], idsOf(first), "the batch is cut to the credit, in one message")
		for _, j := range first {
			require.Equal(t, first[0].GetBatchId(), j.GetBatchId())
		}
		require.Equal(t, int64(4), running(t, e), "nothing beyond the credit")
		e.complete(t, first[0])
		second := next()
		require.Len(t, second, 1, "one credit freed: a batch of one")
		require.Equal(t, other[0], second[0].GetId(), "group g runs: group h's first job")
		require.NotEmpty(t, second[0].GetBatchId())
		cancel()
	})
}

// batch_kinds are checked like the other fields: INVALID_ARGUMENT naming the entry's field,
// on Activate and on a stream.
func TestBatchKindsRefuseBadValues(t *testing.T) {
	t.Parallel()
	e := start(t)
	var many []*hopperv1.BatchKind
	var kinds []string
	for i := range workerapi.MaxBatchKinds + 1 {
		kind := fmt.Sprintf("k%02d", i)
		many, kinds = append(many, &hopperv1.BatchKind{Kind: kind, MaxJobs: 1}), append(kinds, kind)
	}
	ok := &hopperv1.BatchKind{Kind: "a", MaxJobs: 5}
	cases := []struct {
		kinds []string
		bks   []*hopperv1.BatchKind
		field string
	}{
		{[]string{"a", "b"}, []*hopperv1.BatchKind{ok, {Kind: "b", MaxJobs: 0}}, "batch_kinds[1].max_jobs"},
		{[]string{"a", "b"}, []*hopperv1.BatchKind{ok, {Kind: "b", MaxJobs: 1001}}, "batch_kinds[1].max_jobs"},
		{[]string{"a"}, []*hopperv1.BatchKind{{Kind: "a", MaxJobs: 1, MaxWait: durationpb.New(-time.Second)}}, "batch_kinds[0].max_wait"},
		{[]string{"a"}, []*hopperv1.BatchKind{ok, {Kind: "b", MaxJobs: 1}}, "batch_kinds[1].kind"},
		{[]string{"a"}, []*hopperv1.BatchKind{ok, ok}, "batch_kinds[1].kind"},
		{nil, []*hopperv1.BatchKind{ok}, "batch_kinds"},
		{kinds, many, "batch_kinds"},
	}
	for _, tc := range cases {
		_, err := e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "w", Kinds: tc.kinds, BatchKinds: tc.bks})
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "invalid "+tc.field+":", "activate %v", tc.bks)
		stream, err := e.workers.StreamJobs(t.Context(), &hopperv1.StreamJobsRequest{Worker: "w", Credit: 3,
			Kinds: tc.kinds, BatchKinds: tc.bks})
		if err == nil {
			_, err = stream.Receive()
			require.NoError(t, stream.Close())
		}
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "invalid "+tc.field+":", "stream %v", tc.bks)
	}
}

// A long poll for a batch that lingers (max_wait) waits on the clock for the linger's end,
// looking again at most every second rather than spinning, and returns the batch once its
// oldest job has been due for max_wait.
func TestActivateWaitsForALingeringBatch(t *testing.T) {
	e, clk := startOnClock(t)
	ids := fillGroup(t, e, "bulk", "g", 2)
	done := make(chan []*hopperv1.ActivatedJob, 1)
	go func() {
		res, err := e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "poller", Kinds: []string{"bulk"},
			MaxJobs: 10, RequestTimeout: durationpb.New(time.Minute),
			BatchKinds: []*hopperv1.BatchKind{{Kind: "bulk", MaxJobs: 10, MaxWait: durationpb.New(3 * time.Second)}}})
		if err != nil {
			t.Error(err)
		}
		done <- res.GetJobs()
	}()
	for range 2 {
		waitOnClock(t, clk, 1) // the poll waits on a timer: the batch lingers
		require.Empty(t, done)
		clk.Advance(1500 * time.Millisecond)
	}
	jobs := recv(t, done)
	require.Equal(t, ids, idsOf(jobs), "the batch, once its linger ended")
	require.Equal(t, jobs[0].GetBatchId(), jobs[1].GetBatchId())
}

// A stream of batches goes on claiming batches as its credit frees, the clock standing still
// (no periodic look at the queue is needed).
func TestStreamClaimsTheNextBatchAtOnce(t *testing.T) {
	e, _ := startOnClock(t)
	ids := fillGroup(t, e, "bulk", "", 6) // ungrouped: no group waits for another's job
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "s", Credit: 2, Kinds: []string{"bulk"},
		LeaseTimeout: durationpb.New(time.Hour), BatchKinds: []*hopperv1.BatchKind{{Kind: "bulk", MaxJobs: 2, Ungrouped: true}}})
	require.NoError(t, err)
	defer stream.Close()
	msgs := make(chan []*hopperv1.ActivatedJob, 4)
	go func() {
		for {
			msg, err := stream.Receive()
			if err != nil {
				close(msgs)
				return
			}
			if len(msg.GetJobs()) > 0 {
				msgs <- msg.GetJobs()
			}
		}
	}()
	var got []string
	for len(got) < len(ids) {
		jobs := recv(t, msgs) // a batch, cut to the credit its claim had
		require.NotEmpty(t, jobs[0].GetBatchId())
		for _, j := range jobs {
			got = append(got, j.GetId())
			e.complete(t, j)
		}
	}
	// Every job, each once; not necessarily in id order: the claims of credit freed one job at
	// a time are in flight together, and the later one may answer first (seen under CI load).
	require.ElementsMatch(t, ids, got)
	cancel()
}
