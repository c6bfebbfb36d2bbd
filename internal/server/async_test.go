package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// httpDo sends a plain HTTP request and returns the status, headers and body.
func httpDo(t *testing.T, hc *http.Client, method, url, body string, header http.Header) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, rd)
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := hc.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(data)
}

func requireJSONCode(t *testing.T, body, code string) {
	t.Helper()
	var e struct{ Code, Message string }
	require.NoError(t, json.Unmarshal([]byte(body), &e), "body: %s", body)
	require.Equal(t, code, e.Code, "body: %s", body)
}

// asyncAnswer is the body of a 202 and of a status answer.
type asyncAnswer struct {
	Job struct {
		ID     string          `json:"id"`
		State  string          `json:"state"`
		Result json.RawMessage `json:"result"`
	} `json:"job"`
	StatusURL string `json:"statusUrl"`
	Merged    bool   `json:"merged"`
}

// requireAsyncJobIsTheAPIJob requires the job of an async endpoint's answer to have the shape
// of the Connect API's job: each of its fields is in JobService.Get's answer, with the same
// value (the status shows fewer fields, never others nor other names or types).
func requireAsyncJobIsTheAPIJob(t *testing.T, e *env, answer string) {
	t.Helper()
	var async struct{ Job map[string]json.RawMessage }
	require.NoError(t, json.Unmarshal([]byte(answer), &async), answer)
	var id string
	require.NoError(t, json.Unmarshal(async.Job["id"], &id))
	api := jobOf(t, rpcJSON(t, e.url, "JobService/Get", `{"id":"`+id+`"}`))
	require.NotEmpty(t, async.Job)
	for k, v := range async.Job {
		require.Contains(t, api, k, "the async job's field %s is the API's", k)
		require.Equal(t, string(api[k]), string(v), "field %s", k)
	}
}

func TestAsyncEndpointsEndToEnd(t *testing.T) {
	e := start(t)
	status, h, body := httpDo(t, e.http, http.MethodPost, e.url+"/v1/async/send-email?lang=en", `{"to":"ada@example.com"}`,
		http.Header{"X-Request-Id": {"req-7"}, "Idempotency-Key": {"order-7"}})
	require.Equal(t, http.StatusAccepted, status, body)
	var acc asyncAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &acc))
	require.Equal(t, "/v1/jobs/"+acc.Job.ID, h.Get("Location"))
	require.Equal(t, "/v1/jobs/"+acc.Job.ID, acc.StatusURL)
	require.Equal(t, "queued", acc.Job.State)

	status, h, body = httpDo(t, e.http, http.MethodPost, e.url+"/v1/async/send-email?lang=en", `{"to":"ada@example.com"}`,
		http.Header{"Idempotency-Key": {"order-7"}})
	require.Equal(t, http.StatusAccepted, status, body)
	require.Equal(t, "/v1/jobs/"+acc.Job.ID, h.Get("Location"), "the same key and body: the same job")
	status, _, body = httpDo(t, e.http, http.MethodPost, e.url+"/v1/async/send-email", `{"to":"bob@example.com"}`,
		http.Header{"Idempotency-Key": {"order-7"}})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	requireJSONCode(t, body, "already_exists")

	// The Connect API sees the same job.
	require.Equal(t, "send-email", e.get(t, acc.Job.ID).GetKind())

	waited := make(chan string, 1)
	go func() {
		resp, err := e.http.Get(e.url + "/v1/jobs/" + acc.Job.ID + "?wait=30s")
		if err != nil {
			waited <- err.Error()
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		waited <- string(b)
	}()

	jobs := e.activate(t, &hopperv1.ActivateRequest{Kinds: []string{"send-email"}})
	require.Len(t, jobs, 1)
	j := jobs[0]
	require.JSONEq(t, `{"to":"ada@example.com"}`, j.GetArgs())
	require.Equal(t, "send-email", j.GetHeaders()["http.path.kind"])
	require.Equal(t, "en", j.GetHeaders()["http.query.lang"])
	require.Equal(t, "req-7", j.GetHeaders()["http.header.x-request-id"])
	require.Equal(t, "/v1/async/send-email", j.GetHeaders()["http.path"])
	_, err := e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken(), Result: `{"message_id":"m-1"}`})
	require.NoError(t, err)

	var got asyncAnswer
	select {
	case body = <-waited:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting status request did not answer when the job completed")
	}
	require.NoError(t, json.Unmarshal([]byte(body), &got), body)
	require.Equal(t, "completed", got.Job.State)
	require.JSONEq(t, `{"message_id":"m-1"}`, string(got.Job.Result))
	requireAsyncJobIsTheAPIJob(t, e, body)

	status, _, body = httpDo(t, e.http, http.MethodGet, e.url+"/v1/jobs/no-such-job", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	requireJSONCode(t, body, "not_found")
	status, _, body = httpDo(t, e.http, http.MethodGet, e.url+"/v1/jobs/"+acc.Job.ID+"?wait=2h", "", nil)
	require.Equal(t, http.StatusBadRequest, status)
	requireJSONCode(t, body, "invalid_argument")
	status, _, body = httpDo(t, e.http, http.MethodPost, e.url+"/v1/async/send-email", `{"to":`, nil)
	require.Equal(t, http.StatusBadRequest, status)
	requireJSONCode(t, body, "invalid_argument")
	status, h, _ = httpDo(t, e.http, http.MethodGet, e.url+"/v1/async/send-email", "", nil)
	require.Equal(t, http.StatusMethodNotAllowed, status)
	require.Equal(t, "POST", h.Get("Allow"))
}

