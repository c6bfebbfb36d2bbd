package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// dlqEnv is a real server on a loopback port over a fresh SQLite store, with API keys when
// auth is set.
type dlqEnv struct {
	url     string
	store   *sqlitestore.Store
	jobs    hopperv1connect.JobServiceClient
	workers hopperv1connect.WorkerServiceClient
	dlq     hopperv1connect.DeadLetterServiceClient
}

func startDLQ(t *testing.T, auth bool) *dlqEnv {
	t.Helper()
	s := serve(t, nil, func(c *hopper.Config) { c.WorkerID = "dlq-test" }, func(c *server.Config, st *sqlitestore.Store) {
		c.Keys = st
		if auth {
			c.Auth = &server.KeyAuth{Keys: st}
		}
	})
	cc := connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL))
	return &dlqEnv{url: s.ts.URL, store: s.store, jobs: hopperv1connect.NewJobServiceClient(cc),
		workers: hopperv1connect.NewWorkerServiceClient(cc), dlq: hopperv1connect.NewDeadLetterServiceClient(cc)}
}

// deadLetter enqueues a job through the API and fails it for good as a remote worker would.
func (e *dlqEnv) deadLetter(t *testing.T, ctx context.Context, queue string) string {
	t.Helper()
	res, err := e.jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "charge", Queue: queue,
		Args: `{"card":1}`, Priority: 4}})
	require.NoError(t, err)
	got, err := e.workers.Activate(ctx, &hopperv1.ActivateRequest{Worker: "w", Queue: queue})
	require.NoError(t, err)
	require.Len(t, got.GetJobs(), 1)
	zero := int32(0)
	fail, err := e.workers.Fail(ctx, &hopperv1.FailRequest{Id: res.GetJob().GetId(),
		LeaseToken: got.GetJobs()[0].GetLeaseToken(), Error: "card declined", Retries: &zero})
	require.NoError(t, err)
	require.Equal(t, "failed", fail.GetState())
	return res.GetJob().GetId()
}

func requireRPCCode(t *testing.T, want connect.Code, err error) {
	t.Helper()
	require.Error(t, err)
	require.Equal(t, want, connect.CodeOf(err), "error: %v", err)
}

func replayedJobs(jobs []*hopperv1.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.GetOriginalId()
	}
	return out
}

