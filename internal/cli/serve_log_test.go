package cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/stretchr/testify/require"
)

// runningServe is `hopper serve` run in-process by a test.
type runningServe struct {
	url            string
	stdout, stderr *syncBuffer
	cancel         context.CancelFunc
	done           chan int
}

// runServe starts `hopper serve` on a fresh, migrated SQLite file (sqlitetest) with args, and
// waits until it listens.
func runServe(t *testing.T, args ...string) *runningServe {
	t.Helper()
	return runServeOn(t, []string{"--database", sqlitetest.Path(t)}, args...)
}

// runServeOn starts `hopper serve` with the global flags global (its database) and args, and
// waits until it listens.
func runServeOn(t *testing.T, global []string, args ...string) *runningServe {
	t.Helper()
	s := launchServe(t, global, args...)
	s.waitListening(t)
	return s
}

// launchServe starts `hopper serve` on a port of its own with the global flags global and
// args, without waiting: waitListening waits. It is stopped at cleanup unless stopped before.
func launchServe(t *testing.T, global []string, args ...string) *runningServe {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &runningServe{stdout: &syncBuffer{}, stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	args = append(append(append([]string(nil), global...), "serve", "--addr", "127.0.0.1:0"), args...)
	go func() { s.done <- run(ctx, args, strings.NewReader(""), s.stdout, s.stderr) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// waitListening waits until the server listens, and sets its url. A server that exits first
// fails the test with its output.
func (s *runningServe) waitListening(t *testing.T) {
	t.Helper()
	exited := false
	require.Eventually(t, func() bool {
		select {
		case code := <-s.done:
			s.done <- code // for stop
			exited = true
			return true
		default:
		}
		return servingOn.MatchString(s.stdout.String())
	}, 15*time.Second, 5*time.Millisecond, "hopper serve did not start: %s", s.stderr.String())
	require.False(t, exited, "hopper serve exited: %s", s.stderr.String())
	m := servingOn.FindStringSubmatch(s.stdout.String())
	s.url = m[1] + "://" + m[2]
}

// stop stops the server once, and requires a clean exit.
func (s *runningServe) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	select {
	case code, ok := <-s.done:
		if ok {
			require.Equal(t, ExitOK, code, "hopper serve: %s", s.stderr.String())
			close(s.done)
		}
	case <-time.After(20 * time.Second):
		t.Error("hopper serve did not stop within 20 s")
	}
}

// enqueueEcho enqueues a hopper.echo job over the RPC API as JSON, with extra headers.
func (s *runningServe) enqueueEcho(t *testing.T, header ...string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url+"/hopper.v1.JobService/Enqueue",
		strings.NewReader(`{"job":{"kind":"hopper.echo","args":{"hello":"world"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var out struct{ Job struct{ ID string } }
	require.NoError(t, json.Unmarshal(body, &out))
	return out.Job.ID
}

// With --log-format json, every line serve writes is one JSON object; --log-level debug
// writes a line per job, with its id.
func TestServeLogsJSON(t *testing.T) {
	t.Parallel()
	s := runServe(t, "--log-format", "json", "--log-level", "debug")
	id := s.enqueueEcho(t)
	require.Eventually(t, func() bool { return strings.Contains(s.stderr.String(), id) }, 10*time.Second, 5*time.Millisecond,
		"a debug line names the job")
	s.stop(t)
	lines := strings.Split(strings.TrimSpace(s.stderr.String()), "\n")
	require.NotEmpty(t, lines)
	var finished bool
	for _, l := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &rec), "not JSON: %s", l)
		require.Contains(t, rec, "level")
		require.Contains(t, rec, "msg")
		finished = finished || rec["msg"] == "job finished" && rec["job_id"] == id
	}
	require.True(t, finished, "the job's debug line: %s", s.stderr.String())
}

// The default is text at info: no line per job.
func TestServeLogsTextAtInfoByDefault(t *testing.T) {
	t.Parallel()
	s := runServe(t)
	id := s.enqueueEcho(t)
	s.stop(t)
	require.Contains(t, s.stderr.String(), "level=INFO msg=\"shutting down\"")
	require.NotContains(t, s.stderr.String(), id)
}

// A bad --log-format or --log-level is a usage error naming the flag, from the command line
// or from its variable.
func TestServeRefusesABadLogFlag(t *testing.T) {
	t.Parallel()
	for flag, value := range map[string]string{"log-format": "xml", "log-level": "loud"} {
		res := runArgs(t, "serve", "--addr", "127.0.0.1:0", "--"+flag, value)
		require.Equal(t, ExitUsage, res.code, res.stderr)
		require.Contains(t, res.stderr, "--"+flag)
		require.Contains(t, res.stderr, value)

		name := envName(flag)
		err := flagsFromEnv(parsed(t, "serve"), env{name: value}.lookup)
		require.Equal(t, ExitUsage, exitCode(err))
		require.Contains(t, message(err), name+": ")
		require.Contains(t, message(err), "--"+flag)
	}
	cmd := parsed(t, "serve")
	require.NoError(t, flagsFromEnv(cmd, env{"HOPPER_LOG_FORMAT": "json", "HOPPER_LOG_LEVEL": "warn"}.lookup))
	require.Equal(t, "json", cmd.Flags().Lookup("log-format").Value.String())
	require.Equal(t, "warn", cmd.Flags().Lookup("log-level").Value.String())
}

// collector is a fake OTLP/HTTP trace collector: it keeps every export's body.
type collector struct {
	mu     sync.Mutex
	bodies [][]byte
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path == "/v1/traces" {
		c.mu.Lock()
		c.bodies = append(c.bodies, body)
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (c *collector) has(b []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, body := range c.bodies {
		if bytes.Contains(body, b) {
			return true
		}
	}
	return false
}

// With OTEL_EXPORTER_OTLP_ENDPOINT set, serve exports its spans over OTLP/HTTP: the span of
// an attempt of a job enqueued with a traceparent reaches the collector in the caller's trace
// by the time serve has stopped. (t.Setenv: not parallel.)
func TestServeExportsTracesWithOTLP(t *testing.T) {
	col := &collector{}
	ts := httptest.NewServer(col)
	defer ts.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ts.URL)
	s := runServe(t)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	id := s.enqueueEcho(t, "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	require.Eventually(t, func() bool {
		res := runArgs(t, "--server", s.url, "jobs", "show", id)
		return strings.Contains(res.stdout, "completed")
	}, 10*time.Second, 10*time.Millisecond)
	s.stop(t) // flushes the batch
	raw, err := hex.DecodeString(traceID)
	require.NoError(t, err)
	require.True(t, col.has(raw), "the collector got spans of the caller's trace")
	require.True(t, col.has([]byte("process hopper.echo")), "among them the attempt's")
}