func TestAsyncEndpointsNeedKeysWithScopes(t *testing.T) {
	e := start(t)
	keys := e.store
	srv, err := server.New(server.Config{Client: e.hopper, Auth: &server.KeyAuth{Keys: keys}})
	require.NoError(t, err)
	srv.SetReady(true)
	ts := httptest.NewServer(srv)
	defer ts.Close()

	mk := func(name string, scopes ...apikey.Scope) string {
		plain, k, err := apikey.New(name, scopes)
		require.NoError(t, err)
		require.NoError(t, keys.KeyCreate(t.Context(), k))
		return plain
	}
	reader := mk("reader", apikey.ScopeRead)
	producer := mk("producer", apikey.ScopeEnqueue)
	revoked := mk("old", apikey.ScopeAdmin)
	_, err = keys.KeyRevoke(t.Context(), "old")
	require.NoError(t, err)

	post := func(header http.Header) (int, string) {
		status, _, body := httpDo(t, ts.Client(), http.MethodPost, ts.URL+"/v1/async/report", `{}`, header)
		return status, body
	}
	status, body := post(nil)
	require.Equal(t, http.StatusUnauthorized, status)
	requireJSONCode(t, body, "unauthenticated")
	status, _ = post(http.Header{"Authorization": {"Bearer hop_garbage"}})
	require.Equal(t, http.StatusUnauthorized, status)
	status, _ = post(http.Header{"X-Api-Key": {revoked}})
	require.Equal(t, http.StatusUnauthorized, status)
	status, body = post(http.Header{"Authorization": {"Bearer " + reader}})
	require.Equal(t, http.StatusForbidden, status)
	requireJSONCode(t, body, "permission_denied")
	status, body = post(http.Header{"X-Api-Key": {producer}})
	require.Equal(t, http.StatusAccepted, status, body)
	var acc asyncAnswer
	require.NoError(t, json.Unmarshal([]byte(body), &acc))

	job, err := e.hopper.Get(t.Context(), acc.Job.ID)
	require.NoError(t, err)
	for k, v := range job.Headers {
		require.NotContains(t, v, producer, "the API key is not recorded (header %s)", k)
	}

	get := func(key string) int {
		status, _, _ := httpDo(t, ts.Client(), http.MethodGet, ts.URL+"/v1/jobs/"+acc.Job.ID, "", http.Header{"Authorization": {"Bearer " + key}})
		return status
	}
	require.Equal(t, http.StatusOK, get(reader))
	require.Equal(t, http.StatusForbidden, get(producer))
	require.Equal(t, http.StatusUnauthorized, get(revoked))
}

func TestAsyncBodyOverTheServerLimitIs413(t *testing.T) {
	e := start(t, func(c *server.Config) { c.MaxBodyBytes = 1024 })
	big := `{"note":"` + strings.Repeat("x", 2000) + `"}`
	status, _, body := httpDo(t, e.http, http.MethodPost, e.url+"/v1/async/report", big, nil)
	require.Equal(t, http.StatusRequestEntityTooLarge, status)
	requireJSONCode(t, body, "resource_exhausted")

	// Without a Content-Length the limit applies while reading.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, e.url+"/v1/async/report",
		struct{ io.Reader }{strings.NewReader(big)})
	require.NoError(t, err)
	resp, err := e.http.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	list, err := e.jobs.List(t.Context(), &hopperv1.ListRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetJobs(), "nothing stored")
}

func TestAsyncWaitsCountAsLongPolls(t *testing.T) {
	e := start(t, func(c *server.Config) { c.MaxPollsPerKey = 1 })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	waiting := make(chan error, 1)
	go func() {
		_, err := e.workers.Activate(ctx, &hopperv1.ActivateRequest{Worker: "a", Kinds: []string{"other"}, RequestTimeout: durationpb.New(time.Minute)})
		waiting <- err
	}()
	require.Eventually(t, func() bool { return waitingPolls(t, e) == 1 }, 5*time.Second, time.Millisecond)

	job := e.enqueue(t, "report", `{}`)
	status, h, body := httpDo(t, e.http, http.MethodGet, e.url+"/v1/jobs/"+job.GetId()+"?wait=1s", "", nil)
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, "1", h.Get("Retry-After"))
	requireJSONCode(t, body, "resource_exhausted")
	status, _, _ = httpDo(t, e.http, http.MethodGet, e.url+"/v1/jobs/"+job.GetId(), "", nil)
	require.Equal(t, http.StatusOK, status, "a status request that does not wait is not limited")
	cancel()
	<-waiting
}
