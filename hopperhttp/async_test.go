package hopperhttp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperhttp"
	"github.com/stretchr/testify/require"
)

func TestAsyncRecordsTheRequestInTheJob(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	r, a := b.post(t, "/v1/async/send-email/acme?lang=en&tag=a&tag=b", `{"to": "ada@example.com"}`, http.Header{
		"Content-Type":        {"application/json"},
		"X-Request-Id":        {"req-1"},
		"X-Forwarded-For":     {"10.0.0.1", "10.0.0.2"},
		"Authorization":       {"Bearer secret-1"},
		"Cookie":              {"session=secret-2"},
		"Proxy-Authorization": {"Basic secret-3"},
		"X-Api-Key":           {"secret-4"},
	})
	require.Equal(t, "/v1/jobs/"+a.Job.ID, r.header.Get("Location"))
	require.Equal(t, "/v1/jobs/"+a.Job.ID, a.StatusURL)
	require.Equal(t, "queued", a.Job.State)
	require.Empty(t, r.header.Get("Idempotent-Replayed"))
	require.False(t, a.Existing)
	require.NotContains(t, r.body, "args", "the status never shows the args")

	job, err := b.client.Get(t.Context(), a.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "send-email", job.Kind)
	require.JSONEq(t, `{"to": "ada@example.com"}`, string(job.Args))
	h := job.Headers
	require.Equal(t, "POST", h["http.method"])
	require.Equal(t, "/v1/async/send-email/acme", h["http.path"])
	require.Equal(t, "acme", h["http.path.tenant"])
	require.Equal(t, "en", h["http.query.lang"])
	require.Equal(t, "a, b", h["http.query.tag"])
	require.Equal(t, "req-1", h["http.header.x-request-id"])
	require.Equal(t, "10.0.0.1, 10.0.0.2", h["http.header.x-forwarded-for"])
	require.Equal(t, "application/json", h["http.header.content-type"])
	require.Equal(t, strings.TrimPrefix(b.url, "http://"), h["http.header.host"])
	for k, v := range h {
		require.NotContains(t, v, "secret", "header %s", k)
	}
	for _, k := range []string{"authorization", "cookie", "proxy-authorization", "x-api-key"} {
		require.NotContains(t, h, "http.header."+k)
	}
}

func TestAsyncRecordsEveryKindOfWildcard(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	mux := http.NewServeMux()
	mux.Handle("POST /files/{bucket}/{path...}", hopperhttp.AsyncHandler(b.client, "upload"))
	mux.Handle("POST /exact/{name}/{$}", hopperhttp.AsyncHandler(b.client, "upload"))
	ts := httptest.NewServer(mux)
	defer ts.Close()
	post := func(path string) map[string]string {
		resp, err := ts.Client().Post(ts.URL+path, "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		var a answer
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
		job, err := b.client.Get(t.Context(), a.Job.ID)
		require.NoError(t, err)
		return job.Headers
	}
	h := post("/files/photos/2024/07/cat.jpg")
	require.Equal(t, "photos", h["http.path.bucket"])
	require.Equal(t, "2024/07/cat.jpg", h["http.path.path"])
	h = post("/exact/x/")
	require.Equal(t, "x", h["http.path.name"])
	require.NotContains(t, h, "http.path.$")
}

func TestAsyncOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{options: []hopperhttp.Option{
		hopperhttp.WithQueue("emails"), hopperhttp.WithPriority(7), hopperhttp.WithMaxAttempts(3),
		hopperhttp.WithStatusPrefix("https://api.example.com/v1/jobs/"), hopperhttp.WithoutHeaders("X-Auth-Token"),
	}})
	r, a := b.post(t, "/v1/async/send-email/acme", `{}`, http.Header{"X-Auth-Token": {"secret"}})
	require.Equal(t, "https://api.example.com/v1/jobs/"+a.Job.ID, r.header.Get("Location"))
	job, err := b.client.Get(t.Context(), a.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "emails", job.Queue)
	require.Equal(t, 7, job.Priority)
	require.Equal(t, 3, job.MaxAttempts)
	require.NotContains(t, job.Headers, "http.header.x-auth-token")
}

