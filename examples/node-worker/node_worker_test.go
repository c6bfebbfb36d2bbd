package nodeworker_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/cli"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// envRole makes the test binary, re-executed, be the hopper command (cmd/hopper's main is
// just cli.Execute). The server under test is thus built with the test and its flags (-race
// in CI) instead of by a `go build` within the test's time budget: a cold build of
// cmd/hopper takes about a minute on two cores.
const envRole = "HOPPER_NODE_WORKER_TEST_ROLE"

func TestMain(m *testing.M) {
	if os.Getenv(envRole) == "hopper" {
		os.Exit(cli.Execute())
	}
	goleak.VerifyTestMain(m)
}

// TestNodeWorker runs the JavaScript worker against a real `hopper serve` (SQLite, API keys
// on): a round over StreamJobs, then a round over Activate long polls, and checks every
// job's final state, result and error through the API.
func TestNodeWorker(t *testing.T) {
	nodeBin := requireNode(t)
	ctx, cancel := context.WithTimeout(t.Context(), 55*time.Second)
	defer cancel()
	start := time.Now()

	t.Run("envelope parsing", func(t *testing.T) {
		out, err := command(ctx, nodeBin, nil, "--test", "hopper.test.mjs").CombinedOutput()
		require.NoError(t, err, "node --test hopper.test.mjs:\n%s", out)
	})

	s := startServer(t, ctx)
	nodeEnv := []string{"HOPPER_URL=" + s.url, "HOPPER_API_KEY=" + s.key}
	want := map[string]expectation{}

	// Round 1: jobs enqueued from Go, worked over a stream.
	var specs []map[string]any
	for i := range 6 {
		args := resizeArgs{Width: 1000 + 111*i, Height: 700 + 37*i, Percent: 10 + 15*i}
		specs = append(specs, map[string]any{"kind": "resize", "args": mustJSON(t, args)})
	}
	for _, amount := range []int{1500, -300, 250, -1} {
		specs = append(specs, map[string]any{"kind": "charge", "args": mustJSON(t, chargeArgs{Order: 7000 - amount, Amount: amount})})
	}
	var batch struct {
		Results []struct{ Job job } `json:"results"`
	}
	s.call(t, ctx, "JobService", "EnqueueBatch", map[string]any{"jobs": specs}, &batch)
	require.Len(t, batch.Results, 10)
	for _, r := range batch.Results {
		want[r.Job.ID] = expect(t, r.Job.Kind, r.Job.Args)
	}

	out := runWorker(t, ctx, nodeBin, nodeEnv, "--mode", "stream", "--credit", "4", "--max", "10")
	require.Contains(t, out, "10 job(s) taken: 8 completed, 2 failed, 0 to be retried, 0 not reported")
	// The stream is gone once the worker has exited (the server notices the closed connection).
	require.Eventually(t, func() bool {
		var streams struct {
			Streams []json.RawMessage `json:"streams"`
		}
		s.call(t, ctx, "AdminService", "ListStreams", map[string]any{}, &streams)
		return len(streams.Streams) == 0
	}, 10*time.Second, 50*time.Millisecond, "the worker's stream is closed")

	// Round 2: jobs enqueued by enqueue.mjs, worked with long polls.
	stdout, stderr, err := runNode(ctx, nodeBin, nodeEnv, "enqueue.mjs", "--resize", "3", "--charge", "2", "--bad", "1", "--json")
	require.NoError(t, err, "enqueue.mjs: %s", stderr)
	var round2 int
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var j job
		require.NoError(t, json.Unmarshal(sc.Bytes(), &j), "enqueue.mjs --json line %q", sc.Text())
		want[j.ID] = expect(t, j.Kind, j.Args)
		round2++
	}
	require.Equal(t, 6, round2, "enqueue.mjs output:\n%s", stdout)
	out = runWorker(t, ctx, nodeBin, nodeEnv, "--mode", "poll", "--credit", "2", "--max", "6")
	require.Contains(t, out, "6 job(s) taken: 5 completed, 1 failed, 0 to be retried, 0 not reported")

	// Every job ended as its args say, in one attempt.
	for id, w := range want {
		var got struct{ Job job }
		s.call(t, ctx, "JobService", "Get", map[string]any{"id": id}, &got)
		j := got.Job
		require.Equal(t, w.state, j.State, "job %s %s %s: state (last error %q)", id, j.Kind, j.Args, j.LastError)
		require.Equal(t, 1, j.Attempt, "job %s: attempts", id)
		if w.state == "completed" {
			require.JSONEq(t, w.result, j.Result, "job %s %s %s: result", id, j.Kind, j.Args)
			require.Empty(t, j.LastError, "job %s", id)
		} else {
			require.Equal(t, w.lastError, j.LastError, "job %s %s %s: error", id, j.Kind, j.Args)
			require.Empty(t, j.Result, "job %s", id)
		}
	}
	// ... and there are no other jobs: 13 completed, 3 failed, nothing queued or running.
	var queues struct {
		Queues []struct {
			Name   string            `json:"name"`
			Counts map[string]string `json:"counts"` // int64 values come as strings
		} `json:"queues"`
	}
	s.call(t, ctx, "QueueService", "List", map[string]any{}, &queues)
	require.Len(t, queues.Queues, 1)
	require.Equal(t, "default", queues.Queues[0].Name)
	counts := map[string]string{}
	for state, n := range queues.Queues[0].Counts {
		if n != "0" {
			counts[state] = n
		}
	}
	require.Equal(t, map[string]string{"completed": "13", "failed": "3"}, counts)

	// Errors reach JavaScript with their Connect codes: a unary call's, and a stream's
	// end-of-stream error.
	t.Run("errors", func(t *testing.T) {
		script := `
import { call, streamJobs } from './hopper.mjs';
const codeOf = async (f) => { try { await f(); return 'no error'; } catch (err) { return err.code ?? String(err); } };
console.log(await codeOf(() => call('JobService', 'List', {}, { apiKey: 'hop_not-a-key' })));
console.log(await codeOf(() => call('JobService', 'Get', { id: '01a2021c-d604-7937-968e-1319b1a6164e' })));
console.log(await codeOf(async () => { for await (const j of streamJobs({ worker: 'w', credit: 0 })) {} }));
`
		stdout, stderr, err := runNode(ctx, nodeBin, nodeEnv, "--input-type=module", "-e", script)
		require.NoError(t, err, "stderr: %s", stderr)
		require.Equal(t, "unauthenticated\nnot_found\ninvalid_argument\n", stdout, "stderr: %s", stderr)
	})

	s.stop(t)
	t.Logf("took %s", time.Since(start).Round(time.Millisecond))
}

