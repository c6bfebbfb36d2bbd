package remote_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// served counts the requests a server gets, by procedure.
type served struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *served) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		if c.n == nil {
			c.n = map[string]int{}
		}
		c.n[r.URL.Path]++
		c.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (c *served) of(procedure string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[procedure]
}

// workAll enqueues n jobs, works them with a default remote worker in mode, each job taking
// work, and checks that each completed after exactly one attempt.
func workAll(t *testing.T, o remote.ServeOptions, mode remote.Mode, n int, work time.Duration) {
	t.Helper()
	ts, client := remote.ServeForTest(t, o)
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
		time.Sleep(work)
		return nil
	})
	w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Mode: mode, Concurrency: 20,
		LeaseDuration: time.Minute, PollWait: time.Second})
	require.NoError(t, err)
	params := make([]hopper.EnqueueParams, n)
	for i := range params {
		params[i] = hopper.EnqueueParams{Args: resize{Width: i}}
	}
	_, err = client.EnqueueMany(t.Context(), params)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	require.Eventually(t, func() bool {
		page, err := client.List(t.Context(), &hopper.ListParams{States: []hopper.JobState{hopper.StateCompleted}, Limit: n})
		require.NoError(t, err)
		return len(page.Jobs) == n
	}, 30*time.Second, 10*time.Millisecond, "every job completes")
	stoptest.Within(t, w, 10*time.Second)
	page, err := client.List(t.Context(), &hopper.ListParams{Limit: n})
	require.NoError(t, err)
	require.Len(t, page.Jobs, n)
	for _, j := range page.Jobs {
		require.Equal(t, hopper.StateCompleted, j.State)
		require.Equal(t, 1, j.Attempt, "job %s ran once", j.ID)
	}
}

// Outcomes go on a report stream when the server speaks HTTP/2, in both modes.
func TestOutcomesGoOnAReportStream(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			var c served
			workAll(t, remote.ServeOptions{Handler: c.wrap}, mode, 200, 0)
			require.Equal(t, 1, c.of(hopperv1connect.WorkerServiceReportStreamProcedure), "one stream carried every outcome")
			require.Zero(t, c.of(hopperv1connect.WorkerServiceReportProcedure))
		})
	}
}

// Behind something that speaks HTTP/1.1 only, outcomes go in Report requests: slower, the
// same result.
func TestOutcomesGoAsRequestsWithoutHTTP2(t *testing.T) {
	var c served
	workAll(t, remote.ServeOptions{Handler: c.wrap, HTTP1Only: true}, remote.Stream, 200, 0)
	require.Positive(t, c.of(hopperv1connect.WorkerServiceReportProcedure))
}

// A report stream that breaks again and again (here the server ends each after 20 ms) loses
// no outcome: the batches it did not answer go again, on a new stream or as requests, and
// no job runs twice. The jobs take 5 ms each, so that the run outlasts several streams (no-op jobs
// of 20 workers could all end within the first stream's 20 ms, which then never broke).
func TestBrokenReportStreamsLoseNoOutcome(t *testing.T) {
	var c served
	breaking := func(next http.Handler) http.Handler {
		return c.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == hopperv1connect.WorkerServiceReportStreamProcedure {
				ctx, cancel := context.WithTimeout(r.Context(), 20*time.Millisecond)
				defer cancel()
				r = r.WithContext(ctx)
			}
			next.ServeHTTP(w, r)
		}))
	}
	workAll(t, remote.ServeOptions{Handler: breaking}, remote.Stream, 500, 5*time.Millisecond)
	streams, requests := c.of(hopperv1connect.WorkerServiceReportStreamProcedure), c.of(hopperv1connect.WorkerServiceReportProcedure)
	t.Logf("streams %d, requests %d", streams, requests)
	// The first stream broke and the outcomes after it went another way: on new streams, or
	// as requests (a loaded machine's run can end while the worker still sends requests).
	require.Greater(t, streams+requests, 1, "the worker went on after the stream broke")
}
