package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// gatedStore holds each claim of worker "ahead" until the test lets it through, and tells
// the test what it asked for.
type gatedStore struct {
	store.Store
	asked chan *gatedClaim
}

type gatedClaim struct {
	queue        string
	limit, ahead int
	open         chan struct{}
	once         sync.Once
}

// let lets the claim through (once).
func (c *gatedClaim) let() { c.once.Do(func() { close(c.open) }) }

func (g *gatedStore) JobClaim(ctx context.Context, p *store.ClaimParams) ([]*hopper.JobRow, store.Hold, error) {
	if p.WorkerID != "ahead" {
		return g.Store.JobClaim(ctx, p)
	}
	c := &gatedClaim{queue: p.Queue, limit: p.Limit, ahead: p.Ahead, open: make(chan struct{})}
	g.asked <- c
	<-c.open
	return g.Store.JobClaim(ctx, p)
}

// aheadStream is a stream of credit 2 for worker "ahead", its claims through gatedStore.
type aheadStream struct {
	t        *testing.T
	e        *env
	gate     *gatedStore
	cancel   context.CancelFunc
	received chan *hopperv1.ActivatedJob
}

func openAheadStream(t *testing.T) *aheadStream {
	t.Helper()
	return openGatedStream(t, &hopperv1.StreamJobsRequest{Worker: "ahead", Credit: 2,
		LeaseTimeout: durationpb.New(time.Hour)})
}

