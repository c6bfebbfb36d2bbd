package remote_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/governor"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// calls counts the worker's requests by procedure.
type calls struct {
	http.RoundTripper
	mu sync.Mutex
	n  map[string]int
}

func (c *calls) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]++
	c.mu.Unlock()
	return c.RoundTripper.RoundTrip(r)
}

func (c *calls) count(procedure string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[procedure]
}

// cpu is a governor reader whose CPU use the test sets.
type cpu struct{ v atomic.Value }

func (c *cpu) Read() (governor.Sample, error) {
	v, _ := c.v.Load().(float64)
	return governor.Sample{CPU: v, Memory: 1 << 20}, nil
}

type gate struct{ N int }

func (gate) Kind() string { return "gate" }

// Contract 15 for remote workers: while its governor holds, a worker takes no new job —
// in Poll mode it does not poll, in Stream mode it keeps its one stream and the server
// claims nothing for it — while its running jobs finish; the queue's queued jobs show as
// awaiting compute; once the governor opens the worker takes them.
func TestRemoteWorkerGovernorHoldsNewJobs(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			url, client := serve(t)
			ctx := t.Context()
			release := map[int]chan struct{}{}
			for i := range 3 {
				release[i] = make(chan struct{})
			}
			started := make(chan int, 3)
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[gate]) error {
				started <- job.Args.N
				<-release[job.Args.N]
				return nil
			})
			reader := &cpu{}
			reader.v.Store(0.0)
			gov, err := governor.New(governor.Config{MaxCPU: 0.5, Reader: reader, Clock: clock.NewFake(time.Now())})
			require.NoError(t, err)
			rt := &calls{RoundTripper: http.DefaultTransport, n: map[string]int{}}
			w, err := remote.NewGoverned(remote.Config{URL: url, Workers: ws, Mode: mode, Concurrency: 2, Queue: "gov",
				Name: "governed-" + name, PollWait: time.Minute, HTTPClient: &http.Client{Transport: rt}}, gov)
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer stoptest.Within(t, w, 10*time.Second)

			enqueue := func(n int) string {
				res, err := client.Enqueue(ctx, gate{N: n}, &hopper.InsertOpts{Queue: "gov"})
				require.NoError(t, err)
				return res.Job.ID
			}
			first, second := enqueue(0), enqueue(1)
			require.ElementsMatch(t, []int{0, 1}, []int{recvN(t, started), recvN(t, started)})

			// Busy: the governor holds, and the worker tells the server.
			reader.v.Store(1.0)
			gov.Sample()
			require.NotNil(t, gov.Hold())
			require.Eventually(t, func() bool { return rt.count("Hold") == 1 }, 10*time.Second, time.Millisecond)
			third := enqueue(2)
			close(release[0])
			close(release[1])
			waitFor(t, client, first, hopper.StateCompleted)
			waitFor(t, client, second, hopper.StateCompleted)
			require.Eventually(t, func() bool { return heldByGovernor(t, client, "gov") }, 10*time.Second,
				time.Millisecond, "the held worker is the queue's only worker: the queue is held")
			polls := rt.count("Activate")
			require.Never(t, func() bool {
				job, err := client.Get(ctx, third)
				require.NoError(t, err)
				return job.State != hopper.StateQueued
			}, 200*time.Millisecond, 10*time.Millisecond, "no new job while the governor holds")
			require.Equal(t, polls, rt.count("Activate"), "no poll while the governor holds")

			// Idle again: the governor opens and the worker takes the job.
			reader.v.Store(0.0)
			for gov.Hold() != nil {
				gov.Sample()
			}
			require.Equal(t, 2, recvN(t, started))
			close(release[2])
			waitFor(t, client, third, hopper.StateCompleted)
			require.False(t, heldByGovernor(t, client, "gov"))
			if mode == remote.Stream {
				require.Equal(t, 1, rt.count("StreamJobs"), "the stream was kept, not closed and reopened")
			}
		})
	}
}

func recvN(t *testing.T, ch chan int) int {
	t.Helper()
	select {
	case n := <-ch:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no job started")
		return -1
	}
}

func heldByGovernor(t *testing.T, c *hopper.Client, queue string) bool {
	t.Helper()
	qs, err := c.Queues(t.Context())
	require.NoError(t, err)
	for _, q := range qs {
		if q.Name == queue {
			return q.HeldByGovernor
		}
	}
	t.Fatalf("no queue %s", queue)
	return false
}
