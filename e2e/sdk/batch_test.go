//go:build sdk

package sdk

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/e2e/sdk/cases"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// batchJobs are the batch scenario's jobs, all queued before any worker runs: a group whose
// batch has one job failed alone, one with a result and the rest completing, and a group
// whose batch's handler fails every job of it.
var batchJobs = []struct{ group, c string }{
	{"g1", "ok"}, {"g1", "fail"}, {"g1", "result"}, {"g1", "ok"}, {"g1", "ok"},
	{"g2", "ok"}, {"g2", "boom"}, {"g2", "ok"},
}

func batchOpts(group string) *hopper.InsertOpts {
	return &hopper.InsertOpts{RetryPolicy: policy, MaxAttempts: 3, GroupKey: group}
}

// batchRun is what a run of batchJobs stored of each job (by its place in batchJobs) and how
// its jobs were gathered into calls (each call's jobs by place, in call order).
type batchRun struct {
	ended []ended
	calls [][]int
}

var expectedBatches struct {
	once sync.Once
	run  *batchRun
}

// inProcessBatches is what the Go engine, in process on SQLite, does with batchJobs: what
// every driver must match.
func inProcessBatches(t *testing.T) *batchRun {
	expectedBatches.once.Do(func() {
		st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: filepath.Join(t.TempDir(), "hopper.db")})
		require.NoError(t, err)
		defer st.Close()
		var mu sync.Mutex
		var calls [][]string
		ws := hopper.NewWorkers()
		hopper.AddBatchWorker[cases.BatchArgs](ws, cases.BatchHandler{Begin: func(ids []string) {
			mu.Lock()
			defer mu.Unlock()
			calls = append(calls, ids)
		}}, cases.BatchOpts)
		client, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws})
		require.NoError(t, err)
		var ids []string
		for _, j := range batchJobs {
			res, err := client.Enqueue(ctx(t), cases.BatchArgs{Case: j.c}, batchOpts(j.group))
			require.NoError(t, err)
			ids = append(ids, res.Job.ID)
		}
		require.NoError(t, client.Start(t.Context()))
		defer client.Stop(context.Background())
		run := &batchRun{}
		for _, id := range ids {
			run.ended = append(run.ended, settled(t, client, id))
		}
		mu.Lock()
		run.calls = places(ids, calls)
		mu.Unlock()
		expectedBatches.run = run
	})
	require.NotNil(t, expectedBatches.run, "the in-process run failed")
	return expectedBatches.run
}

// places is each call's jobs by their place in ids, the calls sorted by their first job.
func places(ids []string, calls [][]string) [][]int {
	out := make([][]int, len(calls))
	for i, c := range calls {
		for _, id := range c {
			out[i] = append(out[i], slices.Index(ids, id))
		}
	}
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}

// A batch kind's queued jobs reach the driver's batch handler gathered as the engine gathers
// them (several jobs a call), and each job ends as it does in process: one failed alone, one
// with a result, the rest completed; a handler's error fails every job of its batch, each
// as its own attempt.
func testBatches(t *testing.T, d driver, mode string) {
	want := inProcessBatches(t)
	require.Equal(t, [][]int{{0, 1, 2, 3, 4}, {5, 6, 7}}, want.calls, "in process: a call for each group's queued jobs")
	s := startServer(t)
	api := apiOf(t, s.url(), "")
	var ids []string
	for _, j := range batchJobs {
		ids = append(ids, enqueue(t, api, "conf", cases.BatchArgs{Case: j.c}, batchOpts(j.group)))
	}
	// The credit (or the slots) free holds both batches whole: a batch is cut to them.
	w := startWorker(t, d, workerOpts{url: s.url(), queue: "conf", mode: mode, concurrency: 8})
	for i, id := range ids {
		got, exp := settled(t, api, id), want.ended[i]
		got.HasStack, exp.HasStack = false, false // a stack is the language's own
		assert.Equal(t, exp, got, "job %d (%s, %s)", i, batchJobs[i].group, batchJobs[i].c)
	}
	require.Eventually(t, func() bool { return len(w.batches()) == len(want.calls) }, 10*time.Second, 10*time.Millisecond,
		"driver %s: a batch event for each call", d.name)
	assert.Equal(t, want.calls, places(ids, w.batches()), "the jobs of each call")
}

// batches are the jobs' ids of each batch call the driver made, from its batch lines.
func (w *worker) batches() [][]string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out [][]string
	for _, e := range w.events {
		if e.Event == "batch" {
			out = append(out, e.IDs)
		}
	}
	return out
}
