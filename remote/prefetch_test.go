package remote_test

import (
	"context"
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

type gated struct {
	N int `json:"n"`
}

func (gated) Kind() string { return "gated" }

// turnstile runs gated jobs until their handler is let go, one job per value sent on next, and
// records the order they started in and the most that ran at once.
type turnstile struct {
	started chan int
	next    chan struct{}
	now     atomic.Int32
	most    atomic.Int32
}

func newTurnstile(ws *hopper.Workers) *turnstile {
	g := &turnstile{started: make(chan int, 100), next: make(chan struct{})}
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[gated]) error {
		n := g.now.Add(1)
		defer g.now.Add(-1)
		for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
		}
		g.started <- job.Args.N
		select {
		case <-g.next:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	return g
}

// enqueueGated enqueues jobs 1…n, in that order, and returns their ids.
func enqueueGated(t *testing.T, c *hopper.Client, n int) []string {
	ids := make([]string, n)
	for i := range n {
		res, err := c.Enqueue(t.Context(), gated{N: i + 1}, nil)
		require.NoError(t, err)
		ids[i] = res.Job.ID
	}
	return ids
}

// countState counts the jobs of ids in state.
func countState(t *testing.T, c *hopper.Client, ids []string, state hopper.JobState) int {
	n := 0
	for _, id := range ids {
		j, err := c.Get(t.Context(), id)
		require.NoError(t, err)
		if j.State == state {
			n++
		}
	}
	return n
}

// prefetching is a Stream-mode worker whose handler is a turnstile, started after jobs 1…n
// were enqueued.
type prefetching struct {
	client *hopper.Client
	g      *turnstile
	ids    []string
	w      *remote.Worker
}

// startPrefetching enqueues n gated jobs and starts a worker on cfg (URL and Workers set
// here), with gov as its resource governor when not nil.
func startPrefetching(t *testing.T, n int, cfg remote.Config, gov *governor.Governor) *prefetching {
	return startPrefetchingOn(t, n, cfg, gov, nil)
}

// startPrefetchingOn is startPrefetching with the server, its store and the worker on clk (nil:
// the wall clock).
func startPrefetchingOn(t *testing.T, n int, cfg remote.Config, gov *governor.Governor, clk *clock.Fake) *prefetching {
	url, client := serveOn(t, clk)
	ws := hopper.NewWorkers()
	p := &prefetching{client: client, g: newTurnstile(ws)}
	p.ids = enqueueGated(t, client, n)
	cfg.URL, cfg.Workers = url, ws
	var err error
	if clk != nil {
		p.w, err = remote.NewOnClockGoverned(cfg, clk, gov)
	} else if gov != nil {
		p.w, err = remote.NewGoverned(cfg, gov)
	} else {
		p.w, err = remote.New(cfg)
	}
	require.NoError(t, err)
	require.NoError(t, p.w.Start(context.Background()))
	return p
}

// waitRunning waits until n of the jobs are running in the store: started, or claimed for the
// worker and waiting in it.
func (p *prefetching) waitRunning(t *testing.T, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return countState(t, p.client, p.ids, hopper.StateRunning) == n },
		5*time.Second, 10*time.Millisecond, "%d jobs running", n)
}

// A worker with Prefetch holds Concurrency+Prefetch jobs (its stream's credit), runs no more
// than Concurrency at once, and starts the others, in the order they came, as slots free.
func TestPrefetchHoldsJobsBeyondConcurrency(t *testing.T) {
	p := startPrefetching(t, 7, remote.Config{Concurrency: 2, Prefetch: 3, LeaseDuration: time.Hour}, nil)
	defer stoptest.Within(t, p.w, 10*time.Second)
	client, g, ids := p.client, p.g, p.ids

	require.ElementsMatch(t, []int{1, 2}, []int{<-g.started, <-g.started}, "the first two take the slots")
	p.waitRunning(t, 5) // two run and three wait in the worker, all claimed for it
	require.Equal(t, 2, countState(t, client, ids, hopper.StateQueued))
	select {
	case n := <-g.started:
		t.Fatalf("job %d started while both slots were busy", n)
	// Real time: that nothing happens can only be seen by waiting a moment (a broken
	// rule shows within it; a slow machine can only make the check pass, never fail).
	case <-time.After(100 * time.Millisecond):
	}

	for want := 3; want <= 7; want++ {
		g.next <- struct{}{}
		require.Equal(t, want, <-g.started, "the job that waited longest takes the freed slot")
		// The freed credit brings the next job: wait until it is claimed before a slot frees
		// again. Two claims of one stream may be in flight at once, and jobs that come back
		// in two claims arrive in either order.
		done := want - 2
		require.Eventually(t, func() bool {
			return countState(t, client, ids, hopper.StateCompleted) == done &&
				countState(t, client, ids, hopper.StateRunning) == min(5, len(ids)-done)
		}, 5*time.Second, 10*time.Millisecond, "%d jobs completed, the freed credit's job claimed", done)
	}
	g.next <- struct{}{}
	g.next <- struct{}{}
	for _, id := range ids {
		j := waitFor(t, client, id, hopper.StateCompleted)
		require.Equal(t, 1, j.Attempt)
	}
	require.Equal(t, int32(2), g.most.Load(), "never more than Concurrency handlers at once")
}

