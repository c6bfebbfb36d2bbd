package server_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Contract 18 on the wire: a second replay of a dead letter is ALREADY_EXISTS naming the
// first unless again; a retry in place keeps the job and is audited with the caller's key;
// a retry of a job that is not failed is FAILED_PRECONDITION; set-retries refuses an ended
// job and a budget below the attempts made, naming the field. Each needs the admin scope.
func TestIncidentsOnTheWire(t *testing.T) {
	e := startDLQ(t, true)
	mk := func(name string, scopes ...apikey.Scope) context.Context {
		plain, k, err := apikey.New(name, scopes)
		require.NoError(t, err)
		require.NoError(t, e.store.KeyCreate(t.Context(), k))
		ctx, info := connect.NewClientContext(t.Context())
		info.RequestHeader().Set("Authorization", "Bearer "+plain)
		return ctx
	}
	admin := mk("ops-admin", apikey.ScopeAdmin)
	enqueuer := mk("app", apikey.ScopeEnqueue, apikey.ScopeRead)
	replayed, retried := e.deadLetter(t, admin, "billing"), e.deadLetter(t, admin, "billing")

	first, err := e.dlq.Replay(admin, &hopperv1.ReplayRequest{Id: replayed})
	require.NoError(t, err)
	_, err = e.dlq.Replay(admin, &hopperv1.ReplayRequest{Id: replayed})
	requireRPCCode(t, connect.CodeAlreadyExists, err)
	require.Contains(t, err.Error(), first.GetJob().GetId(), "the refusal names the earlier replay")
	require.Equal(t, 1, strings.Count(err.Error(), replayed), "and names the dead letter once: %v", err)
	_, err = e.jobs.Retry(admin, &hopperv1.JobServiceRetryRequest{Id: replayed})
	requireRPCCode(t, connect.CodeAlreadyExists, err)
	again, err := e.dlq.Replay(admin, &hopperv1.ReplayRequest{Id: replayed, Again: true, Reason: "agreed with finance"})
	require.NoError(t, err)
	require.NotEqual(t, first.GetJob().GetId(), again.GetJob().GetId())

	for _, call := range []func() error{
		func() error {
			_, err := e.jobs.Retry(enqueuer, &hopperv1.JobServiceRetryRequest{Id: retried})
			return err
		},
		func() error {
			_, err := e.jobs.SetRetries(enqueuer, &hopperv1.JobServiceSetRetriesRequest{Id: retried, MaxAttempts: 3})
			return err
		},
		func() error {
			_, err := e.dlq.RetryMany(enqueuer, &hopperv1.DeadLetterServiceRetryManyRequest{})
			return err
		},
	} {
		requireRPCCode(t, connect.CodePermissionDenied, call())
	}
	_, err = e.jobs.Retry(admin, &hopperv1.JobServiceRetryRequest{Id: retried, Args: `{"card":`})
	requireRPCCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "invalid args")
	_, err = e.jobs.Retry(admin, &hopperv1.JobServiceRetryRequest{Id: retried, Retries: -2})
	requireRPCCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "invalid retries")
	_, err = e.jobs.Retry(admin, &hopperv1.JobServiceRetryRequest{Id: retried, RunAt: &timestamppb.Timestamp{Seconds: 1 << 40}})
	requireRPCCode(t, connect.CodeInvalidArgument, err)
	res, err := e.jobs.Retry(admin, &hopperv1.JobServiceRetryRequest{Id: retried, Retries: 3, Args: `{"card":2}`,
		Reason: "card replaced"})
	require.NoError(t, err)
	require.Equal(t, retried, res.GetJob().GetId())
	require.Equal(t, "queued", res.GetJob().GetState())
	require.Equal(t, int32(4), res.GetJob().GetMaxAttempts(), "one attempt made, three more")
	require.JSONEq(t, `{"card":2}`, res.GetJob().GetArgs())
	require.Equal(t, "ops-admin", res.GetRetriedBy())
	_, err = e.jobs.Retry(admin, &hopperv1.JobServiceRetryRequest{Id: retried})
	requireRPCCode(t, connect.CodeFailedPrecondition, err)
	_, err = e.dlq.Replay(admin, &hopperv1.ReplayRequest{Id: retried})
	requireRPCCode(t, connect.CodeFailedPrecondition, err)

	set, err := e.jobs.SetRetries(admin, &hopperv1.JobServiceSetRetriesRequest{Id: retried, MaxAttempts: 2})
	require.NoError(t, err)
	require.Equal(t, int32(2), set.GetJob().GetMaxAttempts())
	_, err = e.jobs.SetRetries(admin, &hopperv1.JobServiceSetRetriesRequest{Id: retried, MaxAttempts: 1})
	requireRPCCode(t, connect.CodeInvalidArgument, err)
	require.Contains(t, err.Error(), "invalid max_attempts")
	_, err = e.jobs.SetRetries(admin, &hopperv1.JobServiceSetRetriesRequest{Id: replayed, MaxAttempts: 5})
	requireRPCCode(t, connect.CodeFailedPrecondition, err)

	log, err := e.dlq.ListReplays(admin, &hopperv1.ListReplaysRequest{})
	require.NoError(t, err)
	require.Len(t, log.GetReplays(), 3)
	require.Equal(t, "retry", log.GetReplays()[0].GetAction())
	require.Equal(t, "ops-admin", log.GetReplays()[0].GetReplayedBy())
	require.Equal(t, "replay", log.GetReplays()[1].GetAction())
	require.True(t, log.GetReplays()[1].GetForced(), "the forced replay is audited as forced")
	require.Equal(t, "agreed with finance", log.GetReplays()[1].GetReason())

	third := e.deadLetter(t, admin, "late")
	many, err := e.dlq.RetryMany(admin, &hopperv1.DeadLetterServiceRetryManyRequest{Retries: 2})
	require.NoError(t, err)
	require.Len(t, many.GetJobs(), 1)
	require.Equal(t, third, many.GetJobs()[0].GetId())
	require.Equal(t, int32(1), many.GetSkipped(), "the replayed dead letter is skipped")
	require.Equal(t, "ops-admin", many.GetRetriedBy())
}
