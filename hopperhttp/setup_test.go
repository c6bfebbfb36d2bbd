package hopperhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperhttp"
	"github.com/hopperjobs/hopper/hoppertest"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// sendEmail is the job the tests' endpoints enqueue. Its worker completes it with a result,
// fails it for good when Fail is set, and first waits for the test's gate when there is one.
type sendEmail struct {
	To   string `json:"to"`
	Fail bool   `json:"fail,omitempty"`
}

func (sendEmail) Kind() string { return "send-email" }

type testBundle struct {
	client *hopper.Client
	url    string
	http   *http.Client
	gate   chan struct{} // closed by release: the worker may finish its jobs
	once   sync.Once
}

// release lets the worker finish its jobs.
func (b *testBundle) release() { b.once.Do(func() { close(b.gate) }) }

type setupOpts struct {
	config  func(*hopper.Config)
	options []hopperhttp.Option
	clock   *hoppertest.FakeClock // the store's and the client's clock (default the wall clock)
}

// setup starts a client over a fresh SQLite store with a send-email worker, and a server with
// these routes:
//
//	POST /v1/async/send-email/{tenant}  AsyncHandler(send-email)
//	POST /v1/async/report               AsyncHandler(report), a kind no worker runs
//	POST /v1/async/{kind}               AsyncKindHandler
//	/any/async                          AsyncHandler(send-email), every method
//	/v1/jobs/{id}                       StatusHandler, every method
func setup(t *testing.T, o setupOpts) *testBundle {
	t.Helper()
	var clk hopper.Clock // nil, not a nil *FakeClock, when the options have none
	if o.clock != nil {
		clk = o.clock
	}
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	b := &testBundle{gate: make(chan struct{})}
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[sendEmail]) error {
		select {
		case <-b.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		if job.Args.Fail {
			return hopper.NoRetry(errors.New("mailbox full"))
		}
		return hopper.SetResult(ctx, map[string]string{"sent_to": job.Args.To})
	})
	cfg := hopper.Config{Store: st, Workers: ws, WorkerID: "hopperhttp-test", Clock: clk}
	if o.config != nil {
		o.config(&cfg)
	}
	b.client, err = hopper.NewClient(cfg)
	require.NoError(t, err)
	require.NoError(t, b.client.Start(context.Background()))

	mux := http.NewServeMux()
	mux.Handle("POST /v1/async/send-email/{tenant}", hopperhttp.AsyncHandler(b.client, "send-email", o.options...))
	mux.Handle("POST /v1/async/report", hopperhttp.AsyncHandler(b.client, "report", o.options...))
	mux.Handle("POST /v1/async/{kind}", hopperhttp.AsyncKindHandler(b.client, "kind", o.options...))
	mux.Handle("/any/async", hopperhttp.AsyncHandler(b.client, "send-email", o.options...))
	mux.Handle("/v1/jobs/{id}", hopperhttp.StatusHandler(b.client, o.options...))
	ts := httptest.NewServer(mux)
	b.url, b.http = ts.URL, ts.Client()
	t.Cleanup(func() {
		ts.Close()
		b.release()
		stoptest.Within(t, b.client, 10*time.Second)
		require.NoError(t, st.Close())
	})
	return b
}

// response is an answer with its body read.
type response struct {
	status int
	header http.Header
	body   string
}

// decode unmarshals the body into v.
func (r *response) decode(t *testing.T, v any) {
	t.Helper()
	require.NoError(t, json.Unmarshal([]byte(r.body), v), "body: %s", r.body)
}

// requireError checks an error answer: its status and its JSON code.
func (r *response) requireError(t *testing.T, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.status, "body: %s", r.body)
	require.Equal(t, "application/json", r.header.Get("Content-Type"))
	var e struct{ Code, Message string }
	r.decode(t, &e)
	require.Equal(t, code, e.Code)
	require.NotEmpty(t, e.Message)
}

func (b *testBundle) do(t *testing.T, method, path, body string, header http.Header) *response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, b.url+path, rd)
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := b.http.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return &response{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

// answer is the body of a 202 and of a status answer.
type answer struct {
	Job       jobView `json:"job"`
	Existing  bool    `json:"existing"`
	Merged    bool    `json:"merged"`
	StatusURL string  `json:"statusUrl"`
}

// jobView is a job as the async endpoints show it: the API's shape, status fields only.
type jobView struct {
	ID              string          `json:"id"`
	Kind            string          `json:"kind"`
	Queue           string          `json:"queue"`
	State           string          `json:"state"`
	Attempt         int             `json:"attempt"`
	MaxAttempts     int             `json:"maxAttempts"`
	ProgressPercent int             `json:"progressPercent"`
	ProgressMessage string          `json:"progressMessage"`
	Result          json.RawMessage `json:"result"`
	LastError       string          `json:"lastError"`
	RunAt           string          `json:"runAt"`
	CreatedAt       string          `json:"createdAt"`
	StartedAt       string          `json:"startedAt"`
	FinishedAt      string          `json:"finishedAt"`
}

// post posts body to path and requires 202.
func (b *testBundle) post(t *testing.T, path, body string, header http.Header) (*response, answer) {
	t.Helper()
	r := b.do(t, http.MethodPost, path, body, header)
	require.Equal(t, http.StatusAccepted, r.status, "body: %s", r.body)
	var a answer
	r.decode(t, &a)
	return r, a
}

// status gets a job's status URL (with a query, say "?wait=1s") and requires 200.
func (b *testBundle) status(t *testing.T, url string) answer {
	t.Helper()
	r := b.do(t, http.MethodGet, url, "", nil)
	require.Equal(t, http.StatusOK, r.status, "body: %s", r.body)
	var s answer
	r.decode(t, &s)
	return s
}
