//go:build sdk

// Package sdk is the SDK conformance suite: every worker SDK's driver (the Go remote worker's,
// the TypeScript SDK's, …) runs the same cases against a real hopper serve, and what the server
// stores of each attempt must be what the in-process Go engine stores for the same handler.
// docs/development.md ("The SDK conformance suite") says how a driver is written and run.
package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/e2e/sdk/cases"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jobsAPI is what the suite asks of a client, in process or through a server.
type jobsAPI interface {
	Enqueue(ctx context.Context, args hopper.JobArgs, opts *hopper.InsertOpts) (*hopper.InsertResult, error)
	Get(ctx context.Context, id string) (*hopper.JobRow, error)
	Attempts(ctx context.Context, id string) ([]*hopper.AttemptRecord, error)
	Events(ctx context.Context, id string) ([]*hopper.Event, error)
}

// outcomeCases are the cases every driver runs in the outcome scenario; optional ones
// (panic: a Go handler's panic) run where the driver says it has them.
var outcomeCases = []string{"ok", "error", "panic", "timeout", "no-retry", "retry-after", "business",
	"fail-checkpoint", "snooze", "suspend"}

// policy makes every retry's delay exact (no jitter), so that it can be compared.
var policy = &hopper.RetryPolicy{Base: time.Hour, Multiplier: 2, Cap: 100 * time.Hour, Jitter: -1}

func optsFor(c string) *hopper.InsertOpts {
	o := &hopper.InsertOpts{RetryPolicy: policy, MaxAttempts: 3}
	if c == "timeout" {
		o.Timeout = 300 * time.Millisecond
	}
	return o
}

// ended is what an attempt's end did to its job, in the terms every SDK must agree on.
type ended struct {
	State    hopper.JobState
	Attempts int
	Outcome  hopper.Outcome
	Error    string
	HasStack bool // compared for a panic only: other errors have a stack in some languages
	Reason   string
	Delay    time.Duration // from the attempt's end to the job's next run, to the second
	// Code is the attempt's business error code, JobCode the job's.
	Code, JobCode      string
	Checkpoint, Result string
}

// settled waits for a job to leave queued and running and describes how its attempt ended.
func settled(t *testing.T, api jobsAPI, id string) ended {
	t.Helper()
	var job *hopper.JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = api.Get(ctx(t), id)
		require.NoError(t, err)
		return job.State != hopper.StateQueued && job.State != hopper.StateRunning
	}, 30*time.Second, 10*time.Millisecond, "job %s did not settle", id)
	attempts, err := api.Attempts(ctx(t), id)
	require.NoError(t, err)
	require.NotEmpty(t, attempts)
	events, err := api.Events(ctx(t), id)
	require.NoError(t, err)
	a := attempts[len(attempts)-1]
	e := ended{State: job.State, Attempts: len(attempts), Outcome: a.Outcome, Error: a.Error, HasStack: a.Stack != "",
		Reason: events[len(events)-1].Reason, Code: a.ErrorCode, JobCode: job.LastErrorCode,
		Checkpoint: string(job.Checkpoint), Result: string(job.Result)}
	if job.State == hopper.StateScheduled {
		e.Delay = job.RunAt.Sub(a.EndedAt).Round(time.Second)
	}
	return e
}

var expected struct {
	once sync.Once
	m    map[string]ended
}

// inProcess is what the Go engine, in process on SQLite, stores for each outcome case: what
// every driver must match.
func inProcess(t *testing.T) map[string]ended {
	expected.once.Do(func() {
		st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "hopper.db")})
		require.NoError(t, err)
		defer st.Close()
		ws := hopper.NewWorkers()
		hopper.AddWorker[cases.Args](ws, cases.Handler{})
		client, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws})
		require.NoError(t, err)
		require.NoError(t, client.Start(t.Context()))
		defer client.Stop(context.Background())
		m := map[string]ended{}
		for _, c := range outcomeCases {
			res, err := client.Enqueue(ctx(t), cases.Args{Case: c}, optsFor(c))
			require.NoError(t, err)
			m[c] = settled(t, client, res.Job.ID)
		}
		expected.m = m
	})
	require.NotNil(t, expected.m, "the in-process run failed")
	return expected.m
}