func TestDeadLetterServiceEndToEnd(t *testing.T) {
	e := startDLQ(t, false)
	ctx := t.Context()
	a1, a2 := e.deadLetter(t, ctx, "billing"), e.deadLetter(t, ctx, "billing")
	other := e.deadLetter(t, ctx, "mail")

	list, err := e.dlq.List(ctx, &hopperv1.DeadLetterServiceListRequest{
		Filter: &hopperv1.DeadLetterFilter{Queues: []string{"billing"}}, Limit: 1})
	require.NoError(t, err)
	require.Len(t, list.GetJobs(), 1)
	require.Equal(t, a2, list.GetJobs()[0].GetId(), "newest first")
	require.Equal(t, "failed", list.GetJobs()[0].GetState())
	require.NotNil(t, list.GetJobs()[0].GetExpiresAt(), "dead letters expire")
	next, err := e.dlq.List(ctx, &hopperv1.DeadLetterServiceListRequest{
		Filter: &hopperv1.DeadLetterFilter{Queues: []string{"billing"}}, Cursor: list.GetNextCursor()})
	require.NoError(t, err)
	require.Len(t, next.GetJobs(), 1)
	require.Equal(t, a1, next.GetJobs()[0].GetId())
	require.Empty(t, next.GetNextCursor())

	stats, err := e.dlq.Stats(ctx, &hopperv1.DeadLetterServiceStatsRequest{})
	require.NoError(t, err)
	require.Equal(t, int64(3), stats.GetCount())
	require.NotNil(t, stats.GetOldestFailedAt())
	require.NotNil(t, stats.GetOldestAge())

	replayed, err := e.dlq.Replay(ctx, &hopperv1.ReplayRequest{Id: a1})
	require.NoError(t, err)
	job := replayed.GetJob()
	require.Equal(t, "queued", job.GetState())
	require.Equal(t, a1, job.GetOriginalId())
	require.Equal(t, int32(1), job.GetReplayCount())
	require.Equal(t, int32(4), job.GetPriority())
	require.JSONEq(t, `{"card":1}`, job.GetArgs())
	require.Equal(t, "api", replayed.GetReplayedBy(), "no keys: the API")
	src, err := e.jobs.Get(ctx, &hopperv1.GetRequest{Id: a1})
	require.NoError(t, err)
	require.Equal(t, "failed", src.GetJob().GetState(), "the dead letter stays")

	_, err = e.dlq.Replay(ctx, &hopperv1.ReplayRequest{Id: job.GetId()})
	requireRPCCode(t, connect.CodeFailedPrecondition, err)
	_, err = e.dlq.Replay(ctx, &hopperv1.ReplayRequest{Id: "01a2ffff-0000-7000-8000-000000000000"})
	requireRPCCode(t, connect.CodeNotFound, err)
	_, err = e.dlq.ReplayMany(ctx, &hopperv1.ReplayManyRequest{Limit: 5000})
	requireRPCCode(t, connect.CodeInvalidArgument, err)

	many, err := e.dlq.ReplayMany(ctx, &hopperv1.ReplayManyRequest{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []string{a2}, replayedJobs(many.GetJobs()), "oldest never replayed first")
	many, err = e.dlq.ReplayMany(ctx, &hopperv1.ReplayManyRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{other}, replayedJobs(many.GetJobs()))
	many, err = e.dlq.ReplayMany(ctx, &hopperv1.ReplayManyRequest{})
	require.NoError(t, err)
	require.Empty(t, many.GetJobs(), "nothing is replayed twice")

	audit, err := e.dlq.ListReplays(ctx, &hopperv1.ListReplaysRequest{Limit: 2})
	require.NoError(t, err)
	require.Len(t, audit.GetReplays(), 2)
	require.Equal(t, other, audit.GetReplays()[0].GetSourceJobId(), "newest first")
	require.NotEmpty(t, audit.GetNextCursor())
	rest, err := e.dlq.ListReplays(ctx, &hopperv1.ListReplaysRequest{Cursor: audit.GetNextCursor()})
	require.NoError(t, err)
	require.Len(t, rest.GetReplays(), 1)
	first := rest.GetReplays()[0]
	require.Equal(t, a1, first.GetSourceJobId())
	require.Equal(t, job.GetId(), first.GetNewJobId())
	require.Equal(t, a1, first.GetOriginalId())
	require.Equal(t, "api", first.GetReplayedBy())
	require.NotNil(t, first.GetReplayedAt())

	// Plain JSON over HTTP works too.
	resp, err := http.Post(e.url+"/hopper.v1.DeadLetterService/Stats", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body struct {
		Count string `json:"count"` // int64 is a string in protobuf's JSON
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Empty(t, body.Count, "every dead letter was replayed: none counts (zero is left out of JSON)")
}

// Reading dead letters needs the read scope, replaying the admin scope; a replay is
// recorded as done by the caller's API key.
func TestDeadLetterServiceScopesAndReplayedBy(t *testing.T) {
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
	reader := mk("dashboard", apikey.ScopeRead)
	id := e.deadLetter(t, admin, "default")

	_, err := e.dlq.Stats(t.Context(), &hopperv1.DeadLetterServiceStatsRequest{})
	requireRPCCode(t, connect.CodeUnauthenticated, err)
	_, err = e.dlq.Stats(reader, &hopperv1.DeadLetterServiceStatsRequest{})
	require.NoError(t, err)
	_, err = e.dlq.List(reader, &hopperv1.DeadLetterServiceListRequest{})
	require.NoError(t, err)
	_, err = e.dlq.ListReplays(reader, &hopperv1.ListReplaysRequest{})
	require.NoError(t, err)
	_, err = e.dlq.Replay(reader, &hopperv1.ReplayRequest{Id: id})
	requireRPCCode(t, connect.CodePermissionDenied, err)
	_, err = e.dlq.ReplayMany(reader, &hopperv1.ReplayManyRequest{})
	requireRPCCode(t, connect.CodePermissionDenied, err)

	res, err := e.dlq.Replay(admin, &hopperv1.ReplayRequest{Id: id})
	require.NoError(t, err)
	require.Equal(t, "ops-admin", res.GetReplayedBy())
	audit, err := e.dlq.ListReplays(reader, &hopperv1.ListReplaysRequest{ReplayedBy: "ops-admin"})
	require.NoError(t, err)
	require.Len(t, audit.GetReplays(), 1)
	require.Equal(t, id, audit.GetReplays()[0].GetSourceJobId())
}
