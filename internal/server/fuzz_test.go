package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/jsoncodec"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// The fuzz targets of the server's doors: any bytes as the body of any RPC procedure
// (FuzzRPC), and any body, kind, query and headers on the async endpoints (FuzzAsync, in
// fuzz_async_test.go). Both send their inputs over HTTP to a real server on a SQLite store.

// fuzzRotate is how many inputs one server takes before a fresh one (and a fresh store)
// replaces it, so that the store stays small however long the fuzzer runs.
const fuzzRotate = 1000

// fuzzServer is the server a fuzz target sends its inputs to: one per fuzzing process,
// started at its first input and replaced every fuzzRotate inputs. Its log is kept per input
// and printed when the input fails, since INTERNAL answers carry no detail.
type fuzzServer struct {
	dir    string
	inputs int
	s      *served
	log    *lockedBuffer
}

func newFuzzServer(f *testing.F) *fuzzServer {
	fs := &fuzzServer{dir: f.TempDir(), log: &lockedBuffer{}}
	f.Cleanup(func() {
		if fs.s != nil {
			fs.s.close(f)
		}
	})
	return fs
}

// get returns the server for the next input.
func (fs *fuzzServer) get(t *testing.T) *served {
	t.Helper()
	if fs.s != nil && fs.inputs%fuzzRotate == 0 {
		fs.s.close(t)
		fs.s = nil
		fs.removeFiles(t)
	}
	if fs.s == nil {
		fs.s = newServed(t, fs.path(), nil, nil, func(c *server.Config, st *sqlitestore.Store) {
			c.Keys = st
			c.Logger = slog.New(slog.NewTextHandler(fs.log, nil))
		})
	}
	fs.inputs++
	fs.log.Reset()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log of this input:\n%s", fs.log.String())
		}
	})
	return fs.s
}

func (fs *fuzzServer) path() string {
	return filepath.Join(fs.dir, fmt.Sprintf("hopper-%d.db", fs.inputs/fuzzRotate))
}

func (fs *fuzzServer) removeFiles(t *testing.T) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(fs.dir, "hopper-*.db*"))
	require.NoError(t, err)
	for _, m := range matches {
		require.NoError(t, os.Remove(m))
	}
}

// lockedBuffer is a log destination shared by the server's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// procedures are the RPC methods of the API, in a fixed order (an input names one by index).
func procedures(tb testing.TB) []protoreflect.MethodDescriptor {
	tb.Helper()
	var out []protoreflect.MethodDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage(apiPackage, func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			svc := f.Services().Get(i)
			for j := range svc.Methods().Len() {
				out = append(out, svc.Methods().Get(j))
			}
		}
		return true
	})
	require.NotEmpty(tb, out, "no procedures found in the hopper.v1 descriptors")
	sort.Slice(out, func(i, j int) bool { return out[i].FullName() < out[j].FullName() })
	return out
}

// How FuzzRPC sends a body (the input's mode byte, modulo 4; bit 2 sends a streaming
// procedure's body without its envelope).
const (
	modePostJSON  = iota // POST application/json (application/connect+json for streams)
	modePostProto        // POST application/proto (application/connect+proto)
	modeGetJSON          // GET ?encoding=json&message=… (procedures without side effects)
	modeGetProto         // GET ?encoding=proto&base64=1&message=…
)

// rpcTimeout is the deadline each fuzzed call sends (Connect-Timeout-Ms): long polls and
// streams end with deadline_exceeded then. A call that has not answered by rpcHang is hung.
const (
	rpcTimeout = 500 * time.Millisecond
	rpcHang    = 15 * time.Second
)

