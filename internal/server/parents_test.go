package server_test

import (
	"testing"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// fanOut enqueues parents of kind "part" in queue "parts", one per result (a JSON value, or
// "" for a parent that fails), works them as a remote worker would, and enqueues a "sum" job
// in queue "sums" after them, naming them in reverse, that runs whatever they did. It returns
// the parents' ids in the order the child named them.
func fanOut(t *testing.T, e *env, results ...string) []string {
	t.Helper()
	ctx := t.Context()
	var ids []string
	for range results {
		res, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "part", Queue: "parts"}})
		require.NoError(t, err)
		ids = append(ids, res.GetJob().GetId())
	}
	jobs := e.activate(t, &hopperv1.ActivateRequest{Queue: "parts", MaxJobs: int32(len(results))})
	require.Len(t, jobs, len(results))
	for i, j := range jobs {
		require.Equal(t, ids[i], j.GetId())
		var err error
		if results[i] == "" {
			_, err = e.workers.Fail(ctx, &hopperv1.FailRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken(),
				Error: "part " + j.GetId() + " broke", NoRetry: true})
		} else {
			_, err = e.workers.Complete(ctx, &hopperv1.CompleteRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken(), Result: results[i]})
		}
		require.NoError(t, err)
	}
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
	_, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "sum", Queue: "sums",
		After: ids, OnParentFailure: "run"}})
	require.NoError(t, err)
	return ids
}

// wantParents checks a child's parents as the API carries them: in the order it named them
// (named), each completed one with its result, the one that failed with its error.
func wantParents(t *testing.T, named []string, results map[string]string, got []*hopperv1.ParentResult) {
	t.Helper()
	require.Len(t, got, len(named))
	for i, p := range got {
		require.Equal(t, named[i], p.GetId())
		require.Equal(t, "part", p.GetKind())
		require.False(t, p.GetExpired())
		require.NotNil(t, p.GetFinishedAt())
		if r := results[p.GetId()]; r != "" {
			require.Equal(t, "completed", p.GetOutcome())
			require.Equal(t, "completed", p.GetState())
			require.JSONEq(t, r, p.GetResult())
			require.Empty(t, p.GetError())
		} else {
			require.Equal(t, "failed", p.GetOutcome())
			require.Equal(t, "failed", p.GetState())
			require.Empty(t, p.GetResult())
			require.Equal(t, "part "+p.GetId()+" broke", p.GetError())
		}
	}
}

// A worker reads the parents of a job it holds with ParentResults, fenced by its lease token;
// or asks for them with the job (fetch_parent_results), on a poll and on a stream (contract
// 19, docs/workflows.md).
func TestParentResultsOverTheAPI(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		ctx := t.Context()
		named := fanOut(t, e, `1`, ``, `{"n":2}`)
		results := map[string]string{named[2]: `1`, named[0]: `{"n":2}`}
		_, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "sum", Queue: "sums",
			After: named, OnParentFailure: "run"}})
		require.NoError(t, err)
		_, err = e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "sum", Queue: "sums",
			After: named, OnParentFailure: "run"}})
		require.NoError(t, err)

		// Not asked for: none come with the job; the call reads them.
		plain := e.activate(t, &hopperv1.ActivateRequest{Queue: "sums"})[0]
		require.Empty(t, plain.GetParentResults())
		require.False(t, plain.GetParentResultsOmitted())
		res, err := e.workers.ParentResults(ctx, &hopperv1.ParentResultsRequest{Id: plain.GetId(), LeaseToken: plain.GetLeaseToken()})
		require.NoError(t, err)
		wantParents(t, named, results, res.GetParents())

		// Asked for on a poll, and on a stream: they come with the job, as the call reads them.
		polled := e.activate(t, &hopperv1.ActivateRequest{Queue: "sums", FetchParentResults: true})[0]
		require.False(t, polled.GetParentResultsOmitted())
		require.True(t, proto.Equal(res, &hopperv1.ParentResultsResponse{Parents: polled.GetParentResults()}))
		pushed := next(t, openStream(t, e, &hopperv1.StreamJobsRequest{Worker: "s", Queue: "sums", Credit: 1,
			FetchParentResults: true}))
		require.False(t, pushed.GetParentResultsOmitted())
		wantParents(t, named, results, pushed.GetParentResults())

		// A job without parents has none, asked for or not.
		e.enqueue(t, "alone", `{}`)
		alone := e.activate(t, &hopperv1.ActivateRequest{FetchParentResults: true})[0]
		require.Empty(t, alone.GetParentResults())
		require.False(t, alone.GetParentResultsOmitted())
		res, err = e.workers.ParentResults(ctx, &hopperv1.ParentResultsRequest{Id: alone.GetId(), LeaseToken: alone.GetLeaseToken()})
		require.NoError(t, err)
		require.Empty(t, res.GetParents())
	})
}

// ParentResults is fenced like every call about an attempt, and checks its input.
func TestParentResultsAreFenced(t *testing.T) {
	t.Parallel()
	e := start(t)
	ctx := t.Context()
	fanOut(t, e, `1`)
	child := e.activate(t, &hopperv1.ActivateRequest{Queue: "sums"})[0]
	for _, token := range []int64{child.GetLeaseToken() + 1, 0} {
		_, err := e.workers.ParentResults(ctx, &hopperv1.ParentResultsRequest{Id: child.GetId(), LeaseToken: token})
		requireCode(t, connect.CodeFailedPrecondition, err)
	}
	_, err := e.workers.ParentResults(ctx, &hopperv1.ParentResultsRequest{Id: "0190f0e4-0000-7000-8000-000000000000", LeaseToken: 1})
	requireCode(t, connect.CodeNotFound, err)
	_, err = e.workers.ParentResults(ctx, &hopperv1.ParentResultsRequest{Id: "", LeaseToken: 1})
	requireCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "id")
	e.complete(t, child)
	_, err = e.workers.ParentResults(ctx, &hopperv1.ParentResultsRequest{Id: child.GetId(), LeaseToken: child.GetLeaseToken()})
	requireCode(t, connect.CodeFailedPrecondition, err)
}

// Parents' results larger together than the server's MaxArgsBytes are left out of the job,
// which says so; the call reads them whole.
func TestParentResultsOverTheLimitAreLeftOut(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, func(c *hopper.Config) { c.MaxArgsBytes = 64 }, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	ctx := t.Context()
	big := `"0123456789012345678901234567890123456789"` // 42 bytes: two are over 64
	named := fanOut(t, e, big, big)
	job := e.activate(t, &hopperv1.ActivateRequest{Queue: "sums", FetchParentResults: true})[0]
	require.True(t, job.GetParentResultsOmitted())
	require.Empty(t, job.GetParentResults())
	res, err := e.workers.ParentResults(ctx, &hopperv1.ParentResultsRequest{Id: job.GetId(), LeaseToken: job.GetLeaseToken()})
	require.NoError(t, err)
	wantParents(t, named, map[string]string{named[0]: big, named[1]: big}, res.GetParents())
}
