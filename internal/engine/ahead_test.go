package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/governor"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// gatedClaims holds each claim of queue q until the test lets it through, and tells the test what each
// claim asked for.
type gatedClaims struct {
	store.Store
	asked chan *gatedClaim
}

// gatedClaim is one claim waiting at the gate: closing open lets it through.
type gatedClaim struct {
	limit int
	open  chan struct{}
}

func (g *gatedClaims) JobClaim(ctx context.Context, p *store.ClaimParams) ([]*hoppertype.JobRow, store.Hold, error) {
	if p.Queue != "q" {
		return g.Store.JobClaim(ctx, p) // the other queue's claims pass
	}
	c := &gatedClaim{limit: p.Limit, open: make(chan struct{})}
	g.asked <- c
	<-c.open
	return g.Store.JobClaim(ctx, p)
}

// idHandler runs each job until the test lets it finish, and says which job it is.
type idHandler struct{ started chan idRun }

type idRun struct {
	id     string
	finish chan struct{}
}

func (h idHandler) Prepare(row *hoppertype.JobRow) (attempt.Unit, error) {
	return idUnit{h, row.ID}, nil
}

type idUnit struct {
	h  idHandler
	id string
}

func (u idUnit) Work(ctx context.Context) error {
	r := idRun{id: u.id, finish: make(chan struct{})}
	u.h.started <- r
	select {
	case <-r.finish:
	case <-ctx.Done():
	}
	return nil
}
func (idUnit) Timeout() time.Duration               { return 0 }
func (idUnit) RetryPolicy() *hoppertype.RetryPolicy { return nil }

// aheadRig is an engine with 4 slots working queue q of 40 jobs (q-00 … q-39, claimed in
// that order) through gatedClaims.
type aheadRig struct {
	t     *testing.T
	clk   *clock.Fake
	st    store.Store
	gate  *gatedClaims
	h     idHandler
	e     *Engine
	runs  []idRun // running, oldest first
	start []string
}

func newAheadRig(t *testing.T, claimAhead int, gov ...*governor.Governor) *aheadRig {
	t.Helper()
	return newAheadRigOf(t, 40, claimAhead, false, gov...)
}

// newAheadRigOf is newAheadRig with n jobs and, with alsoR, a queue r that the engine works
// too, of no jobs unless the test inserts some; its claims pass the gate.
func newAheadRigOf(t *testing.T, n, claimAhead int, alsoR bool, gov ...*governor.Governor) *aheadRig {
	t.Helper()
	clk, sq := fakeClockSQLite(t)
	ps := make([]*store.InsertParams, n)
	for i := range ps {
		ps[i] = &store.InsertParams{ID: fmt.Sprintf("q-%02d", i), Kind: "k", Queue: "q", Args: []byte(`{}`),
			MaxAttempts: 3, RunAt: clk.Now(), Actor: hoppertype.ActorOperator}
	}
	_, err := sq.JobInsertMany(t.Context(), ps)
	require.NoError(t, err)
	cfgGov := (*governor.Governor)(nil)
	if len(gov) > 0 {
		cfgGov = gov[0]
	}
	r := &aheadRig{t: t, clk: clk, st: sq, h: idHandler{started: make(chan idRun, 64)},
		gate: &gatedClaims{Store: sq, asked: make(chan *gatedClaim, 8)}}
	queues := map[string]int{"q": 4}
	if alsoR {
		queues["r"] = 4
	}
	r.e, err = New(Config{Store: r.gate, Clock: clk, WorkerID: "node-1", Workers: workersOf("k", r.h),
		MaxWorkers: 4, Queues: queues, PollInterval: time.Hour, ClaimAhead: claimAhead, Governor: cfgGov})
	require.NoError(t, err)
	require.NoError(t, r.e.Start(context.Background()))
	return r
}