// FuzzRPC sends any bytes as the request of any procedure of the API (picked by the input's
// first byte, from the protobuf descriptors, so a new procedure is fuzzed without a change
// here), in Hopper's JSON encoding (package jsoncodec, the server's JSON codec) or binary
// protobuf, by POST or, for procedures without side effects, GET, to a real server on a
// SQLite store. Whatever the bytes, the server answers within its deadline, never with a
// server error (internal, unknown, data_loss, unavailable, or an HTTP 5xx other than a
// deadline), a success decodes as the procedure's response, and afterwards the server still
// answers /healthz and a good Enqueue and Get.
func FuzzRPC(f *testing.F) {
	procs := procedures(f)
	index := map[string]uint8{}
	for i, m := range procs {
		index[string(m.FullName())] = uint8(i)
	}
	seed := func(proc string, mode uint8, body string) {
		i, ok := index[proc]
		require.True(f, ok, "seed for unknown procedure %s", proc)
		f.Add(i, mode, []byte(body))
	}
	for _, m := range procs {
		seed(string(m.FullName()), modePostJSON, `{}`)
		seed(string(m.FullName()), modePostProto, "")
	}
	for _, s := range []struct {
		proc string
		mode uint8
		body string
	}{
		{"hopper.v1.JobService.Enqueue", modePostJSON, `{"job":{"kind":"k","args":{"a":1},"headers":{"h":"v"},"idempotencyKey":"i","groupKey":"g"}}`},
		{"hopper.v1.JobService.Enqueue", modePostJSON, `{"job":{"kind":"k","args":{"a":"\udfff"},"queue":"q"}}`},
		{"hopper.v1.JobService.Enqueue", modePostJSON, "{\"job\":{\"kind\":\"k\\u0000\",\"args\":\"1\"}}"},
		{"hopper.v1.JobService.Enqueue", modePostJSON, `{"job":{"kind":"k","args":{"id":12345678901234567890},"maxAttempt":3}}`},
		{"hopper.v1.JobService.Enqueue", modePostJSON, `{"job":{"kind":"k","args":{"a":}}}`},
		{"hopper.v1.JobService.Enqueue", modePostJSON, `{"job":{"kind":"k","runAt":"9999-12-31T23:59:59Z","timeout":"315576000000s"}}`},
		{"hopper.v1.JobService.Enqueue", modePostJSON, `{"job":{"kind":"k","retryPolicy":{"multiplier":"NaN","jitter":"Infinity"}}}`},
		{"hopper.v1.JobService.Enqueue", modePostProto, "\x0a\x05\x0a\x03k\xffk"},
		{"hopper.v1.JobService.EnqueueBatch", modePostJSON, `{"jobs":[{"kind":"a","idempotencyKey":"x","args":1},{"kind":"a","idempotencyKey":"x","args":2}]}`},
		{"hopper.v1.JobService.EnqueueBatch", modePostJSON, `{"jobs":[{"kind":"a","mergeKey":"m","merge":"append","args":1},{"kind":"a","mergeKey":"m","merge":"replace","args":2}]}`},
		{"hopper.v1.JobService.Enqueue", modePostJSON, `{"job":{"kind":"k","args":{"a":1},"mergeKey":"m\u0000","merge":"squash"}}`},
		{"hopper.v1.JobService.Get", modeGetJSON, `{"id":"\u0000"}`},
		{"hopper.v1.JobService.Get", modeGetProto, "\x0a\x02\xff\xfe"},
		{"hopper.v1.JobService.List", modePostJSON, `{"cursor":"aG9wcGVyLWxpc3QtdjE6/w","limit":-1,"states":["nope"]}`},
		{"hopper.v1.JobService.List", modeGetJSON, `{"kinds":["\ud800"],"queues":[""]}`},
		{"hopper.v1.JobService.Cancel", modePostJSON, `{"id":"x","reason":"` + strings.Repeat("r", 5000) + `"}`},
		{"hopper.v1.JobService.Resume", modePostJSON, `{"id":"x","data":{"}`},
		{"hopper.v1.WorkerService.Activate", modePostJSON, `{"worker":"w","maxJobs":1000,"leaseTimeout":"0.5s","requestTimeout":"3600s","fetchFields":["a"]}`},
		{"hopper.v1.WorkerService.StreamJobs", modePostJSON, `{"worker":"w","credit":2147483647}`},
		{"hopper.v1.WorkerService.StreamJobs", modePostJSON | 4, `{"worker":"w"}`},
		{"hopper.v1.WorkerService.Complete", modePostJSON, `{"id":"x","leaseToken":"-9223372036854775808","result":[]}`},
		{"hopper.v1.WorkerService.Fail", modePostJSON, `{"id":"x","error":"e","retries":-1,"retryBackoff":"-1s"}`},
		{"hopper.v1.WorkerService.Suspend", modePostJSON, `{"id":"x","until":"0001-01-01T00:00:00Z","deadline":"9999-12-31T00:00:00Z"}`},
		{"hopper.v1.WorkerService.ExtendLease", modePostJSON, `{"id":"x","duration":"-315576000000s"}`},
		{"hopper.v1.WorkerService.ReportProgress", modePostJSON, `{"id":"x","percent":-2147483648,"message":"\u0000"}`},
		{"hopper.v1.QueueService.Pause", modePostJSON, `{"queue":"a b"}`},
		{"hopper.v1.AdminService.CreateKey", modePostJSON, `{"name":"k","scopes":["admin","nope"]}`},
		{"hopper.v1.AdminService.RevokeKey", modePostJSON, `{"idOrName":"\u0000"}`},
		{"hopper.v1.AdminService.ImportKey", modePostJSON, `{"key":"hop_aaaaaaaaaaaa_\u0000","name":"k\u0000","scopes":["admin"]}`},
		{"hopper.v1.ScheduleService.Add", modePostJSON, `{"schedule":{"name":"s","kind":"k","cron":"@every 1ns","tz":"Mars/Olympus"}}`},
		{"hopper.v1.ScheduleService.Add", modePostJSON, `{"schedule":{"name":"s","kind":"k","cron":"0 0 30 2 *"}}`},
		{"hopper.v1.DeadLetterService.ReplayMany", modePostJSON, `{"limit":2147483647,"filter":{"failedAfter":"0001-01-01T00:00:00Z"}}`},
		{"hopper.v1.DeadLetterService.ListReplays", modeGetJSON, `{"cursor":"!!"}`},
	} {
		seed(s.proc, s.mode, s.body)
	}
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, proc, mode uint8, body []byte) {
		s := fs.get(t)
		callRaw(t, s, procs[int(proc)%len(procs)], mode, body)
		requireStillServes(t, s)
	})
}