func apiOf(t *testing.T, url, key string) *hopperclient.Client {
	c, err := hopperclient.New(hopperclient.Config{URL: url, APIKey: key})
	require.NoError(t, err)
	return c
}

func enqueue(t *testing.T, api jobsAPI, queue string, a hopper.JobArgs, o *hopper.InsertOpts) string {
	t.Helper()
	if o == nil {
		o = &hopper.InsertOpts{}
	}
	o.Queue = queue
	res, err := api.Enqueue(ctx(t), a, o)
	require.NoError(t, err)
	return res.Job.ID
}

// TestSDKConformance runs every scenario against every driver.
func TestSDKConformance(t *testing.T) {
	ds := drivers(t)
	for _, d := range ds {
		t.Run(d.name, func(t *testing.T) {
			for _, mode := range []string{"stream", "poll"} {
				t.Run("outcomes/"+mode, func(t *testing.T) { testOutcomes(t, d, mode) })
				t.Run("restart/"+mode, func(t *testing.T) { testServerRestart(t, d, mode) })
				t.Run("kind-concurrency/"+mode, func(t *testing.T) { testKindConcurrency(t, d, mode) })
				t.Run("batch/"+mode, func(t *testing.T) { testBatches(t, d, mode) })
				t.Run("parent-results/"+mode, func(t *testing.T) { testParentResults(t, d, mode) })
				t.Run("spawn/"+mode, func(t *testing.T) { testSpawn(t, d, mode) })
			}
			t.Run("shorten", func(t *testing.T) { testShortenedLease(t, d) })
			t.Run("cancel", func(t *testing.T) { testCancelWhileRunning(t, d) })
			t.Run("revoked", func(t *testing.T) { testRevokedKey(t, d) })
			t.Run("prefetch", func(t *testing.T) { testPrefetch(t, d) })
			t.Run("drain", func(t *testing.T) { testDrain(t, d) })
		})
	}
	// The frozen-worker cases spend about 19 s each waiting out a lease and a late report,
	// their worker stopped: they run side by side, each with its own server, after the rest.
	t.Run("frozen", func(t *testing.T) {
		for _, d := range ds {
			for _, mode := range []string{"stream", "poll"} {
				t.Run(d.name+"/"+mode, func(t *testing.T) {
					t.Parallel()
					testFrozenWorker(t, d, mode)
				})
			}
		}
	})
}

// Each outcome case ends in the server as it ends in process.
func testOutcomes(t *testing.T, d driver, mode string) {
	want := inProcess(t)
	s := startServer(t)
	w := startWorker(t, d, workerOpts{url: s.url(), queue: "conf", mode: mode, concurrency: 4})
	api := apiOf(t, s.url(), "")
	for _, c := range outcomeCases {
		if c == "panic" && !w.supports(c) {
			continue
		}
		id := enqueue(t, api, "conf", cases.Args{Case: c}, optsFor(c))
		got, exp := settled(t, api, id), want[c]
		if c == "panic" {
			// A crash is worded in the language's own way (Go: "panic: boom", Python:
			// "TypeError: boom"); it carries the handler's message.
			assert.True(t, strings.HasSuffix(got.Error, "boom"), "case panic: error %q", got.Error)
			got.Error, exp.Error = "", ""
		} else {
			got.HasStack, exp.HasStack = false, false
		}
		assert.Equal(t, exp, got, "case %s", c)
	}
}