// The leases of jobs waiting for a slot are renewed with the running jobs': a job that waits
// longer than its lease is still the worker's. The server and the worker run on one fake
// clock, moved a renewal's cadence at a time.
func TestPrefetchedJobsKeepTheirLeases(t *testing.T) {
	const lease = time.Second
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p := startPrefetchingOn(t, 2, remote.Config{Concurrency: 1, Prefetch: 1, LeaseDuration: lease}, nil, clk)
	defer stoptest.Within(t, p.w, 10*time.Second)
	client, g, ids := p.client, p.g, p.ids

	require.Equal(t, 1, <-g.started)
	p.waitRunning(t, 2)
	waiting, err := client.Get(t.Context(), ids[1])
	require.NoError(t, err)
	first := waiting.LeaseExpiresAt
	for range 6 { // two leases
		p.renewal(t, clk, lease/3)
	}
	waiting, err = client.Get(t.Context(), ids[1])
	require.NoError(t, err)
	require.Equal(t, hopper.StateRunning, waiting.State)
	require.True(t, waiting.LeaseExpiresAt.After(first.Add(lease)),
		"the waiting job's lease was renewed: it expired at %s, now at %s", first, waiting.LeaseExpiresAt)

	g.next <- struct{}{}
	require.Equal(t, 2, <-g.started)
	g.next <- struct{}{}
	for _, id := range ids {
		j := waitFor(t, client, id, hopper.StateCompleted)
		require.Equal(t, 0, j.Rescues)
	}
}