// callRaw sends body to procedure m as mode says and checks the answer.
func callRaw(t *testing.T, s *served, m protoreflect.MethodDescriptor, mode uint8, body []byte) {
	t.Helper()
	path := s.ts.URL + "/" + string(m.Parent().FullName()) + "/" + string(m.Name())
	stream := m.IsStreamingServer() || m.IsStreamingClient()
	protoCodec := mode%4 == modePostProto || mode%4 == modeGetProto
	get := mode%4 >= modeGetJSON && !stream && sideEffectFree(m)
	ctx, cancel := context.WithTimeout(t.Context(), rpcHang)
	defer cancel()

	var req *http.Request
	var err error
	switch {
	case get:
		q := url.Values{"connect": {"v1"}, "encoding": {"json"}, "message": {string(body)}}
		if protoCodec {
			q.Set("encoding", "proto")
			q.Set("base64", "1")
			q.Set("message", base64.RawURLEncoding.EncodeToString(body))
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, path+"?"+q.Encode(), nil)
	default:
		contentType := map[bool]string{false: "application/json", true: "application/proto"}[protoCodec]
		if stream {
			contentType = map[bool]string{false: "application/connect+json", true: "application/connect+proto"}[protoCodec]
			if mode&4 == 0 {
				body = envelope(0, body)
			}
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
	}
	require.NoError(t, err)
	req.Header.Set("Connect-Protocol-Version", "1")
	req.Header.Set("Connect-Timeout-Ms", strconv.FormatInt(rpcTimeout.Milliseconds(), 10))
	hc := s.ts.Client()
	if m.IsStreamingClient() {
		hc = h2cClient(t) // a client stream needs HTTP/2
	}
	resp, err := hc.Do(req)
	require.NoError(t, err, "%s: no answer (hung or connection dropped)", m.FullName())
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err, "%s: answer not read in full", m.FullName())
	if stream && resp.StatusCode == http.StatusOK {
		requireGoodStream(t, m, protoCodec, raw)
		return
	}
	requireGoodUnary(t, m, protoCodec, resp.StatusCode, raw)
}

// sideEffectFree reports whether m may be called with GET.
func sideEffectFree(m protoreflect.MethodDescriptor) bool {
	opts, ok := m.Options().(*descriptorpb.MethodOptions)
	return ok && opts.GetIdempotencyLevel() == descriptorpb.MethodOptions_NO_SIDE_EFFECTS
}

// serverErrors are the Connect codes that say the server, not the request, is at fault.
var serverErrors = map[string]bool{"internal": true, "unknown": true, "data_loss": true, "unavailable": true}