// A fan-in reads its parents' results in the order it named them, a failed parent's error
// with them, whether it reads them with a call or they came with the job
// (fetch_parent_results): the value and sum-parents cases (docs/workflows.md).
func testParentResults(t *testing.T, d driver, mode string) {
	failedWith := inProcess(t)["no-retry"].Error // the failed parent's error, as in process
	s := startServer(t)
	api := apiOf(t, s.url(), "")
	for _, fetch := range []bool{false, true} {
		queue := fmt.Sprintf("parents-%t", fetch)
		w := startWorker(t, d, workerOpts{url: s.url(), queue: queue, mode: mode, concurrency: 4, fetchParentResults: fetch})
		three := enqueue(t, api, queue, cases.Args{Case: "value", N: 3}, nil)
		bad := enqueue(t, api, queue, cases.Args{Case: "no-retry"}, nil)
		four := enqueue(t, api, queue, cases.Args{Case: "value", N: 4}, nil)
		named := []string{four, bad, three}
		child := enqueue(t, api, queue, cases.Args{Case: "sum-parents"},
			&hopper.InsertOpts{After: named, OnParentFailure: hopper.ParentRun})
		var job *hopper.JobRow
		require.Eventually(t, func() bool {
			var err error
			job, err = api.Get(ctx(t), child)
			require.NoError(t, err)
			return job.State == hopper.StateCompleted || job.State == hopper.StateFailed
		}, 30*time.Second, 10*time.Millisecond, "the fan-in did not end")
		require.Equal(t, hopper.StateCompleted, job.State, "fetch %t: %s", fetch, job.LastError)
		seen := func(id, outcome string, result string, err string) cases.ParentSeen {
			return cases.ParentSeen{ID: id, Kind: cases.Kind, Outcome: outcome, State: outcome, Error: err,
				Result: json.RawMessage(result), Finished: true}
		}
		want, err := json.Marshal(cases.Summed{Sum: 7, Parents: []cases.ParentSeen{
			seen(four, "completed", "4", ""), seen(bad, "failed", "null", failedWith), seen(three, "completed", "3", "")}})
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(job.Result), "fetch %t", fetch)
		w.signal(syscall.SIGTERM)
		require.Equal(t, 0, w.wait(30*time.Second))
	}
}

// A running job spawns jobs, and the job waiting for it waits for them too; a second spawn of
// the same idempotency keys returns the first's jobs: the spawn and sum-parents cases
// (docs/workflows.md, "Fan-out at run time").
func testSpawn(t *testing.T, d driver, mode string) {
	s := startServer(t)
	api := apiOf(t, s.url(), "")
	w := startWorker(t, d, workerOpts{url: s.url(), queue: "spawn", mode: mode, concurrency: 4})
	spawner := enqueue(t, api, "spawn", cases.Args{Case: "spawn", N: 3}, nil)
	child := enqueue(t, api, "spawn", cases.Args{Case: "sum-parents"}, &hopper.InsertOpts{After: []string{spawner}})
	var job *hopper.JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = api.Get(ctx(t), child)
		require.NoError(t, err)
		return job.State.Terminal()
	}, 30*time.Second, 10*time.Millisecond, "the merge did not end")
	require.Equal(t, hopper.StateCompleted, job.State, job.LastError)
	var got cases.Summed
	require.NoError(t, json.Unmarshal(job.Result, &got))
	require.Equal(t, 6.0, got.Sum, "the three spawned values")
	require.Len(t, got.Parents, 4, "the spawner and the three jobs it spawned")
	require.Equal(t, spawner, got.Parents[0].ID)
	require.JSONEq(t, `"spawned"`, string(got.Parents[0].Result))
	w.signal(syscall.SIGTERM)
	require.Equal(t, 0, w.wait(30*time.Second))
}