// renewal moves clk on by cadence, the worker's renewals' (a third of the lease), and waits
// until the renewal it brings has moved the lease of every job running for the worker (the
// running one and those waiting for a slot), each still running.
func (p *prefetching) renewal(t *testing.T, clk *clock.Fake, cadence time.Duration) {
	t.Helper()
	before := map[string]time.Time{}
	for _, id := range p.ids {
		j, err := p.client.Get(t.Context(), id)
		require.NoError(t, err)
		if j.State == hopper.StateRunning {
			before[id] = j.LeaseExpiresAt
		}
	}
	clk.Advance(cadence)
	require.Eventually(t, func() bool {
		for id, was := range before {
			j, err := p.client.Get(t.Context(), id)
			require.NoError(t, err)
			if j.State != hopper.StateRunning || !j.LeaseExpiresAt.After(was) {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "the worker renews the leases of its jobs, waiting ones too")
}

// A job canceled while it waits for a slot never starts, and its credit comes back: the next
// job is pushed and takes the slot. The server and the worker run on one fake clock: the
// renewal after the cancel finds the waiting job's lease gone.
func TestAPrefetchedJobCanceledWhileItWaitsNeverStarts(t *testing.T) {
	const lease = time.Second
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	p := startPrefetchingOn(t, 2, remote.Config{Concurrency: 1, Prefetch: 1, LeaseDuration: lease}, nil, clk)
	defer stoptest.Within(t, p.w, 10*time.Second)
	client, g, ids := p.client, p.g, p.ids

	require.Equal(t, 1, <-g.started)
	p.waitRunning(t, 2)
	_, err := client.Cancel(t.Context(), ids[1])
	require.NoError(t, err)
	// The renewal after the cancel finds the waiting job's lease gone; a renewal after that
	// one shows the worker has taken in its answer (it renews one batch at a time).
	p.renewal(t, clk, lease/3)
	p.renewal(t, clk, lease/3)
	third, err := client.Enqueue(t.Context(), gated{N: 3}, nil)
	require.NoError(t, err)
	g.next <- struct{}{}
	require.Equal(t, 3, <-g.started, "the canceled job is skipped; its credit brings the next")
	g.next <- struct{}{}
	waitFor(t, client, third.Job.ID, hopper.StateCompleted)
	require.Equal(t, hopper.StateCanceled, waitFor(t, client, ids[1], hopper.StateCanceled).State)
}

// Jobs still waiting for a slot when the worker stops go back to their queue at once, their
// attempts given back; the running job finishes.
func TestStopReleasesPrefetchedJobs(t *testing.T) {
	p := startPrefetching(t, 3, remote.Config{Concurrency: 1, Prefetch: 2, LeaseDuration: time.Hour}, nil)
	client, g, ids := p.client, p.g, p.ids

	require.Equal(t, 1, <-g.started)
	p.waitRunning(t, 3)
	stopped := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		stopped <- p.w.Stop(ctx)
	}()
	require.Eventually(t, func() bool { return p.w.Declined() == 2 }, 10*time.Second, time.Millisecond,
		"Stop has begun: it keeps the waiting jobs, to release, and waits for the running one")
	g.next <- struct{}{}
	require.NoError(t, <-stopped)

	require.Equal(t, hopper.StateCompleted, waitFor(t, client, ids[0], hopper.StateCompleted).State)
	for _, id := range ids[1:] {
		j := waitFor(t, client, id, hopper.StateQueued)
		require.Equal(t, 0, j.Attempt, "the attempt is given back")
		require.Equal(t, 0, j.Rescues, "a worker that stops is not a lost worker")
	}
	select {
	case n := <-g.started:
		t.Fatalf("job %d started after Stop", n)
	default:
	}
}

// While the resource governor holds, a freed slot starts no waiting job: they go back to
// their queue, attempt unspent, and the worker takes them again once it is let go.
func TestPrefetchedJobsGoBackWhileTheGovernorHolds(t *testing.T) {
	reader := &cpu{}
	reader.v.Store(0.0)
	gov, err := governor.New(governor.Config{MaxCPU: 0.5, Reader: reader, Clock: clock.NewFake(time.Now())})
	require.NoError(t, err)
	p := startPrefetching(t, 3, remote.Config{Concurrency: 1, Prefetch: 2, LeaseDuration: time.Hour}, gov)
	defer stoptest.Within(t, p.w, 10*time.Second)
	client, g, ids := p.client, p.g, p.ids

	require.Equal(t, 1, <-g.started)
	p.waitRunning(t, 3)
	reader.v.Store(1.0)
	gov.Sample()
	require.NotNil(t, gov.Hold())
	g.next <- struct{}{}
	for _, id := range ids[1:] {
		j := waitFor(t, client, id, hopper.StateQueued)
		require.Equal(t, 0, j.Attempt, "the attempt is given back")
	}
	select {
	case n := <-g.started:
		t.Fatalf("job %d started while the governor held", n)
	// Real time: that nothing happens can only be seen by waiting a moment (a broken
	// rule shows within it; a slow machine can only make the check pass, never fail).
	case <-time.After(100 * time.Millisecond):
	}

	reader.v.Store(0.0)
	for gov.Hold() != nil {
		gov.Sample()
	}
	require.Equal(t, 2, <-g.started, "let go, the worker takes them again")
	g.next <- struct{}{}
	require.Equal(t, 3, <-g.started)
	g.next <- struct{}{}
	for _, id := range ids {
		waitFor(t, client, id, hopper.StateCompleted)
	}
}

func TestPrefetchRefusesBadConfig(t *testing.T) {
	ws := hopper.NewWorkers()
	newTurnstile(ws)
	for name, cfg := range map[string]remote.Config{
		"negative":      {Prefetch: -1},
		"poll mode":     {Prefetch: 1, Mode: remote.Poll},
		"over a credit": {Concurrency: 900, Prefetch: 101},
	} {
		cfg.URL, cfg.Workers = "http://x", ws
		_, err := remote.New(cfg)
		require.ErrorContains(t, err, "Prefetch", name)
	}
	_, err := remote.New(remote.Config{URL: "http://x", Workers: ws, Concurrency: 900, Prefetch: 100})
	require.NoError(t, err, "a credit of 1,000")
}
