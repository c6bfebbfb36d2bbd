package hopperhttp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperhttp"
	"github.com/hopperjobs/hopper/hoppertest"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// get is a status request made off the test goroutine; its answer arrives on a channel.
type get struct {
	status int
	body   []byte
	err    error
}

func (b *testBundle) getAsync(ctx context.Context, url string) <-chan get {
	out := make(chan get, 1)
	go func() {
		var g get
		defer func() { out <- g }()
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

// recvGet returns the answer of a status request made with getAsync, failing the test after
// 10 s without one.
func recvGet(t *testing.T, reply <-chan get, msg string) get {
	t.Helper()
	select {
	case g := <-reply:
		require.NoError(t, g.err)
		return g
	case <-time.After(10 * time.Second):
		t.Fatal(msg)
		return get{}
	}
}

var testStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// longestPoll is how long a waiting status request waits, at most, between its reads of the
// job.
const longestPoll = 100 * time.Millisecond

// requireState waits until the job is in state.
func (b *testBundle) requireState(t *testing.T, id string, state hopper.JobState) {
	t.Helper()
	require.Eventually(t, func() bool {
		job, err := b.client.Get(t.Context(), id)
		require.NoError(t, err)
		return job.State == state
	}, 10*time.Second, time.Millisecond, "job %s never %s", id, state)
}

// The request waits while the job runs (an answer before it completes would show it running),
// and answers at its next read once the job completed: the clock has moved a poll, not the
// 30 s of the wait.
func TestStatusWaitReturnsWhenTheJobCompletes(t *testing.T) {
	t.Parallel()
	clk := hoppertest.NewFakeClock(testStart)
	b := setup(t, setupOpts{clock: clk})
	_, a := b.post(t, "/v1/async/send-email/acme", `{"to":"ada@example.com"}`, nil)
	s := b.status(t, a.StatusURL)
	require.Contains(t, []string{"queued", "running"}, s.Job.State)
	require.Nil(t, s.Job.Result, "no result before the job completes")

	reply := b.getAsync(t.Context(), a.StatusURL+"?wait=30s")
	b.release()
	b.requireState(t, a.Job.ID, hopper.StateCompleted)
	clk.Advance(longestPoll)
	g := recvGet(t, reply, "the wait did not end when the job completed")
	require.Equal(t, http.StatusOK, g.status)

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

// A failed job ends the wait as a completed one does: the request answers at its next read,
// with the clock a poll on, not the 30 s of the wait.
func TestStatusWaitReturnsWhenTheJobFails(t *testing.T) {
	t.Parallel()
	clk := hoppertest.NewFakeClock(testStart)
	b := setup(t, setupOpts{clock: clk})
	b.release()
	_, a := b.post(t, "/v1/async/send-email/acme", `{"to":"x","fail":true}`, nil)
	reply := b.getAsync(t.Context(), a.StatusURL+"?wait=30s")
	b.requireState(t, a.Job.ID, hopper.StateFailed)
	clk.Advance(longestPoll)
	g := recvGet(t, reply, "the wait did not end when the job failed")
	require.Equal(t, http.StatusOK, g.status)
	var s answer
	require.NoError(t, json.Unmarshal(g.body, &s))
	require.Equal(t, "failed", s.Job.State)
	require.Contains(t, s.Job.LastError, "mailbox full")
	require.Nil(t, s.Job.Result)
	require.NotEmpty(t, s.Job.FinishedAt)
}

// idleSetup serves the status of a job that waits in its queue (a report: no worker runs
// them) from a client on a fake clock that is never started, so that the clock's only timer
// is a waiting status request's. It returns the bundle (whose gate is unused), the clock and
// the job's status URL.
func idleSetup(t *testing.T) (*testBundle, *hoppertest.FakeClock, string) {
	t.Helper()
	clk := hoppertest.NewFakeClock(testStart)
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	client, err := hopper.NewClient(hopper.Config{Store: st, Clock: clk})
	require.NoError(t, err)
	res, err := client.Enqueue(t.Context(), hopper.RawArgs{KindName: "report", JSON: []byte(`{}`)}, nil)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/v1/jobs/{id}", hopperhttp.StatusHandler(client))
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		ts.Close()
		require.NoError(t, st.Close())
	})
	return &testBundle{client: client, url: ts.URL, http: ts.Client()}, clk, "/v1/jobs/" + res.Job.ID
}

// requireWaiting waits until a status request waits on clk for its next read.
func requireWaiting(t *testing.T, clk *hoppertest.FakeClock) {
	t.Helper()
	require.Eventually(t, func() bool { return clk.Pending() == 1 }, 10*time.Second, time.Millisecond,
		"the request waits on the clock")
}

// The request answers when its wait is over, not before, with the state then.
func TestStatusWaitTimesOutWithTheCurrentState(t *testing.T) {
	t.Parallel()
	b, clk, url := idleSetup(t)
	reply := b.getAsync(t.Context(), url+"?wait=150ms")
	requireWaiting(t, clk)
	clk.Advance(149 * time.Millisecond) // its first read again, still within the wait
	requireWaiting(t, clk)
	require.Empty(t, reply, "no answer before the wait is over")
	clk.Advance(time.Millisecond)
	g := recvGet(t, reply, "no answer once the wait was over")
	require.Equal(t, http.StatusOK, g.status)
	var s answer
	require.NoError(t, json.Unmarshal(g.body, &s))
	require.Equal(t, "queued", s.Job.State)
	require.Empty(t, s.Job.StartedAt)
	require.Empty(t, s.Job.FinishedAt)

	s = b.status(t, url+"?wait=0s")
	require.Equal(t, "queued", s.Job.State)
}

// The request's context ending stops the wait: the clock never moves here.
func TestStatusWaitEndsWithTheRequest(t *testing.T) {
	t.Parallel()
	b, clk, url := idleSetup(t)
	h := hopperhttp.StatusHandler(b.client)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, url+"?wait=60s", nil)
	req.SetPathValue("id", strings.TrimPrefix(url, "/v1/jobs/"))
	served := make(chan struct{})
	go func() {
		defer close(served)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}()
	requireWaiting(t, clk)
	cancel()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not stop when the request's context ended")
	}
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
