package remote

import (
	"context"
	"sync"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/claim"
	"github.com/hopperjobs/hopper/internal/workerapi"
)

// pollCoalesce is how long a poll with few free slots waits for more.
const pollCoalesce = time.Millisecond

// poller is the Poll mode's Driver of the one claim loop (package claim): one lane for the
// worker's queues (the server shares each poll's jobs between them by weight), the worker's
// Concurrency as its units. The loop decides when to poll and for how many jobs, claiming
// ahead included (docs/workers.md, "Claiming ahead"): a poll also asks
// (ActivateRequest.ahead) for the jobs that will have ended by the time it returns. Those wait
// in the loop, in claim order, at most claim.Unrenewed of their lease (nothing renews it
// meanwhile), then go back to the queue (Release, attempt unspent), as they do when the
// governor holds and when the worker stops. Only a poll made while none is out waits for a
// job (PollWait): a worker waits on an empty queue with one long poll.
type poller struct {
	w        *Worker
	lane     *claim.Lane
	gaveBack sync.WaitGroup // releases of jobs claimed ahead, which the loop waits for on exit
}

// pollLoop takes jobs with long polls (Activate) for the free slots, and claims ahead. A
// failed poll is retried with backoff; while the governor holds, nothing is polled.
func (w *Worker) pollLoop() {
	p := &poller{w: w}
	aheadLimit := w.cfg.ClaimAhead
	if len(w.queues) > 1 {
		aheadLimit = 0 // the server takes jobs ahead of a single queue only
	}
	loop, err := claim.New(claim.Config{Clock: w.clock, Units: w.cfg.Concurrency, Lanes: []claim.LaneConfig{{Name: ""}},
		Batch: workerapi.MaxActivateJobs, AheadLimit: aheadLimit, MaxWait: claim.Unrenewed(w.cfg.LeaseDuration),
		Coalesce: pollCoalesce, LongPoll: true, Retry: w.intake, Logger: w.log, Held: func(time.Time) (bool, time.Time, <-chan struct{}) {
			held, changed := w.gov.State()
			return held, time.Time{}, changed
		}}, p)
	if err != nil { // the config is New's, already checked
		w.log.Error("poll for jobs", "err", err)
		return
	}
	p.lane = loop.Lane("")
	_ = loop.Run(w.intakeCtx) // Start never fails
	p.gaveBack.Wait()
}

// Claim sends one poll.
func (p *poller) Claim(ctx context.Context, r claim.Request) claim.Result[*hopperv1.ActivatedJob] {
	w := p.w
	queue, queues := w.asked()
	req := &hopperv1.ActivateRequest{Worker: w.cfg.Name, Queue: queue, Queues: queues, Kinds: w.kinds,
		MaxJobs: int32(r.Units + r.Ahead), Ahead: int32(r.Ahead), LeaseTimeout: durationOf(w.cfg.LeaseDuration)}
	if r.Alone {
		req.RequestTimeout = durationOf(w.cfg.PollWait)
	}
	res, err := w.api.Activate(ctx, req)
	if refused(err) {
		w.giveUp(err) // ends ctx, and so the loop
	}
	if err != nil && ctx.Err() != nil {
		err = nil // the worker stops: not an outage
	}
	return claim.Result[*hopperv1.ActivatedJob]{Jobs: res.GetJobs(), Restricted: res.GetRestricted(), Err: unavailable(err)}
}

// Start runs each job on a free slot, whatever the governor says meanwhile (it holds new
// polls back, not jobs already claimed for free slots, as in process).
func (p *poller) Start(_ string, jobs []*hopperv1.ActivatedJob) error {
	for _, j := range jobs {
		if p.w.launchThen(j, func() { p.lane.Done(1) }) == nil { // stopping
			p.lane.Done(1)
			p.release(j, "worker stopping")
		}
	}
	return nil
}

// GiveBack releases jobs claimed ahead back to their queue without holding up the loop.
func (p *poller) GiveBack(_ string, jobs []*hopperv1.ActivatedJob, why claim.Why) {
	text := "claimed ahead, no slot freed for it within " + claim.Unrenewed(p.w.cfg.LeaseDuration).String()
	switch why {
	case claim.Governed:
		text = "claimed ahead, not started: the resource governor holds"
	case claim.Stopping:
		text = "worker stopping"
	}
	for _, j := range jobs {
		p.release(j, text)
	}
}

// release hands j back to its queue without holding up the loop; the outcomes go in batches.
func (p *poller) release(j *hopperv1.ActivatedJob, why string) {
	p.gaveBack.Go(func() { p.w.release(j, why) })
}
