package remote_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// A worker with KindConcurrency {"block": 2} runs at most 2 block jobs at once while its
// other slots run resize jobs, in either mode, and takes no block job it cannot run: with
// both block slots busy the other block jobs stay queued on the server (a poll leaves the
// kind out; a stream asks the server to push no more). Once they end, the rest start.
func TestKindConcurrencyInARemoteWorker(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string]remote.Mode{"Poll": remote.Poll, "Stream": remote.Stream} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testKindConcurrency(t, mode)
		})
	}
}

func testKindConcurrency(t *testing.T, mode remote.Mode) {
	ts, client := remote.ServeForTest(t, remote.ServeOptions{})
	var mu sync.Mutex
	running, peak := map[string]int{}, map[string]int{}
	started, release := make(chan string, 100), make(chan struct{})
	work := func(kind string) {
		mu.Lock()
		running[kind]++
		peak[kind] = max(peak[kind], running[kind])
		mu.Unlock()
		started <- kind
		<-release
		mu.Lock()
		running[kind]--
		mu.Unlock()
	}
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[block]) error { work("block"); return nil })
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error { work("resize"); return nil })
	w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Mode: mode, Concurrency: 6,
		KindConcurrency: map[string]int{"block": 2}})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)

	var batch []hopper.EnqueueParams
	for range 6 {
		batch = append(batch, hopper.EnqueueParams{Args: block{}})
	}
	for range 4 {
		batch = append(batch, hopper.EnqueueParams{Args: resize{}})
	}
	res, err := client.EnqueueMany(t.Context(), batch)
	require.NoError(t, err)
	got := map[string]int{}
	for range 6 {
		got[<-started]++
	}
	require.Equal(t, map[string]int{"block": 2, "resize": 4}, got)
	runningBlock, err := client.List(t.Context(), &hopper.ListParams{States: []hopper.JobState{hopper.StateRunning}, Kinds: []string{"block"}})
	require.NoError(t, err)
	require.Len(t, runningBlock.Jobs, 2, "no block job is claimed beyond the kind's room")
	close(release)
	for _, r := range res {
		waitFor(t, client, r.Job.ID, hopper.StateCompleted)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 2, peak["block"])
}

func TestKindConcurrencyRefusesBadValues(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[block]) error { return nil })
	many := map[string]int{}
	for i := range workerapi.MaxStreamKindCaps + 1 {
		many[fmt.Sprint("k", i)] = 1
	}
	for _, cfg := range []remote.Config{
		{Mode: remote.Poll, KindConcurrency: map[string]int{"block": 0}},
		{Mode: remote.Stream, KindConcurrency: map[string]int{"block": 0}},
		{Mode: remote.Poll, KindConcurrency: map[string]int{"other": 1}},
		{Mode: remote.Stream, KindConcurrency: map[string]int{"other": 1}},
	} {
		cfg.URL, cfg.Workers = "http://127.0.0.1:1", ws
		_, err := remote.New(cfg)
		require.ErrorContains(t, err, "Config.KindConcurrency")
	}
	_, err := remote.New(remote.Config{URL: "http://127.0.0.1:1", Workers: ws, Mode: remote.Stream, KindConcurrency: many})
	require.ErrorContains(t, err, "a stream caps at most 64")
	_, err = remote.New(remote.Config{URL: "http://127.0.0.1:1", Workers: ws, Mode: remote.Stream,
		KindConcurrency: map[string]int{"block": 1}})
	require.NoError(t, err, "Stream mode takes caps")
}
