package remote_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
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
	k := startKindWorker(t, ts.URL, mode, 6)
	res := k.enqueue(t, client, 6, 4)
	got := map[string]int{}
	for range 6 {
		got[<-k.started]++
	}
	require.Equal(t, map[string]int{"block": 2, "resize": 4}, got)
	runningBlock, err := client.List(t.Context(), &hopper.ListParams{States: []hopper.JobState{hopper.StateRunning}, Kinds: []string{"block"}})
	require.NoError(t, err)
	require.Len(t, runningBlock.Jobs, 2, "no block job is claimed beyond the kind's room")
	k.finish(t, client, res)
}

// A worker in Stream mode counts its running jobs per kind too: a server that ignores the
// stream's kind_concurrency (one older than the field; here a handler strips it) pushes a
// resize job and 6 block jobs to a worker of 7 slots that caps block jobs at 2. It runs the
// resize job and 2 block jobs; the resize job's end starts no block job (the kind has no
// room, though slots are free); the others run as block jobs end.
func TestKindConcurrencyGuardsAStreamThatIgnoresIt(t *testing.T) {
	t.Parallel()
	ts, client := remote.ServeForTest(t, remote.ServeOptions{Handler: ignoreKindCaps(t)})
	k := startKindWorker(t, ts.URL, remote.Stream, 7)
	res := k.enqueue(t, client, 6, 1)
	got := map[string]int{}
	for range 3 {
		got[<-k.started]++
	}
	require.Equal(t, map[string]int{"block": 2, "resize": 1}, got)
	require.Eventually(t, func() bool {
		running, err := client.List(t.Context(), &hopper.ListParams{States: []hopper.JobState{hopper.StateRunning}, Kinds: []string{"block"}})
		require.NoError(t, err)
		return len(running.Jobs) == 6
	}, 10*time.Second, 5*time.Millisecond, "the server pushes every block job: it ignores the cap")
	k.let("resize")
	waitFor(t, client, res[6].Job.ID, hopper.StateCompleted)
	k.mu.Lock()
	require.Equal(t, 2, k.running["block"], "the others wait for a block job to end")
	k.mu.Unlock()
	k.finish(t, client, res)
}

// ignoreKindCaps makes the server ignore StreamJobsRequest.kind_concurrency, as a server
// older than the field does: it strips the field from the request (one enveloped message).
func ignoreKindCaps(t *testing.T) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/StreamJobs") {
				body, err := io.ReadAll(r.Body)
				require.NoError(t, err)
				require.Equal(t, byte(0), body[0], "an uncompressed message")
				var req hopperv1.StreamJobsRequest
				require.NoError(t, proto.Unmarshal(body[5:], &req))
				req.KindConcurrency = nil
				msg, err := proto.Marshal(&req)
				require.NoError(t, err)
				body = append(binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg))), msg...)
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// kindWorker is a worker with KindConcurrency {"block": 2} whose handlers count the jobs of
// each kind running, and block until their kind is let go.
type kindWorker struct {
	mu      sync.Mutex
	running map[string]int
	peak    map[string]int
	started chan string
	release map[string]chan struct{}
}

func startKindWorker(t *testing.T, url string, mode remote.Mode, concurrency int) *kindWorker {
	t.Helper()
	k := &kindWorker{running: map[string]int{}, peak: map[string]int{}, started: make(chan string, 100),
		release: map[string]chan struct{}{"block": make(chan struct{}), "resize": make(chan struct{})}}
	work := func(kind string) {
		k.mu.Lock()
		k.running[kind]++
		k.peak[kind] = max(k.peak[kind], k.running[kind])
		k.mu.Unlock()
		k.started <- kind
		<-k.release[kind]
		k.mu.Lock()
		k.running[kind]--
		k.mu.Unlock()
	}
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[block]) error { work("block"); return nil })
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error { work("resize"); return nil })
	w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: mode, Concurrency: concurrency,
		KindConcurrency: map[string]int{"block": 2}})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() { stoptest.Within(t, w, 10*time.Second) })
	return k
}

// enqueue enqueues blocks block jobs, then resizes resize jobs.
func (k *kindWorker) enqueue(t *testing.T, client *hopper.Client, blocks, resizes int) []*hopper.InsertResult {
	t.Helper()
	var batch []hopper.EnqueueParams
	for range blocks {
		batch = append(batch, hopper.EnqueueParams{Args: block{}})
	}
	for range resizes {
		batch = append(batch, hopper.EnqueueParams{Args: resize{}})
	}
	res, err := client.EnqueueMany(t.Context(), batch)
	require.NoError(t, err)
	return res
}

// let lets the handlers of kind return, once.
func (k *kindWorker) let(kind string) {
	select {
	case <-k.release[kind]:
	default:
		close(k.release[kind])
	}
}

// finish lets every handler return, waits for every job to complete and checks that no more
// than 2 block jobs ever ran at once.
func (k *kindWorker) finish(t *testing.T, client *hopper.Client, res []*hopper.InsertResult) {
	t.Helper()
	k.let("block")
	k.let("resize")
	for _, r := range res {
		waitFor(t, client, r.Job.ID, hopper.StateCompleted)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	require.Equal(t, 2, k.peak["block"])
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