// openGatedStream opens req's stream (its worker "ahead"), its claims through gatedStore.
func openGatedStream(t *testing.T, req *hopperv1.StreamJobsRequest) *aheadStream {
	t.Helper()
	gate := &gatedStore{asked: make(chan *gatedClaim, 4)}
	s := serve(t, nil, func(c *hopper.Config) {
		gate.Store = c.Store
		c.Store = gate
	}, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	ctx, cancel := context.WithCancel(t.Context())
	stream, err := e.workers.StreamJobs(ctx, req)
	require.NoError(t, err)
	a := &aheadStream{t: t, e: e, gate: gate, cancel: cancel, received: make(chan *hopperv1.ActivatedJob, 16)}
	go func() {
		defer close(a.received)
		for {
			msg, err := stream.Receive()
			if err != nil {
				return
			}
			for _, j := range msg.GetJobs() {
				a.received <- j
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		stream.Close()
		for { // let claims in flight through so the stream can end
			select {
			case c := <-gate.asked:
				c.let()
			case _, ok := <-a.received:
				if !ok {
					return
				}
			}
		}
	})
	return a
}

func (a *aheadStream) claim(limit, ahead int, msg string) *gatedClaim {
	a.t.Helper()
	select {
	case c := <-a.gate.asked:
		a.t.Cleanup(c.let) // a failing test must not leave the stream's claim waiting
		require.Equal(a.t, limit, c.limit, msg)
		require.Equal(a.t, ahead, c.ahead, msg)
		return c
	case <-time.After(10 * time.Second):
		a.t.Fatal("no claim: " + msg)
		return nil
	}
}

func (a *aheadStream) next() *hopperv1.ActivatedJob {
	a.t.Helper()
	select {
	case j := <-a.received:
		return j
	case <-time.After(10 * time.Second):
		a.t.Fatal("no job pushed")
		return nil
	}
}

func (a *aheadStream) quiet(msg string) {
	a.t.Helper()
	select {
	case j := <-a.received:
		a.t.Fatalf("%s: job %s pushed", msg, j.GetId())
	case c := <-a.gate.asked:
		a.t.Cleanup(c.let)
		a.t.Fatalf("%s: a claim asked for %d", msg, c.limit)
	// Real time: that nothing happens can only be seen by waiting a moment (a broken
	// rule shows within it; a slow machine can only make the check pass, never fail).
	case <-time.After(100 * time.Millisecond):
	}
}

func (a *aheadStream) complete(j *hopperv1.ActivatedJob) {
	a.t.Helper()
	_, err := a.e.workers.Complete(a.t.Context(), &hopperv1.CompleteRequest{Id: j.GetId(), LeaseToken: j.GetLeaseToken()})
	require.NoError(a.t, err)
}

// ramp brings the stream to a job claimed ahead: one job's credit freed while a claim was on
// its way, so the next claim asks for its one free credit and one job ahead. It returns the
// two jobs pushed and the job claimed ahead (running in the store, not pushed).
func (a *aheadStream) ramp() (pushed []*hopperv1.ActivatedJob, ahead *hopperv1.Job) {
	a.t.Helper()
	first := a.e.enqueue(a.t, "push", `{}`)
	a.claim(2, 0, "the first claim: the free credit").let()
	j1 := a.next()
	require.Equal(a.t, first.GetId(), j1.GetId())
	var queued []*hopperv1.Job
	for range 6 {
		queued = append(queued, a.e.enqueue(a.t, "push", `{}`))
	}
	b := a.claim(1, 0, "the queue came back short before: none ahead")
	a.complete(j1) // credit frees while b is on its way
	a.quiet("the last claim came back short: one claim at a time")
	b.let()
	j2 := a.next()
	c := a.claim(1+1, 1, "one free credit, and one ahead: one credit freed during b")
	c.let()
	j3 := a.next()
	a.quiet("the job claimed ahead waits for credit, and no claim while it waits")
	require.Equal(a.t, []string{queued[0].GetId(), queued[1].GetId()}, []string{j2.GetId(), j3.GetId()})
	ahead = a.e.get(a.t, queued[2].GetId())
	require.Equal(a.t, "running", ahead.GetState(), "claimed ahead: running in the store")
	return []*hopperv1.ActivatedJob{j2, j3}, ahead
}

// A stream's claim asks ahead for the credit that freed during its previous claim; the job
// claimed ahead is pushed when credit frees, never beyond the credit.
func TestStreamClaimsAhead(t *testing.T) {
	a := openAheadStream(t)
	pushed, ahead := a.ramp()
	a.complete(pushed[0])
	j := a.next()
	require.Equal(t, ahead.GetId(), j.GetId(), "freed credit goes to the job claimed ahead")
	streams, err := a.e.admin.ListStreams(t.Context(), &hopperv1.ListStreamsRequest{})
	require.NoError(t, err)
	require.Equal(t, int32(2), streams.GetStreams()[0].GetInFlight(), "never more than the credit in flight")
	a.complete(pushed[1])
	c := a.claim(1, 0, "claims resume once nothing waits; none ahead: no credit freed during the last claim")
	c.let()
	a.next()
}

// A job claimed ahead that waits a second without credit goes back to its queue, unspent, and
// so does one still waiting when the stream closes.
func TestStreamGivesBackWhatItClaimedAhead(t *testing.T) {
	a := openAheadStream(t)
	_, ahead := a.ramp()
	require.Eventually(t, func() bool { return a.e.get(t, ahead.GetId()).GetState() == "queued" },
		5*time.Second, 10*time.Millisecond, "given back after a second without credit")
	require.Equal(t, int32(0), a.e.get(t, ahead.GetId()).GetAttempt(), "its attempt is given back")

	b := openAheadStream(t)
	_, ahead = b.ramp()
	b.cancel()
	require.Eventually(t, func() bool { return b.e.get(t, ahead.GetId()).GetState() == "queued" },
		5*time.Second, 10*time.Millisecond, "given back when the stream closes")
}

// A hold (the worker's resource governor) gives back what the stream claimed ahead at once,
// not after its second of waiting.
func TestStreamHoldGivesBackWhatItClaimedAhead(t *testing.T) {
	a := openAheadStream(t)
	_, ahead := a.ramp()
	_, err := a.e.workers.Hold(t.Context(), &hopperv1.HoldRequest{Worker: "ahead", Held: true})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return a.e.get(t, ahead.GetId()).GetState() == "queued" },
		5*time.Second, 10*time.Millisecond, "given back")
	job := a.e.get(t, ahead.GetId())
	require.Equal(t, int32(0), job.GetAttempt(), "its attempt is given back")
	require.Contains(t, job.GetLastError(), "held by its resource governor", "for the hold, not the wait")
}

