package remote

import (
	"context"
	"slices"
	"sync"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/claim"
	"github.com/hopperjobs/hopper/internal/workerapi"
)

// pollCoalesce is how long a poll with few free slots waits for more.
const pollCoalesce = time.Millisecond

// saturatedPollWait bounds a long poll that leaves out a kind saturated in this worker
// (Config.KindConcurrency): the kind's jobs are asked for again that soon after one of its
// jobs ends.
const saturatedPollWait = 500 * time.Millisecond

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
	// caps are Config.KindConcurrency; freed receives when a capped kind's job ends.
	caps  *claim.KindCaps
	freed chan struct{}
}

// pollLoop takes jobs with long polls (Activate) for the free slots, and claims ahead. A
// failed poll is retried with backoff; while the governor holds, nothing is polled.
func (w *Worker) pollLoop() {
	p := &poller{w: w, caps: w.kindCaps, freed: make(chan struct{}, 1)}
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

// Claim sends one poll. With kinds capped in the worker (Config.KindConcurrency) the poll
// leaves out the saturated ones and takes no more jobs than the capped kinds it names have
// room for, none ahead; when every kind is saturated it waits for a job of one to end.
func (p *poller) Claim(ctx context.Context, r claim.Request) claim.Result[*hopperv1.ActivatedJob] {
	w := p.w
	kinds, units, ahead := w.kinds, r.Units, r.Ahead
	var room map[string]int
	if p.caps != nil {
		room, kinds = p.caps.Reserve(w.kinds, r.Units)
		for kind, n := range room {
			kinds, units, ahead = append(kinds, kind), min(units, n), 0
		}
		if len(kinds) == 0 {
			select { // every kind is saturated: poll again once one has room
			case <-p.freed:
			case <-ctx.Done():
			}
			return claim.Result[*hopperv1.ActivatedJob]{Restricted: true}
		}
		slices.Sort(kinds)
	}
	queue, queues := w.asked()
	req := &hopperv1.ActivateRequest{Worker: w.cfg.Name, Queue: queue, Queues: queues, Kinds: kinds,
		MaxJobs: int32(units + ahead), Ahead: int32(ahead), LeaseTimeout: durationOf(w.cfg.LeaseDuration),
		BatchKinds: w.batchingOf(kinds), FetchParentResults: w.cfg.FetchParentResults}
	if r.Alone {
		wait := w.cfg.PollWait
		if p.caps != nil && len(room) < len(p.caps.Kinds()) {
			// A saturated kind is left out: the poll must come back soon to ask for it
			// again once a job of it ends.
			wait = min(wait, saturatedPollWait)
		}
		req.RequestTimeout = durationOf(wait)
	}
	res, err := w.api.Activate(ctx, req)
	if room != nil {
		got := map[string]int{}
		for _, j := range res.GetJobs() {
			got[j.GetKind()]++
		}
		for kind, n := range room {
			p.caps.Unreserve(kind, n-got[kind])
		}
	}
	if refused(err) {
		w.giveUp(err) // ends ctx, and so the loop
	}
	if err != nil && ctx.Err() != nil {
		err = nil // the worker stops: not an outage
	}
	return claim.Result[*hopperv1.ActivatedJob]{Jobs: res.GetJobs(), Restricted: res.GetRestricted() || room != nil,
		FairAhead: res.GetFairAhead().AsDuration(), Err: unavailable(err)}
}

// done frees the slot of j: of the loop, and of j's kind if it is capped.
func (p *poller) done(j *hopperv1.ActivatedJob) {
	if p.caps.Capped(j.GetKind()) {
		p.caps.Free(j.GetKind(), 1)
		select {
		case p.freed <- struct{}{}:
		default:
		}
	}
	p.lane.Done(1)
}

// Start runs each job on a free slot, whatever the governor says meanwhile (it holds new
// polls back, not jobs already claimed for free slots, as in process).
//
// A batch's jobs (hopperv1.ActivatedJob.batch_id) run together, their units held until the
// batch's handler returns (the poll cut the batch to the free slots).
func (p *poller) Start(_ string, jobs []*hopperv1.ActivatedJob) error {
	for _, unit := range grouped(jobs) {
		done := func() {
			for _, j := range unit {
				p.done(j)
			}
		}
		if p.w.launchThen(unit, done) == nil { // stopping
			done()
			for _, j := range unit {
				p.release(j, "worker stopping")
			}
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
		if p.caps.Capped(j.GetKind()) {
			p.caps.Free(j.GetKind(), 1) // not started: its slot was never the loop's
		}
		p.release(j, text)
	}
}

// release hands j back to its queue without holding up the loop; the outcomes go in batches.
func (p *poller) release(j *hopperv1.ActivatedJob, why string) {
	p.gaveBack.Go(func() { p.w.release(j, why) })
}