// Long jobs that report progress survive the server killed and restarted under them: one
// attempt each, their progress kept.
func testServerRestart(t *testing.T, d driver, mode string) {
	s := startServer(t)
	startWorker(t, d, workerOpts{url: s.url(), queue: "conf", mode: mode, concurrency: 4})
	api := apiOf(t, s.url(), "")
	var ids []string
	for range 3 {
		ids = append(ids, enqueue(t, api, "conf", cases.Args{Case: "progress", Ms: 4000, Every: 100}, nil))
	}
	require.Eventually(t, func() bool {
		for _, id := range ids {
			j, err := api.Get(ctx(t), id)
			require.NoError(t, err)
			if j.State != hopper.StateRunning || j.ProgressPercent == 0 {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "the jobs did not start and report progress")
	s.kill()
	time.Sleep(1500 * time.Millisecond) // the workers' calls fail meanwhile
	s.start()
	for _, id := range ids {
		e := settled(t, api, id)
		require.Equal(t, hopper.StateCompleted, e.State, "job %s: %+v", id, e)
		require.Equal(t, 1, e.Attempts, "job %s ran once", id)
		j, err := api.Get(ctx(t), id)
		require.NoError(t, err)
		require.Equal(t, 100, j.ProgressPercent, "job %s: its last progress is kept", id)
		require.Equal(t, "all steps", j.ProgressMessage)
	}
}

// A worker frozen past its lease loses the job: it is done once, by another worker, and the
// frozen worker's late outcome is refused.
func testFrozenWorker(t *testing.T, d driver, mode string) {
	s := startServer(t)
	api := apiOf(t, s.url(), "")
	frozen := startWorker(t, d, workerOpts{url: s.url(), queue: "conf", mode: mode, concurrency: 1, leaseMs: 2000})
	id := enqueue(t, api, "conf", cases.Args{Case: "sleep", Ms: 3000}, &hopper.InsertOpts{MaxRescues: 5})
	frozen.await(func(e event) bool { return e.Event == "begin" && e.ID == id }, 20*time.Second, "begin")
	frozen.signal(syscall.SIGSTOP)
	other := startWorker(t, d, workerOpts{url: s.url(), queue: "conf", mode: mode, concurrency: 1, leaseMs: 2000})
	e := settled(t, api, id)
	require.Equal(t, hopper.StateCompleted, e.State, "%+v", e)
	frozen.signal(syscall.SIGCONT)
	other.await(func(e event) bool { return e.Event == "end" && e.ID == id }, 10*time.Second, "end")
	// The frozen worker wakes up, ends its attempt and reports it: refused.
	frozen.await(func(e event) bool { return e.Event == "end" && e.ID == id }, 20*time.Second, "end")
	time.Sleep(time.Second)
	attempts, err := api.Attempts(ctx(t), id)
	require.NoError(t, err)
	require.Len(t, attempts, 2, "the frozen attempt, lost, and the other's")
	require.Equal(t, hopper.OutcomeLeaseExpired, attempts[0].Outcome)
	require.Equal(t, hopper.OutcomeOK, attempts[1].Outcome)
	j, err := api.Get(ctx(t), id)
	require.NoError(t, err)
	require.Equal(t, hopper.StateCompleted, j.State, "the late report changed nothing")
}

// A handler that shortens its lease keeps the job: renewals follow the new lease.
func testShortenedLease(t *testing.T, d driver) {
	s := startServer(t)
	startWorker(t, d, workerOpts{url: s.url(), queue: "conf", mode: "stream", concurrency: 1})
	api := apiOf(t, s.url(), "")
	id := enqueue(t, api, "conf", cases.Args{Case: "shorten", Ms: 5000, LeaseMs: 1500}, nil)
	e := settled(t, api, id)
	require.Equal(t, hopper.StateCompleted, e.State, "%+v", e)
	require.Equal(t, 1, e.Attempts, "the job was not rescued")
}

// Canceling a running job stops its handler; the attempt ends canceled.
func testCancelWhileRunning(t *testing.T, d driver) {
	s := startServer(t)
	w := startWorker(t, d, workerOpts{url: s.url(), queue: "conf", mode: "stream", concurrency: 1})
	api := apiOf(t, s.url(), "")
	id := enqueue(t, api, "conf", cases.Args{Case: "wait-cancel"}, nil)
	w.await(func(e event) bool { return e.Event == "begin" && e.ID == id }, 20*time.Second, "begin")
	_, err := api.Cancel(ctx(t), id, "conformance")
	require.NoError(t, err)
	w.await(func(e event) bool { return e.Event == "end" && e.ID == id }, 20*time.Second, "end: the handler was told")
	e := settled(t, api, id)
	require.Equal(t, hopper.StateCanceled, e.State)
	require.Equal(t, hopper.OutcomeCanceled, e.Outcome)
	// The worker goes on with other jobs.
	id = enqueue(t, api, "conf", cases.Args{Case: "ok"}, nil)
	require.Equal(t, hopper.StateCompleted, settled(t, api, id).State)
}

// A worker whose API key is revoked stops taking jobs and says why.
func testRevokedKey(t *testing.T, d driver) {
	s := startServer(t)
	admin, _, err := apiOf(t, s.url(), "").CreateKey(ctx(t), "admin", "admin")
	require.NoError(t, err)
	api := apiOf(t, s.url(), admin)
	key, info, err := api.CreateKey(ctx(t), "worker", "work")
	require.NoError(t, err)
	w := startWorker(t, d, workerOpts{url: s.url(), apiKey: key, queue: "conf", mode: "stream", concurrency: 1})
	require.Equal(t, hopper.StateCompleted, settled(t, api, enqueue(t, api, "conf", cases.Args{Case: "ok"}, nil)).State)
	_, err = api.RevokeKey(ctx(t), info.ID)
	require.NoError(t, err)
	id := enqueue(t, api, "conf", cases.Args{Case: "ok"}, nil)
	w.await(func(e event) bool { return e.Event == "refused" }, 30*time.Second, "refused")
	require.Equal(t, 3, w.wait(10*time.Second), "the driver exits 3 when its worker stops for a refused key")
	j, err := api.Get(ctx(t), id)
	require.NoError(t, err)
	require.NotEqual(t, hopper.StateCompleted, j.State, "no job was run with a revoked key")
}

// A worker with prefetch never runs more handlers at once than its concurrency.
func testPrefetch(t *testing.T, d driver) {
	s := startServer(t)
	w := startWorker(t, d, workerOpts{url: s.url(), queue: "conf", mode: "stream", concurrency: 2, prefetch: 6})
	api := apiOf(t, s.url(), "")
	var ids []string
	for range 30 {
		ids = append(ids, enqueue(t, api, "conf", cases.Args{Case: "sleep", Ms: 40}, nil))
	}
	for _, id := range ids {
		require.Equal(t, hopper.StateCompleted, settled(t, api, id).State)
	}
	require.LessOrEqual(t, w.maxRunning(), 2, "handlers running at once")
	require.Equal(t, 2, w.maxRunning(), "both slots were used")
}

// A kind's bound holds below the worker's concurrency.
func testKindConcurrency(t *testing.T, d driver, mode string) {
	s := startServer(t)
	w := startWorker(t, d, workerOpts{url: s.url(), queue: "conf", mode: mode, concurrency: 4, kindConcurrency: 2})
	api := apiOf(t, s.url(), "")
	var ids []string
	for range 16 {
		ids = append(ids, enqueue(t, api, "conf", cases.Args{Case: "sleep", Ms: 60}, nil))
	}
	for _, id := range ids {
		require.Equal(t, hopper.StateCompleted, settled(t, api, id).State)
	}
	require.Equal(t, 2, w.maxRunning(), "handlers of the kind running at once: its bound, not the concurrency")
}

// SIGTERM drains: the running jobs finish and are reported, then the driver exits 0; nothing
// is left running or lost.
func testDrain(t *testing.T, d driver) {
	s := startServer(t)
	w := startWorker(t, d, workerOpts{url: s.url(), queue: "conf", mode: "stream", concurrency: 3})
	api := apiOf(t, s.url(), "")
	var ids []string
	for range 3 {
		ids = append(ids, enqueue(t, api, "conf", cases.Args{Case: "sleep", Ms: 1500}, nil))
	}
	for _, id := range ids {
		w.await(func(e event) bool { return e.Event == "begin" && e.ID == id }, 20*time.Second, "begin")
	}
	w.signal(syscall.SIGTERM)
	require.Equal(t, 0, w.wait(30*time.Second), "the driver exits 0 after draining")
	for _, id := range ids {
		j, err := api.Get(ctx(t), id)
		require.NoError(t, err)
		require.Equal(t, hopper.StateCompleted, j.State, "job %s finished before the worker stopped", id)
	}
}