func TestAsyncKindFromPath(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, a := b.post(t, "/v1/async/resize-image", `[1, 2]`, nil)
	job, err := b.client.Get(t.Context(), a.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "resize-image", job.Kind)
	require.Equal(t, "resize-image", job.Headers["http.path.kind"])
	require.JSONEq(t, `[1, 2]`, string(job.Args))
}

func TestAsyncRefusesBodiesThatAreNotJSON(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for _, body := range []string{"", "  ", `{"to":`, `hello`, `{} {}`} {
		r := b.do(t, http.MethodPost, "/v1/async/send-email/acme", body, nil)
		r.requireError(t, http.StatusBadRequest, "invalid_argument")
		require.Contains(t, r.body, "JSON", "body %q", body)
	}
	requireNoJobs(t, b)
}

func TestAsyncRefusesBodiesOverTheLimit(t *testing.T) {
	t.Parallel()
	big := `"` + strings.Repeat("x", 200) + `"`
	t.Run("option", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{options: []hopperhttp.Option{hopperhttp.WithMaxBodyBytes(100)}})
		r := b.do(t, http.MethodPost, "/v1/async/send-email/acme", big, nil)
		r.requireError(t, http.StatusRequestEntityTooLarge, "resource_exhausted")
		require.Contains(t, r.body, "100")
		requireNoJobs(t, b)
	})
	t.Run("chunked", func(t *testing.T) { // no Content-Length: the limit applies while reading
		t.Parallel()
		b := setup(t, setupOpts{options: []hopperhttp.Option{hopperhttp.WithMaxBodyBytes(100)}})
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.url+"/v1/async/send-email/acme",
			struct{ *strings.Reader }{strings.NewReader(big)})
		require.NoError(t, err)
		resp, err := b.http.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
		requireNoJobs(t, b)
	})
	t.Run("client args limit", func(t *testing.T) {
		t.Parallel()
		b := setup(t, setupOpts{config: func(c *hopper.Config) { c.MaxArgsBytes = 100 }})
		r := b.do(t, http.MethodPost, "/v1/async/send-email/acme", big, nil)
		r.requireError(t, http.StatusRequestEntityTooLarge, "resource_exhausted")
		requireNoJobs(t, b)
	})
}

func TestAsyncRefusesHeadersTooLargeToRecord(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	r := b.do(t, http.MethodPost, "/v1/async/send-email/acme", `{}`, http.Header{"X-Big": {strings.Repeat("x", 70<<10)}})
	r.requireError(t, http.StatusRequestHeaderFieldsTooLarge, "resource_exhausted")
	requireNoJobs(t, b)
}

func TestAsyncIdempotencyKey(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	key := http.Header{"Idempotency-Key": {"order-42"}}
	_, first := b.post(t, "/v1/async/send-email/acme", `{"to":"a@example.com"}`, key)

	r, again := b.post(t, "/v1/async/send-email/acme", `{ "to" : "a@example.com" }`, key)
	require.Equal(t, first.Job.ID, again.Job.ID, "same key, same JSON value: the same job")
	require.Equal(t, "true", r.header.Get("Idempotent-Replayed"))
	require.True(t, again.Existing)
	require.Equal(t, "/v1/jobs/"+first.Job.ID, r.header.Get("Location"))
	_, quoted := b.post(t, "/v1/async/send-email/acme", `{"to":"a@example.com"}`, http.Header{"Idempotency-Key": {`"order-42"`}})
	require.Equal(t, first.Job.ID, quoted.Job.ID, "a quoted key (the IETF draft's form) is the same key")

	r = b.do(t, http.MethodPost, "/v1/async/send-email/acme", `{"to":"b@example.com"}`, key)
	r.requireError(t, http.StatusUnprocessableEntity, "already_exists")
	require.NotContains(t, r.body, first.Job.ID, "the other job's id is not revealed")

	r = b.do(t, http.MethodPost, "/v1/async/send-email/acme", `{}`, http.Header{"Idempotency-Key": {" "}})
	r.requireError(t, http.StatusBadRequest, "invalid_argument")

	job, err := b.client.Get(t.Context(), first.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "order-42", job.IdempotencyKey)
	list, err := b.client.List(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, list.Jobs, 1)
}

