package remote_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/governor"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

// gatedPolls holds each Activate at the server's door until the test lets it in, and tells
// the test what it asked for. Once opened, it holds none; while failing, it answers each
// UNAVAILABLE at once. It counts the polls, and the long polls (request_timeout > 0), inside
// the server.
type gatedPolls struct {
	polls   chan *gatedPoll
	open    atomic.Bool
	failing atomic.Bool
	failed  atomic.Int64 // polls answered UNAVAILABLE
	inside  atomic.Int64 // polls inside the server now, long or not
	waiting atomic.Int64 // long polls inside the server now
	most    atomic.Int64 // most long polls inside the server at once
}

type gatedPoll struct {
	req  *hopperv1.ActivateRequest
	let  chan struct{}
	done chan struct{} // closed once the server has answered
}

func (g *gatedPolls) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/Activate") {
			next.ServeHTTP(w, r)
			return
		}
		if g.failing.Load() {
			g.failed.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, `{"code":"unavailable","message":"job store unavailable; retry later"}`)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req := &hopperv1.ActivateRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		g.inside.Add(1)
		defer g.inside.Add(-1)
		if req.GetRequestTimeout().AsDuration() > 0 {
			now := g.waiting.Add(1)
			defer g.waiting.Add(-1)
			for m := g.most.Load(); now > m && !g.most.CompareAndSwap(m, now); m = g.most.Load() {
			}
		}
		if g.open.Load() {
			next.ServeHTTP(w, r)
			return
		}
		p := &gatedPoll{req: req, let: make(chan struct{}), done: make(chan struct{})}
		defer close(p.done)
		g.polls <- p
		select {
		case <-p.let:
		case <-r.Context().Done():
			return
		}
		next.ServeHTTP(w, r)
	})
}

// next is the next poll, which must ask for maxJobs jobs, ahead of them beyond free slots.
func (g *gatedPolls) next(t *testing.T, maxJobs, ahead int32) *gatedPoll {
	t.Helper()
	select {
	case p := <-g.polls:
		require.Equal(t, maxJobs, p.req.GetMaxJobs(), "max_jobs")
		require.Equal(t, ahead, p.req.GetAhead(), "ahead")
		return p
	case <-time.After(10 * time.Second):
		t.Fatalf("no poll for %d jobs (%d ahead)", maxJobs, ahead)
		return nil
	}
}

// answer lets the poll through and waits for the server's answer.
func (p *gatedPoll) answer(t *testing.T) {
	t.Helper()
	close(p.let)
	<-p.done
}

type seq struct{ N int }

func (seq) Kind() string { return "seq" }

// pollRig is a worker in Poll mode with two slots on a server whose polls wait at the door
// (gatedPolls), and eight jobs seq{1}…seq{8} whose handlers run until the test ends them.
type pollRig struct {
	t       *testing.T
	gate    *gatedPolls
	client  *hopper.Client
	clk     *clock.Fake
	w       *remote.Worker
	ids     map[int]string
	started chan int
	most    atomic.Int64 // most handlers running at once
	mu      sync.Mutex
	ends    map[int]chan struct{}
	closed  map[int]bool
}

func newPollRig(t *testing.T, cfg remote.Config, gov *governor.Governor) *pollRig {
	r := &pollRig{t: t, gate: &gatedPolls{polls: make(chan *gatedPoll, 4)}, clk: clock.NewFake(time.Now()),
		ids: map[int]string{}, started: make(chan int, 8), ends: map[int]chan struct{}{}, closed: map[int]bool{}}
	ts, client := remote.ServeForTest(t, remote.ServeOptions{Handler: r.gate.wrap})
	r.client = client
	var specs []hopper.EnqueueParams
	for n := 1; n <= 8; n++ {
		specs = append(specs, hopper.EnqueueParams{Args: seq{N: n}})
	}
	res, err := client.EnqueueMany(t.Context(), specs)
	require.NoError(t, err)
	for i, j := range res {
		r.ids[i+1] = j.Job.ID
	}
	var running atomic.Int64
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[seq]) error {
		now := running.Add(1)
		for m := r.most.Load(); now > m && !r.most.CompareAndSwap(m, now); m = r.most.Load() {
		}
		defer running.Add(-1)
		r.started <- job.Args.N
		<-r.end(job.Args.N)
		return nil
	})
	cfg.URL, cfg.Workers, cfg.Mode, cfg.Concurrency, cfg.Name, cfg.PollWait = ts.URL, ws, remote.Poll, 2, "poller", time.Minute
	r.w, err = remote.NewOnClockGoverned(cfg, r.clk, gov)
	require.NoError(t, err)
	require.NoError(t, r.w.Start(context.Background()))
	t.Cleanup(func() {
		for n := 1; n <= 8; n++ { // on a failure, too: the handlers return, so Stop can finish
			r.ended(n)
		}
		r.openGate()
		stoptest.Within(t, r.w, 10*time.Second)
	})
	return r
}

func (r *pollRig) end(n int) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ends[n] == nil {
		r.ends[n] = make(chan struct{})
	}
	return r.ends[n]
}