// requireNode returns node's path. Without node (or with one older than 20) the test skips,
// except in CI (CI=true), where it fails.
func requireNode(t *testing.T) string {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format+" (CI=true: failing rather than skipping)", args...)
		}
		t.Skipf(format, args...)
	}
	bin, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		missing("node --version: %v", err)
	}
	v := strings.TrimSpace(string(out))
	major, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(v, "v"), ".", 2)[0])
	if err != nil || major < 20 {
		missing("node %s: want 20 or newer", v)
	}
	return bin
}

// server is `hopper serve` running as a subprocess.
type server struct {
	cmd  *exec.Cmd
	url  string
	key  string
	http *http.Client
	log  string
	done chan error
}

// startServer migrates a fresh SQLite database, creates an API key (so the server requires
// one) and starts `hopper serve` on a free loopback port, waiting until /healthz answers.
func startServer(t *testing.T, ctx context.Context) *server {
	t.Helper()
	dir := t.TempDir()
	db := filepath.Join(dir, "hopper.db")
	out, err := hopper(ctx, "migrate", "--database", db).CombinedOutput()
	require.NoError(t, err, "hopper migrate: %s", out)
	out, err = hopper(ctx, "keys", "create", "--database", db, "--name", "node-worker",
		"--scope", "work,enqueue,read", "--json").Output()
	require.NoError(t, err, "hopper keys create: %s", out)
	var key struct{ Key string }
	require.NoError(t, json.Unmarshal(out, &key), "hopper keys create: %s", out)
	require.NotEmpty(t, key.Key)

	addr := freeAddr(t)
	logPath := filepath.Join(dir, "serve.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close() // the child has its own copy
	cmd := hopper(ctx, "serve", "--addr", addr, "--database", db, "--no-echo")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())

	tr := &http.Transport{}
	s := &server{cmd: cmd, url: "http://" + addr, key: key.Key, http: &http.Client{Transport: tr, Timeout: 20 * time.Second},
		log: logPath, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		if s.cmd != nil { // the test failed before stopping it
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-s.done:
			case <-time.After(15 * time.Second):
				_ = cmd.Process.Kill()
				<-s.done
			}
		}
		tr.CloseIdleConnections()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("hopper serve's output:\n%s", b)
		}
	})

	deadline := time.Now().Add(20 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/healthz", nil)
		require.NoError(t, err)
		if res, err := s.http.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case err := <-s.done:
			s.cmd = nil
			b, _ := os.ReadFile(logPath)
			t.Fatalf("hopper serve exited before it was healthy: %v\n%s", err, b)
		case <-time.After(50 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "hopper serve not healthy within 20s")
	}
}

