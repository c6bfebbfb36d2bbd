package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/claim"
	"github.com/hopperjobs/hopper/internal/store"
)

// claimTimeout bounds one claim, which its producer waits for even while stopping.
const claimTimeout = 30 * time.Second

// capRetry is how soon a producer held short by a fleet-wide cap claims again.
const capRetry = 50 * time.Millisecond

// maxRateWait bounds how long a producer held back by a rate limit waits before it claims
// again, however far off the limit's next start is: a limit raised or removed meanwhile
// applies within it.
const maxRateWait = time.Second

// producer claims the jobs of this process's queues and starts them on its slots: it is the
// engine's Driver of the one claim loop (package claim), with a lane per queue, the process's
// MaxWorkers as the units the queues share by weight, and each queue's concurrency as its
// lane's bound. The loop decides when to claim and how much (claiming ahead included: a job
// claimed ahead is running in the store, its lease renewed and a cancel reaching it, while it
// waits here for a slot); the producer makes the claims and runs their jobs.
type producer struct {
	e      *Engine
	loop   *claim.Loop[*claimedJob]
	queues map[string]*queueLane
	// batching are the kinds whose jobs run in batches (batch.go), sorted; plain the others.
	batching []batchKind
	plain    []string
	next     atomic.Uint32 // the batch kind the next claim tries first
}

// queueLane is what the engine keeps of one queue's lane.
type queueLane struct {
	name string
	lane *claim.Lane
	// capHeld: the last claim was held short by a fleet-wide cap, so a local job's end (which
	// frees a slot under the cap) should wake the queue once its outcome is written.
	capHeld atomic.Bool
}

func newProducer(e *Engine) (*producer, error) {
	cfg := e.cfg
	p := &producer{e: e, queues: map[string]*queueLane{}}
	lcfg := claim.Config{Clock: e.clock, Units: cfg.MaxWorkers, Batch: cfg.ClaimBatch, AheadLimit: max(cfg.ClaimAhead, 0),

		Coalesce: cfg.ClaimCoalesce, Poll: func() time.Duration { return e.pollWait(cfg.PollInterval) }, Logger: e.log}
	if e.gov != nil {
		lcfg.Held = func(time.Time) (bool, time.Time, <-chan struct{}) {
			open := e.gov.Hold()
			return open != nil, time.Time{}, open
		}
	}
	for q, n := range cfg.Queues {
		lcfg.Lanes = append(lcfg.Lanes, claim.LaneConfig{Name: q, Max: n, Weight: cfg.Weights[q],
			Retry: e.newTracker("claim jobs", backoff.WorkPolicy, "queue", q)})
	}
	loop, err := claim.New(lcfg, p)
	if err != nil {
		return nil, err
	}
	p.loop = loop
	for q := range cfg.Queues {
		p.queues[q] = &queueLane{name: q, lane: loop.Lane(q)}
	}
	p.batching, p.plain = splitBatchKinds(cfg.Workers, e.kinds)
	return p, nil
}

// Claim asks the store for the jobs of one claim and registers them as this process's.
func (p *producer) Claim(ctx context.Context, r claim.Request) claim.Result[*claimedJob] {
	// Not canceled with the loop: a claim that commits while its caller gives up would leave
	// jobs running that nobody works until their leases expire. The loop waits for it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), claimTimeout)
	defer cancel()
	if len(p.batching) > 0 {
		return p.claimWithBatches(ctx, r)
	}
	return p.claimJobs(ctx, r, p.e.kinds)
}