// ended lets job n's handler return.
func (r *pollRig) ended(n int) {
	ch := r.end(n)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.closed[n] {
		r.closed[n] = true
		close(ch)
	}
}

// startedNext requires job want to start next.
func (r *pollRig) startedNext(want int) {
	r.t.Helper()
	select {
	case n := <-r.started:
		require.Equal(r.t, want, n, "jobs start in claim order")
	case <-time.After(10 * time.Second):
		r.t.Fatalf("job %d never started", want)
	}
}

// notStarted requires no job to start for a moment.
func (r *pollRig) notStarted() {
	r.t.Helper()
	select {
	case n := <-r.started:
		r.t.Fatalf("job %d started on no free slot", n)
	// Real time: that nothing happens can only be seen by waiting a moment (a broken
	// rule shows within it; a slow machine can only make the check pass, never fail).
	case <-time.After(50 * time.Millisecond):
	}
}

// openGate lets every poll in from now on.
func (r *pollRig) openGate() {
	if r.gate.open.Swap(true) {
		return
	}
	go func() {
		for {
			select {
			case p := <-r.gate.polls:
				close(p.let)
			case <-r.t.Context().Done():
				return
			}
		}
	}()
}

// toWaiting drives the worker until jobs 4 and 5 run and job 6, claimed ahead, waits for a
// slot: two polls for the free slots, a second one in flight while the first is (the last
// came back full), then one that asks ahead for the job that ended during a round trip.
func (r *pollRig) toWaiting() {
	t := r.t
	r.gate.next(t, 2, 0).answer(t) // nothing ended yet: free slots only
	require.ElementsMatch(t, []int{1, 2}, []int{<-r.started, <-r.started})
	r.ended(1)
	p2 := r.gate.next(t, 1, 0)
	r.ended(2) // ends during p2's round trip; p1 came back full, so a second poll goes out
	p3 := r.gate.next(t, 1, 0)
	p2.answer(t)
	r.startedNext(3)
	r.ended(3)
	// One job ended during p2's round trip: the next poll asks for one ahead.
	p4 := r.gate.next(t, 2, 1)
	p4.answer(t) // jobs 4 and 5 start on the two free slots: p3 holds none while it is out
	require.ElementsMatch(t, []int{4, 5}, []int{<-r.started, <-r.started})
	p3.answer(t) // job 6 waits for a slot
	r.notStarted()
}

// givenBack requires job n back in its queue, its attempt unspent, released for why.
func (r *pollRig) givenBack(n int, why string) {
	r.t.Helper()
	waitFor(r.t, r.client, r.ids[n], hopper.StateQueued)
	job, err := r.client.Get(r.t.Context(), r.ids[n])
	require.NoError(r.t, err)
	require.Equal(r.t, 0, job.Attempt, "its attempt is given back")
	require.Contains(r.t, job.LastError, why)
}

// A polling worker claims ahead (docs/workers.md "Claiming ahead"): after a poll that came
// back full, the next asks beyond its free slots for the jobs that ended during that poll's
// round trip; those wait in the worker and start in claim order as slots free, never more at
// once than Concurrency, and one that waits too long goes back to its queue, its attempt
// unspent, to be worked later.
func TestPollClaimsAhead(t *testing.T) {
	r := newPollRig(t, remote.Config{}, nil)
	r.toWaiting()
	// Job 6 has waited the longest it may: it goes back to its queue, attempt unspent.
	r.clk.Advance(time.Second)
	r.givenBack(6, "claimed ahead, no slot freed for it within 1s")

	r.openGate()
	for n := 4; n <= 8; n++ {
		r.ended(n)
	}
	for n := 1; n <= 8; n++ {
		waitFor(t, r.client, r.ids[n], hopper.StateCompleted)
	}
	require.LessOrEqual(t, r.most.Load(), int64(2), "never more handlers than Concurrency")
}

// What a polling worker claimed ahead goes back to its queue at once when the worker stops,
// and when its resource governor starts to hold.
func TestPollGivesBackWhatItClaimedAhead(t *testing.T) {
	t.Run("stop", func(t *testing.T) {
		r := newPollRig(t, remote.Config{}, nil)
		r.toWaiting()
		stopped := make(chan error, 1)
		go func() { // Stop waits for jobs 4 and 5, which hold the slots job 6 waits for
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			stopped <- r.w.Stop(ctx)
		}()
		r.givenBack(6, "worker stopping")
		r.ended(4)
		r.ended(5)
		require.NoError(t, <-stopped)
		r.notStarted()
	})
	t.Run("governed", func(t *testing.T) {
		reader := &cpu{}
		reader.v.Store(0.0)
		gov, err := governor.New(governor.Config{MaxCPU: 0.5, Reader: reader, Clock: clock.NewFake(time.Now())})
		require.NoError(t, err)
		r := newPollRig(t, remote.Config{}, gov)
		r.toWaiting()
		reader.v.Store(1.0)
		gov.Sample()
		require.NotNil(t, gov.Hold())
		r.givenBack(6, "the resource governor holds")
		r.ended(4)
		r.notStarted()
		select {
		case p := <-r.gate.polls:
			t.Fatalf("a poll for %d jobs while the governor holds", p.req.GetMaxJobs())
		// Real time: that nothing happens can only be seen by waiting a moment (a broken
		// rule shows within it; a slow machine can only make the check pass, never fail).
		case <-time.After(100 * time.Millisecond):
		}
	})
}

