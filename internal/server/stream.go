package server

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/workerapi"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/claim"
	"github.com/hopperjobs/hopper/internal/clock"
	"google.golang.org/protobuf/types/known/durationpb"
)

// streamCoalesce is how long a stream with little free credit waits for more before claiming.
const streamCoalesce = 500 * time.Microsecond

// streamRecheck is how often a stream looks again at its queues found without ready jobs, for
// jobs that no wake-up announced (as a long poll does: the worker API's ActivateQueues).
const streamRecheck = time.Second

// errStreamStopped stops a stream's claim loop once a push found the stream over.
var errStreamStopped = errors.New("stream stopped")

// streamer is a job stream's Driver of the one claim loop (package claim): a lane per queue
// of the stream, its credit as the units the queues share by weight (contract 14), claims
// through the worker API, and pushes. Claiming ahead (docs/workers.md): the loop also claims
// the jobs that will have been reported by the time a claim returns; those wait in the loop,
// not held and not pushed, until credit frees, at most a quarter of the stream's lease (the
// worker renews a job's lease only once it has it), and go back to the queue when they wait
// longer, when the worker is held, and with the stream (held at its end, so closeStream
// returns them).
type streamer struct {
	w      *workerService
	st     *stream
	out    hopperv1connect.WorkerServiceStreamJobsServerStream
	ctx    context.Context // the stream's: the worker's request, a shutdown, a revoked key end it
	params workerapi.ActivateParams
	fetch  []string
	// parents: the worker asked for its jobs' parents' results (fetch_parent_results).
	parents bool
	loop    *claim.Loop[*hopper.JobRow]
	// weights are those the loop shares credit by, for a stream on several queues; its
	// claims, on goroutines of their own, look for changes (refreshWeights).
	mu      sync.Mutex
	weights map[string]int
	// batchOf is the batch of each job claimed in one (StreamJobsRequest.batch_kinds): the
	// claims record them, Start and GiveBack take them (guarded by mu).
	batchOf map[workerapi.LeaseRef]string
	// stopped: a push found the stream over; endErr is what StreamJobs returns then (nil:
	// the worker went away). The loop's goroutine owns both.
	stopped bool
	endErr  error
	// sendMu makes the pushes (the loop's goroutine) and the keepalives take turns;
	// lastSend is when the last message went out, in Unix nanoseconds.
	sendMu   sync.Mutex
	lastSend atomic.Int64
}

// newStreamer makes the stream's claim loop and registers the stream.
func (w *workerService) newStreamer(ctx context.Context, req *hopperv1.StreamJobsRequest, params workerapi.ActivateParams,
	out hopperv1connect.WorkerServiceStreamJobsServerStream, end context.CancelCauseFunc) (*streamer, error) {
	s := w.s
	queues := params.QueueNames()
	sj := &streamer{w: w, out: out, ctx: ctx, params: params, fetch: req.GetFetchFields(),
		parents: req.GetFetchParentResults(), batchOf: map[workerapi.LeaseRef]string{}}
	sj.params.Queue, sj.params.Queues = "", nil // each claim names its lane's queue
	credit := int(req.GetCredit())
	cfg := claim.Config{Clock: s.clock, Units: credit, Batch: workerapi.MaxActivateJobs, AheadLimit: credit,

		MaxWait: claim.Unrenewed(params.LeaseDuration), Coalesce: streamCoalesce, Logger: s.log,
		Poll: func() time.Duration { return streamRecheck }}
	if len(queues) > 1 {
		sj.weights = s.api.QueueWeights(ctx, queues)
	}
	for _, q := range queues {
		cfg.Lanes = append(cfg.Lanes, claim.LaneConfig{Name: q, Weight: sj.weights[q], Retry: s.streamClaims})
	}
	st := &stream{worker: params.Worker, queues: queues, kinds: params.Kinds, credit: credit, lease: params.LeaseDuration,
		caps: claim.NewKindCaps(kindCaps(req)), caller: principalFrom(ctx), end: end}
	cfg.Held = func(now time.Time) (bool, time.Time, <-chan struct{}) {
		until := st.heldUntil(now)
		return !until.IsZero(), until, nil
	}
	loop, err := claim.New(cfg, sj)
	if err != nil {
		return nil, err
	}
	sj.loop = loop
	st.freed = func(queue, kind string) {
		sj.freeKind(kind)
		loop.Lane(queue).Done(1)
	}
	st.woken = func() { loop.Wake("") } // the worker was held or let go: look again
	st.offer = loop.Offer               // jobs another stream could not push (reroute)
	sj.st = s.reg.open(st, s.clock.Now())
	return sj, nil
}