// claim waits for the next claim to reach the store, checks what it asked for, and lets
// it through.
func (r *aheadRig) claim(limit int, msg string) {
	r.t.Helper()
	c := r.asked(limit, msg)
	close(c.open)
}

// asked waits for the next claim to reach the store and checks what it asked for; it waits at
// the gate until the test closes its open.
func (r *aheadRig) asked(limit int, msg string) *gatedClaim {
	r.t.Helper()
	select {
	case c := <-r.gate.asked:
		require.Equal(r.t, limit, c.limit, msg)
		return c
	case <-time.After(10 * time.Second):
		r.t.Fatal("no claim reached the store: " + msg)
		return nil
	}
}

// started waits for n jobs to start and returns their ids, sorted.
func (r *aheadRig) started(n int) []string {
	r.t.Helper()
	var ids []string
	for range n {
		select {
		case run := <-r.h.started:
			r.runs = append(r.runs, run)
			ids = append(ids, run.id)
		case <-time.After(10 * time.Second):
			r.t.Fatalf("%d of %d jobs started", len(ids), n)
		}
	}
	slices.Sort(ids) // jobs of one batch start on goroutines of their own, in any order
	r.start = append(r.start, ids...)
	return ids
}

// finish lets the n oldest running jobs finish.
func (r *aheadRig) finish(n int) {
	for _, run := range r.runs[:n] {
		close(run.finish)
	}
	r.runs = r.runs[n:]
}

// quiet checks that for a while no job starts and no claim reaches the store.
func (r *aheadRig) quiet(msg string) {
	r.t.Helper()
	select {
	case run := <-r.h.started:
		r.t.Fatalf("%s: job %s started", msg, run.id)
	case c := <-r.gate.asked:
		r.t.Fatalf("%s: a claim asked for %d", msg, c.limit)
	// Real time: that nothing happens can only be seen by waiting a moment (a broken
	// rule shows within it; a slow machine can only make the check pass, never fail).
	case <-time.After(50 * time.Millisecond):
	}
}

func (r *aheadRig) state(id string) *hoppertype.JobRow {
	r.t.Helper()
	row, err := r.st.JobGet(r.t.Context(), id)
	require.NoError(r.t, err)
	return row
}

// rampAhead brings the rig to jobs claimed ahead: four jobs end while two claims of one job
// each are on their way, three of them during the first, so the claim after it asks for its
// two free slots and three jobs ahead. It leaves q-04 … q-07 running and q-08 … q-10 claimed
// ahead.
func (r *aheadRig) rampAhead() { r.rampAheadAsking(2 + 3) }

// rampAheadAsking is rampAhead where the claim after the first of the two asks for asks jobs.
func (r *aheadRig) rampAheadAsking(asks int) {
	r.claim(4, "the first claim asks for the free slots")
	r.started(4)
	r.finish(1)
	b := r.asked(1, "nothing ended during the first claim: none ahead")
	r.finish(1)
	c := r.asked(1, "a second claim, none ahead")
	r.finish(2)
	r.quiet("two claims in flight: no third")
	require.Eventually(r.t, func() bool { return r.state("q-03").State == hoppertype.StateCompleted }, 10*time.Second,
		time.Millisecond, "the four jobs ended before b returns (a job's slot is free once its outcome is on its way)")
	close(b.open) // three jobs ended during b's round trip
	r.started(1)
	d := r.asked(asks, "two free slots, and three ahead (at most ClaimAhead)")
	close(c.open)
	r.started(1)
	r.quiet("every slot taken or held by a claim")
	close(d.open)
	r.started(2)
	require.Equal(r.t, []string{"q-00", "q-01", "q-02", "q-03", "q-04", "q-05", "q-06", "q-07"}, r.start)
}