// With NoClaimAhead, or several queues (the server claims ahead for a single queue only), a
// polling worker asks for its free slots only.
func TestPollClaimsAheadOff(t *testing.T) {
	for name, cfg := range map[string]remote.Config{
		"NoClaimAhead": {ClaimAhead: hopper.NoClaimAhead},
		"two queues":   {Queues: []string{"default", "other"}},
	} {
		t.Run(name, func(t *testing.T) {
			r := newPollRig(t, cfg, nil)
			r.gate.next(t, 2, 0).answer(t)
			require.ElementsMatch(t, []int{1, 2}, []int{<-r.started, <-r.started})
			r.ended(1)
			p2 := r.gate.next(t, 1, 0)
			r.ended(2)
			p3 := r.gate.next(t, 1, 0)
			p2.answer(t)
			r.startedNext(3)
			r.ended(3)
			r.gate.next(t, 1, 0).answer(t) // a job ended during p2's round trip: still none ahead
			r.startedNext(4)
			p3.answer(t)
			r.startedNext(5)
		})
	}
	for _, n := range []int{1001, hopper.NoClaimAhead - 1} {
		_, err := remote.New(remote.Config{URL: "http://127.0.0.1:1", Workers: hopper.NewWorkers(), ClaimAhead: n})
		require.ErrorContains(t, err, "Config.ClaimAhead", n)
	}
}

// A polling worker whose polls fail backs off (on its clock) instead of polling again at once.
func TestPollBacksOffAfterAFailedPoll(t *testing.T) {
	gate := &gatedPolls{polls: make(chan *gatedPoll, 4)}
	gate.open.Store(true)
	gate.failing.Store(true)
	ts, _ := remote.ServeForTest(t, remote.ServeOptions{Handler: gate.wrap})
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[seq]) error { return nil })
	clk := clock.NewFake(time.Now())
	w, err := remote.NewOnClock(remote.Config{URL: ts.URL, Workers: ws, Mode: remote.Poll, Concurrency: 4,
		Name: "backoff", PollWait: time.Minute}, clk)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)
	// Once its poll has failed, the worker waits on its clock: its lease keeper, and its poll
	// loop for the backoff. A loop that polled again at once would not wait on it.
	backingOff := func() {
		t.Helper()
		require.Eventually(t, func() bool { return clk.Pending() == 2 }, 10*time.Second, time.Millisecond,
			"the poll loop waits on the clock for its backoff")
	}
	require.Eventually(t, func() bool { return gate.failed.Load() == 1 }, 10*time.Second, time.Millisecond)
	backingOff()
	require.Equal(t, int64(1), gate.failed.Load(), "no second poll before the backoff has passed")
	for i := int64(2); i <= 4; i++ {
		clk.Advance(time.Minute)
		require.Eventually(t, func() bool { return gate.failed.Load() == i }, 10*time.Second, time.Millisecond,
			"one poll after each backoff")
		backingOff()
		require.Equal(t, i, gate.failed.Load())
	}
}

// On an empty queue a polling worker waits with one long poll, even when its last poll came
// back full (jobs trickle in one at a time): a second poll in flight takes what is ready and
// returns.
func TestPollWaitsOnAnEmptyQueueWithOneLongPoll(t *testing.T) {
	gate := &gatedPolls{polls: make(chan *gatedPoll, 4)}
	gate.open.Store(true)
	ts, client := remote.ServeForTest(t, remote.ServeOptions{Handler: gate.wrap})
	ws := hopper.NewWorkers()
	next, done := make(chan struct{}), make(chan int, 64)
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[seq]) error {
		select {
		case <-next: // the test ends them one at a time
		case <-ctx.Done():
			return ctx.Err()
		}
		done <- job.Args.N
		return nil
	})
	w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Mode: remote.Poll, Concurrency: 8,
		Name: "trickle", PollWait: time.Minute})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)
	for round := range 3 {
		var specs []hopper.EnqueueParams
		for n := 1; n <= 8; n++ {
			specs = append(specs, hopper.EnqueueParams{Args: seq{N: n}})
		}
		res, err := client.EnqueueMany(t.Context(), specs)
		require.NoError(t, err)
		for range 8 {
			select {
			case next <- struct{}{}:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: a job never ran", round)
			}
			var n int
			select {
			case n = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("round %d: a job never ended", round)
			}
			// Its outcome is in: the worker has counted its slot free, and polls for it.
			waitFor(t, client, res[n-1].Job.ID, hopper.StateCompleted)
		}
		// The polls sent as the jobs ended come back, or wait: in the end only one long poll
		// is inside the server.
		require.Eventually(t, func() bool { return gate.inside.Load() == 1 && gate.waiting.Load() == 1 },
			10*time.Second, time.Millisecond, "round %d: one long poll waits, and no other poll is out", round)
	}
	require.Equal(t, int64(1), gate.most.Load(), "never two long polls at once")
}