// run claims and pushes until the stream ends, and returns why it ended: an error the worker
// should act on, or nil when the worker itself went away.
func (sj *streamer) run() error {
	stop := sj.w.s.api.ListenFunc(sj.st.queues, sj.loop.Wake)
	defer stop()
	if err := sj.loop.Run(sj.ctx); err != nil {
		return sj.endErr
	}
	return sj.w.ended(sj.ctx)
}

// Claim claims for one lane (queue) of the stream; it never waits for jobs to come. A claim
// that the worker's hold ended (Hold) returns its jobs to be given back.
//
// With kinds capped (StreamJobsRequest.kind_concurrency) the claim is split as the engine's
// is (claim.Capped): each capped kind with room in a claim of its own, within its room and
// none ahead, then the other kinds; a saturated kind is left out, its jobs left queued for
// other streams and workers.
func (sj *streamer) Claim(ctx context.Context, r claim.Request) claim.Result[*hopper.JobRow] {
	s := sj.w.s
	sj.refreshWeights(ctx)
	claimCtx, endClaim := s.reg.untilHeld(ctx, sj.params.Worker, sj.st.queues, s.clock.Now())
	defer endClaim()
	var out claim.Result[*hopper.JobRow]
	activate := func(c claim.Split) ([]*hopper.JobRow, error) {
		p := sj.params
		p.Queue, p.Kinds, p.MaxJobs, p.Ahead = r.Lane, c.Kinds, c.Units+c.Ahead, c.Ahead
		p.BatchKinds = slices.DeleteFunc(slices.Clone(p.BatchKinds), func(bk workerapi.BatchKind) bool {
			return !slices.Contains(c.Kinds, bk.Kind)
		})
		got, err := s.api.ActivateQueues(claimCtx, p)
		if got == nil {
			return nil, err
		}
		out.Restricted = out.Restricted || got.Restricted
		out.FairAhead = store.ShorterSet(out.FairAhead, got.FairAhead)
		if got.Retry > 0 {
			// A wait from the claim's answer: the time it ends, before the result reaches
			// the loop.
			out.RetryBy(s.clock.Now().Add(got.Retry))
		}
		jobs := sj.w.deliverable(ctx, got.Jobs)
		sj.claimedBatches(jobs, got.BatchIDs)
		return jobs, err
	}
	if sj.st.caps == nil {
		out.Jobs, out.Err = activate(claim.Split{Kinds: sj.params.Kinds, Units: r.Units, Ahead: r.Ahead})
	} else {
		out.Restricted = true // none ahead but in the other kinds' claim, which says so itself
		out.Jobs, out.Err = claim.Capped(sj.st.caps, sj.params.Kinds, r.Units, r.Ahead, func(c claim.Split) ([]*hopper.JobRow, error) {
			if !c.Capped {
				out.Restricted = false
			}
			return activate(c)
		})
	}
	switch {
	case claimCtx.Err() != nil && ctx.Err() == nil: // the worker was held while it ran
		out.Err, out.Return = nil, true
	case ctx.Err() != nil:
		out.Err = nil // the stream ends: not an outage
	}
	return out
}

// refreshWeights applies the queues' weights to a stream on several queues when they changed
// (an operator set one: the engine rereads them with its heartbeats).
func (sj *streamer) refreshWeights(ctx context.Context) {
	if len(sj.st.queues) < 2 {
		return
	}
	w := sj.w.s.api.QueueWeights(ctx, sj.st.queues)
	sj.mu.Lock()
	defer sj.mu.Unlock()
	if !maps.Equal(w, sj.weights) {
		sj.weights = w
		sj.loop.SetWeights(w)
	}
}