// stop ends the server as Ctrl-C would and requires a clean exit.
func (s *server) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(os.Interrupt))
	select {
	case err := <-s.done:
		s.cmd = nil
		require.NoError(t, err, "hopper serve's exit after SIGINT")
	case <-time.After(15 * time.Second):
		t.Fatal("hopper serve did not exit within 15s of SIGINT")
	}
}

// call makes a unary call as plain JSON over HTTP, with the API key, and decodes the answer.
func (s *server) call(t *testing.T, ctx context.Context, service, method string, req, resp any) {
	t.Helper()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/hopper.v1."+service+"/"+method, bytes.NewReader(body))
	require.NoError(t, err)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+s.key)
	res, err := s.http.Do(r)
	require.NoError(t, err, "%s/%s", service, method)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s/%s: %s", service, method, b)
	require.NoError(t, json.Unmarshal(b, resp), "%s/%s: %s", service, method, b)
}

// hopper is the hopper command: this test binary, re-executed (see TestMain).
func hopper(ctx context.Context, args ...string) *exec.Cmd {
	cmd := command(ctx, os.Args[0], []string{envRole + "=hopper"}, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	return cmd
}

// command runs in the package directory (where the .mjs files are), with env added to the
// test's, ended by SIGTERM then SIGKILL when ctx ends.
func command(ctx context.Context, bin string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func runNode(ctx context.Context, nodeBin string, env []string, args ...string) (stdout, stderr string, err error) {
	var o, e bytes.Buffer
	cmd := command(ctx, nodeBin, env, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// runWorker runs worker.mjs to its end (it stops after --max jobs) and returns its output.
func runWorker(t *testing.T, ctx context.Context, nodeBin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	began := time.Now()
	stdout, stderr, err := runNode(ctx, nodeBin, env, append([]string{"worker.mjs"}, args...)...)
	out := stdout + stderr
	require.NoError(t, err, "worker.mjs %s:\n%s", strings.Join(args, " "), out)
	t.Logf("worker.mjs %s (%s):\n%s", strings.Join(args, " "), time.Since(began).Round(time.Millisecond), out)
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// job is a Job or an ActivatedJob as protojson gives it (the fields the test looks at).
type job struct {
	ID        string `json:"id"`
	Kind      string `json:"kind"`
	Args      string `json:"args"`
	State     string `json:"state"`
	Attempt   int    `json:"attempt"`
	Result    string `json:"result"`
	LastError string `json:"lastError"`
}

type resizeArgs struct {
	Image   string `json:"image,omitempty"`
	Width   int    `json:"width"`
	Height  int    `json:"height"`
	Percent int    `json:"percent"`
}

type chargeArgs struct {
	Order  int `json:"order"`
	Amount int `json:"amount"`
}

// expectation is how a job must end: its state, and its result or its error.
type expectation struct {
	state, result, lastError string
}

// expect computes, from a job's args, what worker.mjs must make of it.
func expect(t *testing.T, kind, args string) expectation {
	t.Helper()
	switch kind {
	case "resize":
		var a resizeArgs
		require.NoError(t, json.Unmarshal([]byte(args), &a))
		return expectation{state: "completed",
			result: fmt.Sprintf(`{"width":%d,"height":%d}`, a.Width*a.Percent/100, a.Height*a.Percent/100)}
	case "charge":
		var a chargeArgs
		require.NoError(t, json.Unmarshal([]byte(args), &a))
		if a.Amount < 0 {
			return expectation{state: "failed", lastError: fmt.Sprintf("charge: amount %d is negative", a.Amount)}
		}
		return expectation{state: "completed", result: fmt.Sprintf(`{"order":%d,"charged":%d}`, a.Order, a.Amount)}
	}
	t.Fatalf("unexpected kind %q", kind)
	return expectation{}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
