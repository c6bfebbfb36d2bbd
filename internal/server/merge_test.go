package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
)

// JobSpec.merge_key and merge reach the client: an enqueue merges into the waiting job of its
// kind, the answer says merged and shows that job with its merge key; bad values are
// INVALID_ARGUMENT naming the field, in a batch the entry's field.
func TestEnqueueMergeKey(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		ctx := t.Context()
		spec := func(args string) *hopperv1.JobSpec {
			return &hopperv1.JobSpec{Kind: "digest", Args: args, MergeKey: "user-7", Merge: "append"}
		}
		first, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: spec(`{"n":1}`)})
		require.NoError(t, err)
		require.False(t, first.GetMerged())
		require.Equal(t, "user-7", first.GetJob().GetMergeKey())

		again, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: spec(`{"n":2}`)})
		require.NoError(t, err)
		require.True(t, again.GetMerged())
		require.False(t, again.GetExisting())
		require.Equal(t, first.GetJob().GetId(), again.GetJob().GetId())

		batch, err := e.jobs.EnqueueBatch(ctx, &hopperv1.EnqueueBatchRequest{Jobs: []*hopperv1.JobSpec{
			spec(`{"n":3}`), {Kind: "other"}, spec(`{"n":4}`),
		}})
		require.NoError(t, err)
		require.True(t, batch.GetResults()[0].GetMerged())
		require.False(t, batch.GetResults()[1].GetMerged())
		require.True(t, batch.GetResults()[2].GetMerged())
		require.JSONEq(t, `[{"n":1},{"n":2},{"n":3},{"n":4}]`, e.get(t, first.GetJob().GetId()).GetArgs())

		for field, bad := range map[string]*hopperv1.JobSpec{
			"invalid merge:":     {Kind: "digest", MergeKey: "k", Merge: "squash"},
			"invalid merge_key:": {Kind: "digest", MergeKey: "a\x00b"},
		} {
			_, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: bad})
			requireCode(t, connect.CodeInvalidArgument, err)
			require.Contains(t, err.Error(), field)
		}
		_, err = e.jobs.EnqueueBatch(ctx, &hopperv1.EnqueueBatchRequest{Jobs: []*hopperv1.JobSpec{
			{Kind: "other"}, {Kind: "digest", Merge: "replace"},
		}})
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "invalid jobs[1].merge:")
		_, err = e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "digest", MergeKey: "user-7", Merge: "replace"}})
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "invalid merge:", "replace into a list")

		list, err := e.jobs.List(ctx, &hopperv1.ListRequest{})
		require.NoError(t, err)
		require.Len(t, list.GetJobs(), 2, "the digest and the other job")
	})
}

// The async endpoint takes Merge-Key and Merge headers and answers merged with the job's id.
func TestAsyncEnqueueMergeKey(t *testing.T) {
	t.Parallel()
	onEachStore(t, func(t *testing.T, e *env, _ *backend) {
		post := func(body string, header http.Header) (int, http.Header, asyncMerged) {
			status, h, answer := httpDo(t, e.http, http.MethodPost, e.url+"/v1/async/digest", body, header)
			var a asyncMerged
			if status == http.StatusAccepted {
				require.NoError(t, json.Unmarshal([]byte(answer), &a), answer)
			}
			return status, h, a
		}
		merge := http.Header{"Merge-Key": {"user-7"}, "Merge": {"replace"}}
		status, _, first := post(`{"n":1}`, merge)
		require.Equal(t, http.StatusAccepted, status)
		require.False(t, first.Merged)
		status, h, again := post(`{"n":2}`, merge)
		require.Equal(t, http.StatusAccepted, status)
		require.True(t, again.Merged)
		require.Equal(t, first.Job.ID, again.Job.ID)
		require.Equal(t, "/v1/jobs/"+first.Job.ID, h.Get("Location"))
		require.JSONEq(t, `{"n":2}`, e.get(t, first.Job.ID).GetArgs())

		status, _, _ = post(`{"n":3}`, http.Header{"Merge": {"append"}})
		require.Equal(t, http.StatusBadRequest, status, "a policy without a key")
	})
}

type asyncMerged struct {
	Job struct {
		ID string `json:"id"`
	} `json:"job"`
	Merged bool `json:"merged"`
}
