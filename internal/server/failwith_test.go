package server_test

import (
	"strings"
	"testing"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/stretchr/testify/require"
)

// Fail over the wire: a bad error code or checkpoint is INVALID_ARGUMENT naming its field; a
// checkpoint reaches the next attempt; a business error fails the job whatever retries the
// request allows, and the job, its attempt, the list and the dead letters show the code.
func TestFailWithCheckpointAndErrorCode(t *testing.T) {
	e := start(t, func(c *server.Config) { c.MaxBodyBytes = 4 * hopper.MaxArgsBytes })
	ctx := t.Context()
	e.enqueue(t, "demo", `{}`)
	e.enqueue(t, "demo", `{}`)
	jobs := e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 2})
	require.Len(t, jobs, 2)
	declined, partial := jobs[0], jobs[1]
	fail := func(j *hopperv1.ActivatedJob, req *hopperv1.FailRequest) (*hopperv1.FailResponse, error) {
		req.Id, req.LeaseToken = j.GetId(), j.GetLeaseToken()
		return e.workers.Fail(ctx, req)
	}
	for _, tc := range []struct {
		req   *hopperv1.FailRequest
		field string
	}{
		{&hopperv1.FailRequest{Error: "x", ErrorCode: "card declined"}, "error_code"},
		{&hopperv1.FailRequest{Error: "x", ErrorCode: strings.Repeat("c", hopper.MaxErrorCodeLen+1)}, "error_code"},
		{&hopperv1.FailRequest{Error: "x", Checkpoint: "{not json"}, "checkpoint"},
		{&hopperv1.FailRequest{Error: "x", Checkpoint: `"` + strings.Repeat("a", hopper.MaxArgsBytes) + `"`}, "checkpoint"},
	} {
		_, err := fail(declined, tc.req)
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), tc.field)
	}

	retries := int32(5)
	res, err := fail(declined, &hopperv1.FailRequest{Error: "card_declined: no funds", ErrorCode: "card_declined",
		Retries: &retries, Checkpoint: `{"charged":false}`})
	require.NoError(t, err)
	require.Equal(t, "failed", res.GetState(), "a business error is not retried")
	got := e.get(t, declined.GetId())
	require.Equal(t, "card_declined", got.GetLastErrorCode())
	require.JSONEq(t, `{"charged":false}`, got.GetCheckpoint(), "the failed job keeps its checkpoint")
	ev, err := e.jobs.Events(ctx, &hopperv1.EventsRequest{Id: declined.GetId()})
	require.NoError(t, err)
	require.Equal(t, "card_declined", ev.GetAttempts()[0].GetErrorCode())

	_, err = fail(partial, &hopperv1.FailRequest{Error: "part 4 failed", Checkpoint: `{"done":3}`})
	require.NoError(t, err)
	require.JSONEq(t, `{"done":3}`, e.get(t, partial.GetId()).GetCheckpoint())

	list, err := e.jobs.List(ctx, &hopperv1.ListRequest{ErrorCodes: []string{"card_declined"}})
	require.NoError(t, err)
	require.Len(t, list.GetJobs(), 1)
	require.Equal(t, declined.GetId(), list.GetJobs()[0].GetId())
	_, err = e.jobs.List(ctx, &hopperv1.ListRequest{ErrorCodes: []string{"bad code"}})
	requireCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "error_codes")

	dlq := hopperv1connect.NewDeadLetterServiceClient(connect.NewClient(connecthttp.NewTransport(e.http, e.url)))
	dead, err := dlq.List(ctx, &hopperv1.DeadLetterServiceListRequest{ErrorCodes: []string{"card_declined"}})
	require.NoError(t, err)
	require.Len(t, dead.GetJobs(), 1)
	dead, err = dlq.List(ctx, &hopperv1.DeadLetterServiceListRequest{ErrorCodes: []string{"other"}})
	require.NoError(t, err)
	require.Empty(t, dead.GetJobs())
}