// requireGoodUnary checks a unary answer: a success decodes as m's response; an error is no
// server error.
func requireGoodUnary(t *testing.T, m protoreflect.MethodDescriptor, protoCodec bool, status int, raw []byte) {
	t.Helper()
	if status == http.StatusOK {
		requireDecodes(t, m, protoCodec, raw)
		return
	}
	var e struct{ Code, Message string }
	_ = json.Unmarshal(raw, &e) // errors from below Connect (net/http's own) are plain text
	require.False(t, serverErrors[e.Code], "%s answered %d %s: %q", m.FullName(), status, e.Code, e.Message)
	if status >= 500 {
		require.Equal(t, "deadline_exceeded", e.Code, "%s answered %d: %q", m.FullName(), status, raw)
	}
}

// requireGoodStream checks a stream's messages and its end.
func requireGoodStream(t *testing.T, m protoreflect.MethodDescriptor, protoCodec bool, raw []byte) {
	t.Helper()
	for len(raw) > 0 {
		require.GreaterOrEqual(t, len(raw), 5, "%s: truncated stream envelope", m.FullName())
		n := binary.BigEndian.Uint32(raw[1:5])
		require.GreaterOrEqual(t, uint64(len(raw)-5), uint64(n), "%s: truncated stream message", m.FullName())
		flags, msg := raw[0], raw[5:5+n]
		raw = raw[5+n:]
		if flags&0x02 == 0 {
			requireDecodes(t, m, protoCodec, msg)
			continue
		}
		var end struct {
			Error *struct{ Code, Message string }
		}
		require.NoError(t, json.Unmarshal(msg, &end), "%s: end of stream is not JSON: %q", m.FullName(), msg)
		if end.Error != nil {
			require.False(t, serverErrors[end.Error.Code], "%s: stream ended with %s: %q", m.FullName(), end.Error.Code, end.Error.Message)
		}
		require.Empty(t, raw, "%s: messages after the end of the stream", m.FullName())
		return
	}
	t.Fatalf("%s: stream without an end message", m.FullName())
}

// requireDecodes requires msg to be a valid response of m.
func requireDecodes(t *testing.T, m protoreflect.MethodDescriptor, protoCodec bool, msg []byte) {
	t.Helper()
	mt, err := protoregistry.GlobalTypes.FindMessageByName(m.Output().FullName())
	require.NoError(t, err)
	out := mt.New().Interface()
	if protoCodec {
		err = proto.Unmarshal(msg, out)
	} else {
		err = jsoncodec.Unmarshal(msg, out)
	}
	require.NoError(t, err, "%s: the answer does not decode as %s: %q", m.FullName(), m.Output().FullName(), msg)
}

// requireStillServes requires the server to answer /healthz and a good Enqueue and Get.
func requireStillServes(t *testing.T, s *served) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), rpcHang)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.ts.URL+"/healthz", nil)
	require.NoError(t, err)
	resp, err := s.ts.Client().Do(req)
	require.NoError(t, err, "/healthz: no answer")
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "/healthz")

	jobs := hopperv1connect.NewJobServiceClient(connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL)))
	res, err := jobs.Enqueue(ctx, &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "fuzz-probe", Args: `{"ok":true}`}})
	require.NoError(t, err, "a good Enqueue after the input")
	got, err := jobs.Get(ctx, &hopperv1.GetRequest{Id: res.GetJob().GetId()})
	require.NoError(t, err, "a good Get after the input")
	require.Equal(t, `{"ok":true}`, got.GetJob().GetArgs())
}

// A stream request whose framing is broken is the caller's error: Connect called it internal.
// Found by FuzzRPC (testdata/fuzz/FuzzRPC/finding-truncated-stream-envelope).
func TestUnreadableStreamRequestIsInvalidArgument(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, nil, nil)
	stream := hopperv1connect.WorkerServiceStreamJobsProcedure
	for name, body := range map[string][]byte{
		"no envelope":       []byte("0"),
		"a short prefix":    {0, 0, 0},
		"a truncated body":  append(envelope(0, []byte(`{"worker":"w"}`))[:9:9], '}'),
		"a body after junk": append([]byte{0, 0, 0, 0, 2, '{', '}'}, 0xff),
	} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.ts.URL+stream, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/connect+json")
		resp, err := s.ts.Client().Do(req)
		require.NoError(t, err)
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		e := streamError(t, raw)
		require.Equal(t, "invalid_argument", e.Code, "%s: %s %q", name, e.Code, e.Message)
		require.Contains(t, e.Message, "unreadable request", name)
	}
}