// Where a fleet-wide cap applies, a stream's claim that asks ahead takes none of them (the
// store restricts it: jobs claimed ahead would hold the cap's slots idle), and the stream
// pushes what it took and claims on.
func TestStreamClaimsNoneAheadUnderACap(t *testing.T) {
	a := openAheadStream(t)
	pushed, ahead := a.ramp()
	extra := a.e.enqueue(t, "push", `{}`) // ramp enqueued six: with this one, two left for z
	a.complete(pushed[0])
	aj := a.next()
	require.Equal(t, ahead.GetId(), aj.GetId(), "freed credit goes to the job claimed ahead")
	a.complete(pushed[1])
	x := a.claim(1, 0, "no credit freed during the last claim: none ahead")
	a.complete(aj) // credit frees during x
	y := a.claim(1, 0, "x is on its way and the last claim came back full: a second claim")
	y.let()
	yj := a.next()
	x.let() // x comes back last: one credit freed during it
	a.next()
	a.complete(yj)
	z := a.claim(2, 1, "one credit freed during x: one ahead")
	require.NoError(t, a.e.hopper.SetLimit(t.Context(), hopper.Limit{Queue: hopper.DefaultQueue, MaxRunning: 100}))
	z.let()
	j := a.next()
	a.quiet("z took only its free credit's job")
	require.Equal(t, "queued", a.e.get(t, extra.GetId()).GetState(), "restricted by the cap: nothing claimed ahead")
	a.complete(j)
	a.claim(1, 0, "claims go on, none ahead: nothing freed during z").let()
	require.Equal(t, extra.GetId(), a.next().GetId())
}

// Activate's ahead reaches the claim: the worker gets max_jobs jobs, of which it asked for
// ahead beyond its free slots; where a cap applies the claim takes none of them and the answer
// says so (restricted), and an ahead the call cannot have is INVALID_ARGUMENT naming ahead.
func TestActivateAheadOverRPC(t *testing.T) {
	t.Parallel()
	e := start(t)
	for range 20 {
		e.enqueue(t, "solo", `{}`)
	}
	res, err := e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "w", MaxJobs: 5, Ahead: 3})
	require.NoError(t, err)
	require.Len(t, res.GetJobs(), 5)
	require.False(t, res.GetRestricted())

	require.NoError(t, e.hopper.SetLimit(t.Context(), hopper.Limit{Queue: hopper.DefaultQueue, MaxRunning: 100}))
	res, err = e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "w", MaxJobs: 5, Ahead: 3})
	require.NoError(t, err)
	require.Len(t, res.GetJobs(), 2, "a cap applies: none ahead")
	require.True(t, res.GetRestricted())

	for _, req := range []*hopperv1.ActivateRequest{
		{MaxJobs: 5, Ahead: 5},
		{MaxJobs: 5, Ahead: -1},
		{Queues: []string{"a", "b"}, MaxJobs: 5, Ahead: 1},
	} {
		req.Worker = "w"
		_, err := e.workers.Activate(t.Context(), req)
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "ahead")
	}
}

// Activate says when a queue it claimed from has fairness keys (fair_ahead, the store's bound):
// the jobs came in turns between the keys, and a worker that claims ahead asks for few
// (claim.Result.FairAhead).
func TestActivateSaysFairOverRPC(t *testing.T) {
	t.Parallel()
	e := start(t)
	for _, key := range []string{"", "tenant-a", "tenant-a", "tenant-b"} {
		_, err := e.jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "solo", Queue: "keyed",
			FairnessKey: key}})
		require.NoError(t, err)
	}
	e.enqueue(t, "solo", `{}`)
	res, err := e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "w", MaxJobs: 2, Ahead: 1})
	require.NoError(t, err)
	require.Len(t, res.GetJobs(), 1)
	require.Nil(t, res.GetFairAhead(), "the default queue has no keys")

	res, err = e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "w", Queue: "keyed", MaxJobs: 3, Ahead: 1})
	require.NoError(t, err)
	require.Len(t, res.GetJobs(), 3)
	require.Positive(t, res.GetFairAhead().AsDuration())
	require.False(t, res.GetRestricted())
}
