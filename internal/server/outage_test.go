package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// How a faultyStore fails.
const (
	healthy  int32 = iota
	down           // the database is gone: ErrUnavailable
	broken         // an error only the server's operators should see
	badTime        // JobGet returns a job created in the year 10000: the JSON answer cannot be marshaled
	refusing       // the store refuses a value, in its driver's words (store.ErrInvalid)
)

// faultyStore is the test's SQLite store with a switch: Ping, SchemaVersion, JobGet,
// JobInsertMany and JobExtendLeases fail as the mode says.
type faultyStore struct {
	*sqlitestore.Store
	mode atomic.Int32
	// claimsDown fails claims alone with ErrUnavailable.
	claimsDown atomic.Bool
}

const secret = "relation hopper.jobs on 10.1.2.3:5432 said no"

func (f *faultyStore) fault() error {
	switch f.mode.Load() {
	case down:
		return fmt.Errorf("dial tcp 10.1.2.3:5432: connect: connection refused: %w", store.ErrUnavailable)
	case broken:
		return errors.New(secret)
	case refusing:
		return fmt.Errorf("%w: ERROR: invalid byte sequence for encoding \"UTF8\": 0x00 (SQLSTATE 22021)", store.ErrInvalid)
	}
	return nil
}

func (f *faultyStore) Ping(ctx context.Context) error {
	if err := f.fault(); err != nil {
		return err
	}
	return f.Store.Ping(ctx)
}

func (f *faultyStore) SchemaVersion(ctx context.Context) (int, error) {
	if err := f.fault(); err != nil {
		return 0, err
	}
	return f.Store.SchemaVersion(ctx)
}

