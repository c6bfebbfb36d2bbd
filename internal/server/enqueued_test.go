package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/remote"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// A key without the read scope learns from Enqueue and EnqueueBatch only what identifies the
// job, also when an idempotency key returns a job that a key with read enqueued earlier and
// that has completed: not its args, headers or result.
func TestEnqueueAnswersAKeyWithoutReadOnlyTheJobsIdentity(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, nil, func(c *server.Config, st *sqlitestore.Store) { c.Auth = &server.KeyAuth{Keys: st} })
	as := func(scopes ...apikey.Scope) *connect.Client {
		plain, k, err := apikey.New("key-"+string(scopes[len(scopes)-1]), scopes)
		require.NoError(t, err)
		require.NoError(t, s.store.KeyCreate(t.Context(), k))
		return connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL), remote.Bearer(plain))
	}
	owner := as(apikey.ScopeEnqueue, apikey.ScopeWork, apikey.ScopeRead)
	ownerJobs, producer := hopperv1connect.NewJobServiceClient(owner), hopperv1connect.NewJobServiceClient(as(apikey.ScopeEnqueue))
	spec := &hopperv1.JobSpec{Kind: "charge", Args: `{"card":"4242"}`, Headers: map[string]string{"tenant": "acme"},
		IdempotencyKey: "order-1"}

	first, err := ownerJobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: spec})
	require.NoError(t, err)
	require.JSONEq(t, spec.Args, first.GetJob().GetArgs(), "a key with read sees the whole job")
	workers := hopperv1connect.NewWorkerServiceClient(owner)
	act, err := workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "w1", Kinds: []string{"charge"}})
	require.NoError(t, err)
	require.Len(t, act.GetJobs(), 1)
	_, err = workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: first.GetJob().GetId(),
		LeaseToken: act.GetJobs()[0].GetLeaseToken(), Result: `{"receipt":"r-1"}`})
	require.NoError(t, err)
	done, err := ownerJobs.Get(t.Context(), &hopperv1.GetRequest{Id: first.GetJob().GetId()})
	require.NoError(t, err)
	full := done.GetJob()
	require.Equal(t, `{"receipt":"r-1"}`, full.GetResult())
	identity := &hopperv1.Job{Id: full.GetId(), Kind: full.GetKind(), Queue: full.GetQueue(), State: full.GetState(),
		RunAt: full.GetRunAt(), CreatedAt: full.GetCreatedAt()}

	again, err := producer.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: spec})
	require.NoError(t, err)
	require.True(t, again.GetExisting())
	requireIdentityOnly(t, identity, again.GetJob())

	batch, err := producer.EnqueueBatch(t.Context(), &hopperv1.EnqueueBatchRequest{Jobs: []*hopperv1.JobSpec{
		spec, {Kind: "charge", Args: `{"card":"5555"}`, Headers: map[string]string{"tenant": "globex"}}}})
	require.NoError(t, err)
	require.True(t, batch.GetResults()[0].GetExisting())
	requireIdentityOnly(t, identity, batch.GetResults()[0].GetJob())
	fresh := batch.GetResults()[1].GetJob()
	requireIdentityOnly(t, &hopperv1.Job{Id: fresh.GetId(), Kind: "charge", Queue: fresh.GetQueue(), State: "queued",
		RunAt: fresh.GetRunAt(), CreatedAt: fresh.GetCreatedAt()}, fresh)
}

func requireIdentityOnly(t *testing.T, want, got *hopperv1.Job) {
	t.Helper()
	require.Empty(t, got.GetArgs(), "args")
	require.Empty(t, got.GetHeaders(), "headers")
	require.Empty(t, got.GetResult(), "result")
	require.True(t, proto.Equal(want, got), "only what identifies the job:\nwant %v\ngot  %v", want, got)
}

// The async endpoints answer an enqueue-only key likewise: an Idempotency-Key that returns a
// job another key enqueued, completed since, shows its identity and state, not its result.
func TestAsyncEnqueueAnswersAKeyWithoutReadOnlyTheJobsIdentity(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, nil, func(c *server.Config, st *sqlitestore.Store) { c.Auth = &server.KeyAuth{Keys: st} })
	key := func(scopes ...apikey.Scope) string {
		plain, k, err := apikey.New("key-"+string(scopes[len(scopes)-1]), scopes)
		require.NoError(t, err)
		require.NoError(t, s.store.KeyCreate(t.Context(), k))
		return plain
	}
	owner, producer := key(apikey.ScopeEnqueue, apikey.ScopeWork, apikey.ScopeRead), key(apikey.ScopeEnqueue)
	post := func(key string) map[string]any {
		req, err := http.NewRequest(http.MethodPost, s.ts.URL+"/v1/async/charge", strings.NewReader(`{"card":"4242"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Idempotency-Key", "order-1")
		resp, err := s.ts.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		var body struct{ Job map[string]any }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		return body.Job
	}
	job := post(owner)
	workers := hopperv1connect.NewWorkerServiceClient(connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL),
		remote.Bearer(owner)))
	act, err := workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "w1", Kinds: []string{"charge"}})
	require.NoError(t, err)
	require.Len(t, act.GetJobs(), 1)
	_, err = workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: job["id"].(string),
		LeaseToken: act.GetJobs()[0].GetLeaseToken(), Result: `{"receipt":"r-1"}`})
	require.NoError(t, err)

	require.Equal(t, map[string]any{"receipt": "r-1"}, post(owner)["result"], "a key with read sees the result")
	again := post(producer)
	require.Equal(t, job["id"], again["id"])
	require.Equal(t, "completed", again["state"])
	require.NotContains(t, again, "result")
}