// A claim asks ahead for as many jobs as ended during the previous claim's round trip; jobs
// claimed ahead wait for slots (never more handlers than slots), start in claim order before
// any new claim, and one canceled while it waited does not run.
func TestClaimAheadWaitsForSlots(t *testing.T) {
	t.Parallel()
	r := newAheadRig(t, 0)
	defer r.stop()
	r.rampAhead()
	for _, id := range []string{"q-08", "q-09", "q-10"} {
		require.Equal(t, hoppertype.StateRunning, r.state(id).State, "claimed ahead: running in the store")
	}
	r.quiet("every slot taken: jobs claimed ahead wait, no claim")

	// Cancel q-09 while it waits: the cancel reaches it as it would a running job.
	_, err := r.st.JobCancel(t.Context(), &store.CancelParams{ID: "q-09", Actor: hoppertype.ActorOperator})
	require.NoError(t, err)
	require.True(t, r.e.cancelRunning("q-09", attempt.ErrJobCanceled), "a job claimed ahead is registered")

	r.finish(2)
	require.Equal(t, []string{"q-08", "q-10"}, r.started(2), "freed slots go to the jobs claimed ahead, in order; q-09 never runs")
	r.finish(1)
	r.claim(1, "the jobs claimed ahead started: the next claim, none ahead (nothing ended during the last one)")
	require.Equal(t, []string{"q-11"}, r.started(1))
	require.Equal(t, hoppertype.StateCanceled, r.state("q-09").State)
	r.finish(len(r.runs))
}

// With ClaimAhead negative, claims ask only for free slots, and a bound caps what is asked
// ahead.
func TestClaimAheadOffOrBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ claimAhead, asks int }{{-1, 2}, {2, 2 + 2}} {
		r := newAheadRig(t, tc.claimAhead)
		r.rampAheadAsking(tc.asks)
		r.stop()
	}
}

// A queue whose last claim came back short stops wanting slots once its jobs have started,
// so another queue can take every free slot.
func TestClaimAheadDrainedQueueWantsNoSlots(t *testing.T) {
	t.Parallel()
	r := newAheadRigOf(t, 10, 0, true)
	defer r.stop()
	for r.state("q-09").State != hoppertype.StateCompleted { // q's jobs run to their ends
		select {
		case c := <-r.gate.asked:
			close(c.open)
		case run := <-r.h.started:
			close(run.finish)
		// Real time: a short wait for the next event, then the loop looks at the job's state again.
		case <-time.After(10 * time.Millisecond):
		}
	}
	// A claim of q may still be on its way (at the gate) as q-09 completes, and q's other
	// jobs may still start: let them through, until nothing comes for a while, so that r's claim is the only one and must find every slot
	// free (the gate lets no second claim of r through).
	for quiet := false; !quiet; {
		select {
		case c := <-r.gate.asked:
			close(c.open)
		case run := <-r.h.started: // a job of q that started after q-09 ended
			close(run.finish)
		case <-time.After(200 * time.Millisecond): // real time: no claim came meanwhile
			quiet = true
		}
	}
	ps := make([]*store.InsertParams, 4)
	for i := range ps {
		ps[i] = &store.InsertParams{ID: fmt.Sprintf("r-%02d", i), Kind: "k", Queue: "r", Args: []byte(`{}`),
			MaxAttempts: 3, RunAt: r.clk.Now(), Actor: hoppertype.ActorOperator}
	}
	_, err := r.st.JobInsertMany(t.Context(), ps)
	require.NoError(t, err)
	r.e.Notify("r")
	require.Equal(t, []string{"r-00", "r-01", "r-02", "r-03"}, r.started(4), "r takes every slot: q wants none")
}