func (f *faultyStore) JobGet(ctx context.Context, id string) (*hopper.JobRow, error) {
	if f.mode.Load() == badTime {
		return &hopper.JobRow{ID: id, Kind: "k", Queue: "default", State: hopper.StateQueued, Args: []byte(`{}`),
			CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, nil
	}
	if err := f.fault(); err != nil {
		return nil, err
	}
	return f.Store.JobGet(ctx, id)
}

func (f *faultyStore) JobInsertMany(ctx context.Context, ps []*store.InsertParams) ([]*store.InsertResult, error) {
	if err := f.fault(); err != nil {
		return nil, err
	}
	return f.Store.JobInsertMany(ctx, ps)
}

func (f *faultyStore) JobClaim(ctx context.Context, p *store.ClaimParams) (jobs []*hopper.JobRow, hold store.Hold, err error) {
	if f.claimsDown.Load() {
		return nil, store.Hold{}, fmt.Errorf("claim: %w", store.ErrUnavailable)
	}
	return f.Store.JobClaim(ctx, p)
}

func (f *faultyStore) JobExtendLeases(ctx context.Context, ps []*store.ExtendParams) ([]error, error) {
	if err := f.fault(); err != nil {
		return nil, err
	}
	return f.Store.JobExtendLeases(ctx, ps)
}

// logBuffer collects a server's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) count(substr string) int { return strings.Count(b.String(), substr) }

// faulty starts a server over a faultyStore; auth, when not nil, checks its requests.
func faulty(t *testing.T, auth server.Authenticator) (*served, *faultyStore, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	var fs *faultyStore
	s := serve(t, nil, func(c *hopper.Config) {
		fs = &faultyStore{Store: c.Store.(*sqlitestore.Store)}
		c.Store = fs
	}, func(c *server.Config, _ *sqlitestore.Store) {
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
		c.Auth = auth
	})
	return s, fs, logs
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// post sends a JSON body, as curl does to the RPC API or an async endpoint.
func post(t *testing.T, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	return postAs(t, "application/json", url, body, header...)
}

// postAs sends body of contentType (the Connect protocol's "application/proto" for binary
// messages).
func postAs(t *testing.T, contentType, url, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(out)
}

// errorBody decodes a {"code", "message"} error answer.
func errorBody(t *testing.T, body string) (code, message string) {
	t.Helper()
	var e struct{ Code, Message string }
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	return e.Code, e.Message
}

// /readyz follows the store, and so does hopper_store_up; /livez, the liveness probe, and
// /healthz do not; /livez answers while the server is not ready too. /readyz is public: it
// says the store is unreachable, never the driver's words (hosts, ports, users), which are
// the log's; its JSON answer says the same, and the schema version while the store answers.
func TestReadyzReportsTheStoreAndHealthzDoesNot(t *testing.T) {
	t.Parallel()
	s, fs, _ := faulty(t, nil)
	resp, body := get(t, s.ts.URL+"/readyz")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "ok\n", body)
	require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	rd := readyJSON(t, s.ts.URL, http.StatusOK)
	require.Equal(t, "ok", rd.Status)
	require.True(t, rd.Ready)
	require.Equal(t, "sqlite", rd.Store)
	require.Equal(t, sqlite.LatestVersion(), rd.SchemaVersion)

	fs.mode.Store(down)
	resp, body = get(t, s.ts.URL+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "store unreachable", strings.SplitN(body, "\n", 2)[0], body)
	require.NotContains(t, body, "10.1.2.3")
	require.NotContains(t, body, "connection refused")
	rd = readyJSON(t, s.ts.URL, http.StatusServiceUnavailable)
	require.Equal(t, "store unreachable", rd.Status)
	require.False(t, rd.Ready)
	require.Zero(t, rd.SchemaVersion, "the store could not be read")
	require.NotEmpty(t, rd.Version, "the build is known without the store")
	resp, _ = get(t, s.ts.URL+"/healthz")
	require.Equal(t, http.StatusOK, resp.StatusCode, "the process serves: alive")
	resp, body = get(t, s.ts.URL+"/livez")
	require.Equal(t, http.StatusOK, resp.StatusCode, "alive whatever the store")
	require.Equal(t, "ok\n", body)
	_, body = get(t, s.ts.URL+"/metrics")
	require.Contains(t, body, "\nhopper_store_up 0\n")

	fs.mode.Store(healthy)
	resp, body = get(t, s.ts.URL+"/readyz")
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	_, body = get(t, s.ts.URL+"/metrics")
	require.Contains(t, body, "\nhopper_store_up 1\n")

	s.srv.SetReady(false)
	resp, body = get(t, s.ts.URL+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Contains(t, body, "not ready")
	require.Equal(t, "not ready: starting or shutting down", readyJSON(t, s.ts.URL, http.StatusServiceUnavailable).Status)
	resp, _ = get(t, s.ts.URL+"/livez")
	require.Equal(t, http.StatusOK, resp.StatusCode, "starting or stopping is still alive")
}

// A store that cannot be reached is UNAVAILABLE (503, Retry-After) on the RPC API and the
// async endpoints, with a message that names nothing internal: clients retry it, and can
// tell it from a bug.
func TestAnUnavailableStoreIsUnavailableForClients(t *testing.T) {
	t.Parallel()
	s, fs, logs := faulty(t, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	job := e.enqueue(t, "k", `{}`)
	fs.mode.Store(down)

	_, err := e.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: job.GetId()})
	requireCode(t, connect.CodeUnavailable, err)
	var cerr *connect.Error
	require.ErrorAs(t, err, &cerr)
	require.Equal(t, "job store unavailable; retry later", cerr.Message())

	resp, body := post(t, s.ts.URL+"/hopper.v1.JobService/Get", `{"id":"`+job.GetId()+`"}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	code, msg := errorBody(t, body)
	require.Equal(t, "unavailable", code)
	require.Equal(t, "job store unavailable; retry later", msg)

	resp, body = post(t, s.ts.URL+"/hopper.v1.JobService/Enqueue", `{"job":{"kind":"k","args":{}}}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)

	resp, body = post(t, s.ts.URL+"/v1/async/k", `{"a":1}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
	code, msg = errorBody(t, body)
	require.Equal(t, "unavailable", code)
	require.Equal(t, "job store unavailable; retry later", msg)

	resp, body = get(t, s.ts.URL+"/v1/jobs/"+job.GetId())
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))

	resp, body = post(t, s.ts.URL+"/hopper.v1.ServerService/Info", `{}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	code, msg = errorBody(t, body)
	require.Equal(t, "unavailable", code)
	require.Equal(t, "job store unavailable; retry later", msg)
	require.NotContains(t, logs.String(), "level=ERROR", "an outage is not a bug: the loops log it once")
}

// An INTERNAL answer carries only the request id (also in X-Request-Id); the error, with that
// id, goes to the log. That holds for a store error, for a response Connect cannot marshal
// (a timestamp out of range), for the async endpoints and for the auth check.
func TestInternalAnswersCarryOnlyTheRequestID(t *testing.T) {
	t.Parallel()
	s, fs, logs := faulty(t, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	job := e.enqueue(t, "k", `{}`)

	requireInternal := func(resp *http.Response, body string) string {
		t.Helper()
		require.Equal(t, http.StatusInternalServerError, resp.StatusCode, body)
		id := resp.Header.Get("X-Request-Id")
		require.NotEmpty(t, id)
		code, msg := errorBody(t, body)
		require.Equal(t, "internal", code)
		require.Equal(t, "internal error (request id "+id+")", msg)
		require.Contains(t, logs.String(), "request_id="+id)
		return id
	}

	fs.mode.Store(broken)
	resp, body := post(t, s.ts.URL+"/hopper.v1.JobService/Get", `{"id":"`+job.GetId()+`"}`)
	id := requireInternal(resp, body)
	require.Contains(t, logs.String(), secret, "the error is in the log")
	require.Contains(t, logs.String(), "procedure=/hopper.v1.JobService/Get")

	_, err := e.jobs.Get(t.Context(), &hopperv1.GetRequest{Id: job.GetId()})
	requireCode(t, connect.CodeInternal, err)
	require.NotContains(t, err.Error(), "10.1.2.3")

	resp, body = get(t, s.ts.URL+"/v1/jobs/"+job.GetId())
	requireInternal(resp, body)
	resp, body = post(t, s.ts.URL+"/v1/async/k", `{"a":1}`)
	requireInternal(resp, body)

	// A response Connect cannot marshal (a timestamp protojson refuses; bytes that are not
	// UTF-8 can no longer reach an answer, reads render them as U+FFFD): its marshal error,
	// returned by the generated handler's Send, is caught like any other.
	fs.mode.Store(badTime)
	resp, body = post(t, s.ts.URL+"/hopper.v1.JobService/Get", `{"id":"`+job.GetId()+`"}`)
	requireInternal(resp, body)
	require.NotContains(t, body, "Timestamp")
	require.Contains(t, logs.String(), "Timestamp", "the marshal error is in the log")

	// A well-formed id a proxy sent is kept, so logs line up; a malformed one is replaced.
	fs.mode.Store(broken)
	resp, body = post(t, s.ts.URL+"/hopper.v1.JobService/Get", `{"id":"`+job.GetId()+`"}`, "X-Request-Id", "gw-7f3a.1")
	require.Equal(t, "gw-7f3a.1", requireInternal(resp, body))
	resp, body = post(t, s.ts.URL+"/hopper.v1.JobService/Get", `{"id":"`+job.GetId()+`"}`, "X-Request-Id", "evil\" level=INFO")
	require.NotEqual(t, "evil\" level=INFO", requireInternal(resp, body))
	require.NotEqual(t, id, resp.Header.Get("X-Request-Id"))

	fs.mode.Store(healthy)
	resp, _ = get(t, s.ts.URL+"/healthz")
	require.NotEmpty(t, resp.Header.Get("X-Request-Id"), "every answer has one")
}

type failingAuth struct{ err error }

func (a failingAuth) Authenticate(context.Context, *http.Request) (*server.Principal, error) {
	return nil, a.err
}

// The auth check's own failure: 500 with the request id, or 503 when the keys' store is
// unavailable.
func TestAuthFailuresCarryOnlyTheRequestID(t *testing.T) {
	t.Parallel()
	auth := &failingAuth{err: errors.New(secret)}
	s, _, logs := faulty(t, auth)
	resp, body := post(t, s.ts.URL+"/hopper.v1.JobService/Get", `{"id":"x"}`)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, body)
	id := resp.Header.Get("X-Request-Id")
	_, msg := errorBody(t, body)
	require.Equal(t, "internal error (request id "+id+")", msg)
	require.Contains(t, logs.String(), "request_id="+id)
	require.Contains(t, logs.String(), secret)

	auth.err = fmt.Errorf("look up key: %w", hopper.ErrUnavailable)
	resp, body = post(t, s.ts.URL+"/hopper.v1.JobService/Get", `{"id":"x"}`)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
	require.Equal(t, "5", resp.Header.Get("Retry-After"))
}

// A claim that fails (the store away a moment) ends no stream: each keeps the job pushed to
// it, running, its lease renewed, and claims again after a backoff that all streams share, so
// the outage is logged once; /readyz lists it. When claims work again, the streams push again.
// (Ended, a stream would hand its jobs back and its worker would stop their handlers: one
// blip would run every streamed job again.)
func TestAFailedClaimEndsNoStream(t *testing.T) {
	t.Parallel()
	s, fs, logs := faulty(t, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var pushed [2]chan *hopperv1.ActivatedJob
	ended := make(chan error, 2)
	var held [2]*hopperv1.ActivatedJob
	for i := range 2 {
		kind := fmt.Sprint("push-", i)
		id := e.enqueue(t, kind, `{}`).GetId()
		stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: fmt.Sprint("w", i), Kinds: []string{kind},
			Credit: 2, LeaseTimeout: durationpb.New(time.Second)})
		require.NoError(t, err)
		defer stream.Close()
		pushed[i] = make(chan *hopperv1.ActivatedJob, 2)
		go func() {
			for {
				msg, err := stream.Receive()
				if err != nil {
					ended <- err
					return
				}
				for _, j := range msg.GetJobs() {
					pushed[i] <- j
				}
			}
		}()
		held[i] = <-pushed[i]
		require.Equal(t, id, held[i].GetId())
	}

	fs.claimsDown.Store(true)
	failures := regexp.MustCompile(`failing: claim jobs for streams: (\d+) failures`)
	require.Eventually(t, func() bool {
		if len(ended) > 0 {
			return true
		}
		_, body := get(t, s.ts.URL+"/readyz")
		m := failures.FindStringSubmatch(body)
		if m == nil {
			return false
		}
		n, err := strconv.Atoi(m[1])
		return err == nil && n >= 4
	}, 10*time.Second, 20*time.Millisecond, "the claims of both streams fail again and again")
	select {
	case err := <-ended:
		t.Fatalf("a stream ended: %v", err)
	default:
	}
	require.Equal(t, 1, logs.count(`msg="claim jobs for streams failed; retrying with backoff"`), logs.String())
	for _, h := range held {
		job := e.get(t, h.GetId())
		require.Equal(t, "running", job.GetState(), "still the stream's")
		require.Equal(t, h.GetLeaseToken(), job.GetLeaseToken())
	}

	fs.claimsDown.Store(false)
	for i := range 2 {
		next := e.enqueue(t, fmt.Sprint("push-", i), `{}`)
		require.Equal(t, next.GetId(), (<-pushed[i]).GetId(), "stream %d pushes again", i)
	}
	require.Equal(t, 1, logs.count(`msg="claim jobs for streams recovered"`), logs.String())
}

// A value the store refuses though the checks at the door let it through is INVALID_ARGUMENT,
// as bad input, but with a message of Hopper's, not the driver's (which speaks SQL and names
// no field); the driver's goes to the log with the request id.
func TestAStoreRefusalIsInvalidArgumentWithoutTheDriversWords(t *testing.T) {
	t.Parallel()
	s, fs, logs := faulty(t, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	job := e.enqueue(t, "k", `{}`)
	fs.mode.Store(refusing)
	resp, body := post(t, s.ts.URL+"/hopper.v1.JobService/Get", `{"id":"`+job.GetId()+`"}`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	code, msg := errorBody(t, body)
	require.Equal(t, "invalid_argument", code)
	require.Equal(t, "invalid input: a value the store cannot keep", msg)
	require.Contains(t, logs.String(), "request_id="+resp.Header.Get("X-Request-Id"))
	require.Contains(t, logs.String(), "SQLSTATE 22021", "the driver's words are in the log")

	// The async endpoints answer it the same way.
	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/v1/jobs/" + job.GetId(), ""},
		{http.MethodPost, "/v1/async/k", `{"a":1}`},
	} {
		var resp *http.Response
		var body string
		if r.method == http.MethodGet {
			resp, body = get(t, s.ts.URL+r.path)
		} else {
			resp, body = post(t, s.ts.URL+r.path, r.body)
		}
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s %s: %s", r.method, r.path, body)
		code, msg := errorBody(t, body)
		require.Equal(t, "invalid_argument", code, r.path)
		require.Equal(t, "invalid input: a value the store cannot keep", msg, r.path)
		require.NotContains(t, body, "SQLSTATE", r.path)
	}
}

// A Report whose items find the store away answers each of them UNAVAILABLE, from items
// decided at the same time: an item's answer must not touch the call's own (its Retry-After
// header), which concurrent items once wrote at once and crashed the server with "concurrent
// map writes".
func TestAReportDuringAnOutageAnswersEachItemUnavailable(t *testing.T) {
	t.Parallel()
	s, fs, _ := faulty(t, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	for range 40 {
		e.enqueue(t, "k", `{}`)
	}
	jobs := e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 40, LeaseTimeout: durationpb.New(time.Hour)})
	require.Len(t, jobs, 40)
	req := &hopperv1.ReportRequest{}
	for _, j := range jobs {
		req.Renewals = append(req.Renewals, &hopperv1.ExtendLeaseRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken(),
			Duration: durationpb.New(time.Hour)})
	}
	fs.mode.Store(down)
	res, err := e.workers.Report(t.Context(), req)
	require.NoError(t, err, "the call is answered; its items are not applied")
	require.Len(t, res.GetRenewals(), 40)
	for _, v := range res.GetRenewals() {
		require.Equal(t, "unavailable", v.GetCode())
	}
}