// Start holds jobs for the stream and pushes them, in messages of about maxPushBytes: one
// write and one flush for many jobs, a batch's jobs always in one message. Every job is held
// before the first push, so that if a push fails, closing the stream hands all of them at
// once to another stream or back to their queue (closeStream). Each job whose push fails is
// counted, by reason.
func (sj *streamer) Start(_ string, jobs []*hopper.JobRow) error {
	s, st := sj.w.s, sj.st
	sj.w.holdAll(st, jobs)
	if sj.stopped {
		s.reg.push.fail(pushClosed, len(jobs))
		return errStreamStopped // claimed as the stream ended: closeStream hands them on
	}
	s.reg.count(sj.params.Worker, jobs)
	return sj.push(sj.whole(jobs))
}

// push sends units, each a batch or a single job, in messages of about maxPushBytes.
func (sj *streamer) push(units []pushUnit) error {
	s, st := sj.w.s, sj.st
	left := func() int {
		n := 0
		for _, u := range units {
			n += len(u.jobs)
		}
		return n
	}
	for len(units) > 0 {
		if sj.ctx.Err() != nil {
			s.reg.push.fail(pushClosed, left())
			sj.stop(sj.w.ended(sj.ctx)) // the jobs not sent go on at once, uncounted
			return errStreamStopped
		}
		msg := &hopperv1.StreamJobsResponse{}
		for size := 0; len(units) > 0 && (size == 0 || size < maxPushBytes); units = units[1:] {
			first := len(msg.Jobs)
			for _, j := range units[0].jobs {
				a := toActivated(j, sj.fetch, s.jobTimeout)
				a.BatchId = units[0].batch
				msg.Jobs = append(msg.Jobs, a)
				size += len(j.Args) + len(j.Checkpoint) + len(j.ResumeData) + 256
			}
			if sj.parents {
				size += sj.w.withParents(sj.ctx, msg.Jobs[first:])
			}
		}
		if err := sj.send(msg); err != nil {
			why := pushSendError
			if sj.ctx.Err() != nil {
				why = pushClosed
			}
			s.reg.push.fail(why, len(msg.GetJobs())+left())
			sj.stop(nil) // the worker went away; closeStream hands on what it held
			return errStreamStopped
		}
		for _, a := range msg.Jobs {
			st.sent(workerapi.LeaseRef{ID: a.GetId(), Token: a.GetLeaseToken()})
		}
	}
	return nil
}

// pushUnit is what goes to the worker in one message: a batch's jobs, or a job claimed alone
// (no batch).
type pushUnit struct {
	batch string
	jobs  []*hopper.JobRow
}

// claimedBatches records the batch of each of a claim's jobs claimed in one.
func (sj *streamer) claimedBatches(jobs []*hopper.JobRow, batchOf map[string]string) {
	if len(batchOf) == 0 {
		return
	}
	sj.mu.Lock()
	defer sj.mu.Unlock()
	for _, j := range jobs {
		if b := batchOf[j.ID]; b != "" {
			sj.batchOf[workerapi.LeaseRef{ID: j.ID, Token: j.Token}] = b
		}
	}
}

// taken takes j out of its batch, as the loop starts it or gives it back, and returns the
// batch ("" for none).
func (sj *streamer) taken(j *hopper.JobRow) string {
	sj.mu.Lock()
	defer sj.mu.Unlock()
	ref := workerapi.LeaseRef{ID: j.ID, Token: j.Token}
	b := sj.batchOf[ref]
	delete(sj.batchOf, ref)
	return b
}