// A job claimed ahead that waits a second (claim.Config.MaxWait) without a slot goes back to its queue with
// its attempt unspent, and the next claim asks for none ahead.
func TestClaimAheadGivesBackWhatWaitsTooLong(t *testing.T) {
	t.Parallel()
	r := newAheadRig(t, 0)
	defer r.stop()
	r.rampAhead()
	before := r.state("q-08")
	r.clk.Advance(time.Second) // a job claimed ahead waits at most a second
	require.Eventually(t, func() bool { return r.state("q-10").State == hoppertype.StateQueued }, 10*time.Second, 5*time.Millisecond)
	for _, id := range []string{"q-08", "q-09", "q-10"} {
		row := r.state(id)
		require.Equal(t, hoppertype.StateQueued, row.State, id)
		require.Equal(t, before.Attempt-1, row.Attempt, "%s: the attempt is given back", id)
		require.Equal(t, "released unstarted", r.lastReason(id), id)
	}
	r.quiet("given back: every slot is busy")
	r.finish(1)
	r.claim(1, "none ahead after a give-back")
	require.Equal(t, []string{"q-08"}, r.started(1), "the given-back jobs come first")
	r.finish(len(r.runs))
}

// When the resource governor holds, the jobs claimed ahead go back to the queue instead of
// starting (the process takes no new work), and none starts while it holds.
func TestClaimAheadGivenBackWhenGoverned(t *testing.T) {
	t.Parallel()
	cpu := &cpuReader{}
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	gov, err := governor.New(governor.Config{MaxCPU: 0.5, Reader: cpu, Clock: clk})
	require.NoError(t, err)
	r := newAheadRig(t, 0, gov)
	defer r.stop()
	r.rampAhead()
	cpu.set(1)
	gov.Sample()
	require.NotNil(t, gov.Hold())
	r.e.Notify("q")
	require.Eventually(t, func() bool { return r.state("q-10").State == hoppertype.StateQueued }, 10*time.Second, 5*time.Millisecond)
	for _, id := range []string{"q-08", "q-09", "q-10"} {
		require.Equal(t, hoppertype.StateQueued, r.state(id).State, id)
		require.Equal(t, "released unstarted", r.lastReason(id), id)
	}
	r.finish(len(r.runs))
	r.quiet("the governor holds: nothing starts, no claim")
	cpu.set(0)
	for gov.Hold() != nil {
		gov.Sample()
	}
	r.claim(4, "open again: a claim for the free slots")
	require.Equal(t, []string{"q-08", "q-09", "q-10", "q-11"}, r.started(4), "the given-back jobs first")
}

// Stop gives the jobs claimed ahead back to their queue at once, and waits for the running ones.
func TestClaimAheadGivenBackOnStop(t *testing.T) {
	t.Parallel()
	r := newAheadRig(t, 0)
	r.rampAhead()
	stopped := make(chan error, 1)
	go func() { stopped <- r.e.Stop(context.Background()) }()
	require.Eventually(t, func() bool { return r.state("q-10").State == hoppertype.StateQueued }, 10*time.Second, 5*time.Millisecond)
	for _, id := range []string{"q-08", "q-09", "q-10"} {
		require.Equal(t, hoppertype.StateQueued, r.state(id).State, id)
		require.Equal(t, "released on shutdown", r.lastReason(id), id)
	}
	r.finish(len(r.runs))
	require.NoError(t, <-stopped)
	for _, id := range []string{"q-04", "q-05", "q-06", "q-07"} {
		require.Equal(t, hoppertype.StateCompleted, r.state(id).State, "%s ran to its end", id)
	}
}

// lastReason is the reason of job id's last transition.
func (r *aheadRig) lastReason(id string) string {
	r.t.Helper()
	evs, err := r.st.JobEvents(r.t.Context(), id)
	require.NoError(r.t, err)
	return evs[len(evs)-1].Reason
}

// stop stops the engine, letting every job and claim through.
func (r *aheadRig) stop() {
	r.t.Helper()
	r.finish(len(r.runs))
	done := make(chan error, 1)
	go func() { done <- r.e.Stop(context.Background()) }()
	for {
		select {
		case err := <-done:
			require.NoError(r.t, err)
			return
		case c := <-r.gate.asked:
			close(c.open)
		case run := <-r.h.started:
			close(run.finish)
		case <-time.After(10 * time.Second):
			r.t.Fatal("Stop did not return")
		}
	}
}