// Merge-Key and Merge make a request merge into the job of its kind that waits for a worker
// (report has none): the answer says merged and points to that job.
func TestAsyncMergeKey(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{config: func(c *hopper.Config) { c.MaxArgsBytes = 64 }})
	merge := http.Header{"Merge-Key": {"daily-eu"}, "Merge": {"append"}}
	r, first := b.post(t, "/v1/async/report", `{"day":1}`, merge)
	require.False(t, first.Merged)
	require.Empty(t, r.header.Get("Merged"))

	r, again := b.post(t, "/v1/async/report", `{"day":2}`, http.Header{"Merge-Key": {`"daily-eu"`}, "Merge": {"append"}})
	require.True(t, again.Merged)
	require.False(t, again.Existing)
	require.Equal(t, "true", r.header.Get("Merged"))
	require.Equal(t, first.Job.ID, again.Job.ID)
	require.Equal(t, "/v1/jobs/"+first.Job.ID, r.header.Get("Location"))
	job, err := b.client.Get(t.Context(), first.Job.ID)
	require.NoError(t, err)
	require.JSONEq(t, `[{"day":1},{"day":2}]`, string(job.Args))
	require.Equal(t, "daily-eu", job.MergeKey)

	for name, header := range map[string]http.Header{
		"empty key":          {"Merge-Key": {" "}},
		"two keys":           {"Merge-Key": {"a", "b"}},
		"unknown policy":     {"Merge-Key": {"daily-eu"}, "Merge": {"squash"}},
		"policy without key": {"Merge": {"replace"}},
		"another shape":      {"Merge-Key": {"daily-eu"}, "Merge": {"replace"}},
	} {
		r := b.do(t, http.MethodPost, "/v1/async/report", `{"day":3}`, header)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", name, r.body)
		r.requireError(t, http.StatusBadRequest, "invalid_argument")
	}
	r = b.do(t, http.MethodPost, "/v1/async/report", `{"day":"`+strings.Repeat("x", 40)+`"}`, merge) // fits alone, not merged
	r.requireError(t, http.StatusRequestEntityTooLarge, "resource_exhausted")
	require.Contains(t, r.body, "limit of 64")

	job, err = b.client.Get(t.Context(), first.Job.ID)
	require.NoError(t, err)
	require.JSONEq(t, `[{"day":1},{"day":2}]`, string(job.Args), "refused requests changed nothing")
	list, err := b.client.List(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, list.Jobs, 1)
}

// A Fairness-Key header becomes the job's fairness key; an empty, repeated or too long one is
// the caller's error.
func TestAsyncFairnessKey(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, res := b.post(t, "/v1/async/report", `{"day":1}`, http.Header{"Fairness-Key": {"customer-42"}})
	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "customer-42", job.FairnessKey)

	for name, header := range map[string]http.Header{
		"empty":    {"Fairness-Key": {" "}},
		"two":      {"Fairness-Key": {"a", "b"}},
		"too long": {"Fairness-Key": {strings.Repeat("k", 129)}},
	} {
		r := b.do(t, http.MethodPost, "/v1/async/report", `{"day":2}`, header)
		r.requireError(t, http.StatusBadRequest, "invalid_argument")
		if name == "too long" {
			require.Contains(t, r.body, "fairness_key", name)
		}
	}
}

func TestAsyncMethodNotAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		r := b.do(t, m, "/any/async", "", nil)
		r.requireError(t, http.StatusMethodNotAllowed, "unimplemented")
		require.Equal(t, "POST", r.header.Get("Allow"))
	}
	requireNoJobs(t, b)
}

func requireNoJobs(t *testing.T, b *testBundle) {
	t.Helper()
	list, err := b.client.List(t.Context(), nil)
	require.NoError(t, err)
	require.Empty(t, list.Jobs, "nothing stored")
}

func TestAsyncBadOptionsAreTheProgramsError(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{options: []hopperhttp.Option{hopperhttp.WithQueue("no spaces allowed")}})
	r := b.do(t, http.MethodPost, "/v1/async/send-email/acme", `{}`, nil)
	r.requireError(t, http.StatusInternalServerError, "internal")
	require.NotContains(t, r.body, "no spaces allowed", "the caller is not told about the program's mistake")
	requireNoJobs(t, b)
}