// whole returns the jobs the loop starts as units to push: each job claimed alone, and the
// jobs of each batch together. A batch whose units the loop could start only in part (its
// credit was short) goes in parts, each at once, each a batch of its own to the worker: a part
// held back for the rest could wait for credit that only the held part would free.
func (sj *streamer) whole(jobs []*hopper.JobRow) []pushUnit {
	var out []pushUnit
	at := map[string]int{}
	for _, j := range jobs {
		b := sj.taken(j)
		if i, ok := at[b]; ok && b != "" {
			out[i].jobs = append(out[i].jobs, j)
			continue
		}
		if b != "" {
			at[b] = len(out)
		}
		out = append(out, pushUnit{batch: b, jobs: []*hopper.JobRow{j}})
	}
	return out
}

// gaveBack takes jobs the loop gives back out of their batches.
func (sj *streamer) gaveBack(jobs []*hopper.JobRow) {
	for _, j := range jobs {
		sj.taken(j)
	}
}

// send writes msg to the worker, a push or a keepalive, one at a time. A push whose write
// blocks for longer than slowPush counts its jobs as held up by a worker too slow, at once
// (a worker frozen for good may never let the write end).
func (sj *streamer) send(msg *hopperv1.StreamJobsResponse) error {
	s := sj.w.s
	sj.sendMu.Lock()
	defer sj.sendMu.Unlock()
	var slow clock.Timer
	if n := len(msg.GetJobs()); n > 0 {
		slow = s.clock.AfterFunc(slowPush, func() { s.reg.push.fail(pushTooSlow, n) })
	}
	err := sj.write(msg)
	if slow != nil {
		slow.Stop()
	}
	sj.lastSend.Store(s.clock.Now().UnixNano())
	return err
}

// write writes msg to the worker (through the tests' fault, when set).
func (sj *streamer) write(msg *hopperv1.StreamJobsResponse) error {
	if fault := sj.w.s.pushFault; fault != nil {
		if err := fault(sj.params.Worker); err != nil {
			return err
		}
	}
	return sj.out.Send(msg)
}

// keepAlive sends a keepalive whenever the stream has sent nothing for every, until ctx ends
// or a send fails (the loop's next push finds that out too). The first goes at once: it
// tells the worker the period. A push under way is a sign of life: no keepalive then.
func (sj *streamer) keepAlive(ctx context.Context, every time.Duration) {
	clk := sj.w.s.clock
	msg := &hopperv1.StreamJobsResponse{Keepalive: durationpb.New(every)}
	if sj.send(msg) != nil {
		return
	}
	for wait := every; clock.Sleep(ctx, clk, wait); {
		idle := clk.Now().Sub(time.Unix(0, sj.lastSend.Load()))
		switch {
		case idle < every:
			wait = every - idle
		case !sj.sendMu.TryLock():
			wait = every // a push is being written
		default:
			sj.sendMu.Unlock()
			if sj.send(msg) != nil {
				return
			}
			wait = every
		}
	}
}

func (sj *streamer) stop(endErr error) {
	if !sj.stopped {
		sj.stopped, sj.endErr = true, endErr
	}
}

// freeKind frees the room a job of kind held in the stream's cap of its kind, if it has one,
// and wakes every lane: claims that left the kind out, saturated, may take its jobs now.
func (sj *streamer) freeKind(kind string) {
	if sj.st.caps.Capped(kind) {
		sj.st.caps.Free(kind, 1)
		sj.loop.Wake("")
	}
}

// GiveBack returns jobs claimed ahead to their queue at once, uncounted; at the stream's end
// it holds them, so that closeStream returns them with the reason the stream closed.
func (sj *streamer) GiveBack(_ string, jobs []*hopper.JobRow, why claim.Why) {
	text := "claimed ahead; no credit freed for it within " + claim.Unrenewed(sj.params.LeaseDuration).String()
	sj.gaveBack(jobs)
	switch why {
	case claim.Stopping:
		sj.w.holdAll(sj.st, jobs)
		return
	case claim.Governed:
		text = "claimed ahead; remote worker held by its resource governor"
	case claim.Returned:
		text = "remote worker held by its resource governor"
	}
	sj.w.handBack(sj.ctx, refsOf(jobs), text, sj.w.s.api.ReturnJob)
	for _, j := range jobs {
		sj.freeKind(j.Kind)
	}
}