// claimJobs makes the claim r of jobs of kinds, run one by one.
func (p *producer) claimJobs(ctx context.Context, r claim.Request, kinds []string) claim.Result[*claimedJob] {
	e := p.e
	var rows []*hoppertype.JobRow
	var hold store.Hold
	var err error
	if e.kindCaps == nil {
		rows, hold, err = p.claim(ctx, r.Lane, kinds, r.Units, r.Ahead)
	} else {
		rows, hold, err = p.claimCapped(ctx, r, kinds)
	}
	if hook := e.cfg.OnClaimed; hook != nil && len(rows) > 0 {
		hook(rows, false)
	}
	out := claim.Result[*claimedJob]{Jobs: make([]*claimedJob, len(rows)), Err: err, Restricted: hold.Restricted,
		FairAhead: hold.FairAhead}
	for i, row := range rows {
		out.Jobs[i] = e.own(row)
		out.Jobs[i].kindHeld.Store(e.kindCaps.Capped(row.Kind))
	}
	if err != nil {
		return out
	}
	q := p.queues[r.Lane]
	now := e.clock.Now() // the store's waits count from its answer
	if hold.QueueWide {
		// The queue's rate limit allows no start before hold.Wait: no claim until then.
		if d := hold.Retry(capRetry, maxRateWait); d > 0 {
			out.HoldUntil = now.Add(d)
		}
		q.capHeld.Store(false) // a job's end frees no start
		return out
	}
	// A claim held short by a fleet-wide cap or a kind's rate limit (not an empty queue)
	// looks again soon: slots free up as jobs anywhere finish, and starts as time passes, and
	// no wake-up announces that.
	capped := !hold.Full(len(rows), r.Units, r.Ahead) && hold.Capped
	if capped {
		out.RetryAt = now.Add(hold.Retry(capRetry, maxRateWait))
	}
	q.capHeld.Store(capped && hold.Wait == 0) // a job's end frees a cap's slot, not a rate limit's start
	return out
}

// claim makes one claim in the store of up to units jobs of kinds, and ahead more.
func (p *producer) claim(ctx context.Context, queue string, kinds []string, units, ahead int) ([]*hoppertype.JobRow, store.Hold, error) {
	return p.e.store.JobClaim(ctx, &store.ClaimParams{Queue: queue, Kinds: kinds, Limit: units + ahead, Ahead: ahead,
		WorkerID: p.e.cfg.WorkerID, LeaseDuration: p.e.cfg.LeaseDuration})
}

// claimCapped makes the claim r in a process with kinds capped in it (Config.KindConcurrency),
// split by claim.Capped: each capped kind with room in a claim of its own, then the other
// kinds. The hold is that of the other kinds' claim (or of the last one made); none is taken
// ahead unless the other kinds' claim took them.
func (p *producer) claimCapped(ctx context.Context, r claim.Request, kinds []string) ([]*hoppertype.JobRow, store.Hold, error) {
	hold := store.Hold{Restricted: true}
	rows, err := claim.Capped(p.e.kindCaps, kinds, r.Units, r.Ahead, func(c claim.Split) ([]*hoppertype.JobRow, error) {
		got, h, err := p.claim(ctx, r.Lane, c.Kinds, c.Units, c.Ahead)
		fair := store.ShorterSet(hold.FairAhead, h.FairAhead)
		hold = h
		hold.Restricted, hold.FairAhead = hold.Restricted || c.Capped, fair
		return got, err
	})
	return rows, hold, err
}

// freeKind frees the slot a job of a capped kind held in this process, and wakes its queue:
// a claim that left the kind out, saturated, may take its jobs now.
func (p *producer) freeKind(j *claimedJob) {
	if j.kindHeld.CompareAndSwap(true, false) {
		p.e.kindCaps.Free(j.row.Kind, 1)
		p.loop.Wake(j.row.Queue)
	}
}

// Start runs each job on a slot the loop holds for it.
func (p *producer) Start(queue string, jobs []*claimedJob) error {
	q := p.queues[queue]
	for _, j := range jobs {
		p.e.execs.Add(1)
		if j.members != nil {
			go p.e.executeBatch(q, j)
		} else {
			go p.e.execute(q, j)
		}
	}
	return nil
}

// GiveBack returns jobs claimed ahead that will not start to their queue.
func (p *producer) GiveBack(_ string, jobs []*claimedJob, why claim.Why) {
	text, reason := "claimed ahead, no slot freed for it within "+time.Second.String(), "released unstarted"
	switch why {
	case claim.Governed:
		text = "claimed ahead, not started: the resource governor holds"
	case claim.Stopping:
		text, reason = "claimed ahead, not started before the worker stopped", "released on shutdown"
	}
	for _, j := range jobs {
		if j.members != nil {
			p.giveBackBatch(j, text, reason)
			continue
		}
		p.e.giveBack(j, text, reason)
		p.freeKind(j)
	}
}
