package hopperhttp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hopperhttp"
	"github.com/stretchr/testify/require"
)

// get is a status request made off the test goroutine; its answer arrives on a channel.
type get struct {
	status int
	body   []byte
	err    error
	at     time.Time
}

func (b *testBundle) getAsync(ctx context.Context, url string) <-chan get {
	out := make(chan get, 1)
	go func() {
		var g get
		defer func() { g.at = time.Now(); out <- g }()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url+url, nil)
		if err != nil {
			g.err = err
			return
		}
		resp, err := b.http.Do(req)
		if err != nil {
			g.err = err
			return
		}
		defer resp.Body.Close()
		g.status = resp.StatusCode
		g.body, g.err = io.ReadAll(resp.Body)
	}()
	return out
}

func TestStatusWaitReturnsWhenTheJobCompletes(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, a := b.post(t, "/v1/async/send-email/acme", `{"to":"ada@example.com"}`, nil)
	s := b.status(t, a.StatusURL)
	require.Contains(t, []string{"queued", "running"}, s.Job.State)
	require.Nil(t, s.Job.Result, "no result before the job completes")

	answer := b.getAsync(t.Context(), a.StatusURL+"?wait=30s")
	require.Never(t, func() bool { return len(answer) > 0 }, 50*time.Millisecond, 5*time.Millisecond,
		"the request waits while the job runs")
	released := time.Now()
	b.release()
	var g get
	select {
	case g = <-answer:
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end when the job completed")
	}
	require.NoError(t, g.err)
	require.Equal(t, http.StatusOK, g.status)
	require.Less(t, g.at.Sub(released), 2*time.Second, "answered as the job completed, not at the end of the wait")

	require.NoError(t, json.Unmarshal(g.body, &s))
	require.Equal(t, "completed", s.Job.State)
	require.JSONEq(t, `{"sent_to":"ada@example.com"}`, string(s.Job.Result), "the result is a JSON value, not a string")
	require.Equal(t, a.Job.ID, s.Job.ID)
	require.Equal(t, "send-email", s.Job.Kind)
	require.Equal(t, "default", s.Job.Queue)
	require.Equal(t, 1, s.Job.Attempt)
	require.Equal(t, 25, s.Job.MaxAttempts)
	require.Zero(t, s.Job.ProgressPercent)
	require.Empty(t, s.Job.ProgressMessage)
	require.Empty(t, s.Job.LastError)
	require.Equal(t, "/v1/jobs/"+a.Job.ID, s.StatusURL)
	for _, ts := range []string{s.Job.CreatedAt, s.Job.StartedAt, s.Job.FinishedAt} {
		_, err := time.Parse(time.RFC3339, ts)
		require.NoError(t, err, "timestamp %q", ts)
	}
}

func TestStatusWaitReturnsWhenTheJobFails(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.release()
	_, a := b.post(t, "/v1/async/send-email/acme", `{"to":"x","fail":true}`, nil)
	start := time.Now()
	s := b.status(t, a.StatusURL+"?wait=30s")
	require.Less(t, time.Since(start), 10*time.Second)
	require.Equal(t, "failed", s.Job.State)
	require.Contains(t, s.Job.LastError, "mailbox full")
	require.Nil(t, s.Job.Result)
	require.NotEmpty(t, s.Job.FinishedAt)
}

func TestStatusWaitTimesOutWithTheCurrentState(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, a := b.post(t, "/v1/async/report", `{}`, nil) // no worker runs reports
	start := time.Now()
	s := b.status(t, a.StatusURL+"?wait=150ms")
	require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
	require.Equal(t, "queued", s.Job.State)
	require.Empty(t, s.Job.StartedAt)
	require.Empty(t, s.Job.FinishedAt)

	s = b.status(t, a.StatusURL+"?wait=0s")
	require.Equal(t, "queued", s.Job.State)
}

func TestStatusWaitEndsWithTheRequest(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, a := b.post(t, "/v1/async/report", `{}`, nil)
	h := hopperhttp.StatusHandler(b.client)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, a.StatusURL+"?wait=60s", nil)
	req.SetPathValue("id", a.Job.ID)
	start := time.Now()
	h.ServeHTTP(httptest.NewRecorder(), req)
	require.Less(t, time.Since(start), 5*time.Second, "the wait stops when the request's context ends")
}

func TestStatusRefusesABadWait(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, a := b.post(t, "/v1/async/report", `{}`, nil)
	for _, w := range []string{"10", "soon", "-1s", "61s", "2m"} {
		r := b.do(t, http.MethodGet, a.StatusURL+"?wait="+w, "", nil)
		r.requireError(t, http.StatusBadRequest, "invalid_argument")
		require.Contains(t, r.body, "wait", "wait=%s", w)
	}
}

func TestStatusOfAnUnknownJobIs404(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	b.do(t, http.MethodGet, "/v1/jobs/no-such-job", "", nil).requireError(t, http.StatusNotFound, "not_found")
	b.do(t, http.MethodGet, "/v1/jobs/no-such-job?wait=10s", "", nil).requireError(t, http.StatusNotFound, "not_found")
}

func TestStatusMethodNotAllowed(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, a := b.post(t, "/v1/async/report", `{}`, nil)
	for _, m := range []string{http.MethodPost, http.MethodDelete} {
		r := b.do(t, m, a.StatusURL, "", nil)
		r.requireError(t, http.StatusMethodNotAllowed, "unimplemented")
		require.Equal(t, "GET, HEAD", r.header.Get("Allow"))
	}
	r := b.do(t, http.MethodHead, a.StatusURL, "", nil)
	require.Equal(t, http.StatusOK, r.status)
}
