package claim

import (
	"cmp"
	"errors"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/internal/fairshare"
)

// effects is what the state machine does to the world: the Loop starts goroutines and calls
// its Driver; tests record.
type effects[J any] interface {
	launch(c claimed)
	start(lane string, jobs []J) error
	giveBack(lane string, jobs []J, why Why)
}

// state is the claim loop's bookkeeping and decisions, without goroutines or timers: step and
// received say what to do now and when to look again.
type state[J any] struct {
	cfg    Config
	lanes  []*lane[J]
	free   int       // units no lane holds
	pollAt time.Time // the next look at every lane; zero: no polling
	held   bool      // the governor held at the last step
	// stopping: no claim starts; a failed claim is not counted as an outage.
	stopping bool
	err      error // the first Start error: the loop stops
	ended    int64 // jobs of every lane that ended, to count those that end during a claim
}

func newState[J any](cfg Config) (*state[J], error) {
	if cfg.Units < 1 {
		return nil, errors.New("claim: Config.Units must be at least 1")
	}
	if len(cfg.Lanes) == 0 {
		return nil, errors.New("claim: Config.Lanes is empty")
	}
	cfg = cfg.withDefaults()
	s := &state[J]{cfg: cfg, free: cfg.Units}
	for _, lc := range cfg.Lanes {
		if slices.ContainsFunc(s.lanes, func(l *lane[J]) bool { return l.name == lc.Name }) {
			return nil, errors.New("claim: lane " + lc.Name + " named twice")
		}
		l := &lane[J]{name: lc.Name, retry: cmp.Or(lc.Retry, cfg.Retry), more: true, urgent: true}
		l.share = fairshare.Queue{Name: lc.Name, Weight: max(lc.Weight, 1), Max: cfg.Units}
		if lc.Max > 0 {
			l.share.Max = min(lc.Max, cfg.Units)
		}
		s.lanes = append(s.lanes, l)
	}
	return s, nil
}

// step takes in what other goroutines reported (jobs done, wake-ups) and what time brought,
// then starts the jobs claimed ahead that units free up for, gives back those that waited too
// long, and starts the claims that are due. It returns when to step again at the latest
// (zero: only when something happens) and the governor's channel to watch.
func (s *state[J]) step(now time.Time, fx effects[J]) (next time.Time, changed <-chan struct{}) {
	s.absorb()
	s.timers(now)
	held, until, changed := s.gate(now, fx)
	for _, l := range s.lanes {
		l.share.Wanting = l.waiting.Len() > 0 || ((l.more || s.cfg.LongPoll) && !now.Before(l.holdUntil))
	}
	s.startWaiting(now, fx)
	if !held && !s.stopping {
		s.claims(now, fx)
	}
	if !s.stopping {
		s.repoll(now)
	}
	next = earliest(until, s.pollAt)
	for _, l := range s.lanes {
		next = earliest(next, earliest(l.holdUntil, earliest(l.lookAt, l.coalesceAt)))
		next = earliest(next, l.waiting.Due(s.cfg.MaxWait))
	}
	return next, changed
}

// absorb counts the units of jobs Done and the wake-ups since the last step.
func (s *state[J]) absorb() {
	for _, l := range s.lanes {
		if n := int(l.done.Swap(0)); n != 0 {
			l.inUse, l.share.Held, s.free, s.ended = l.inUse-n, l.share.Held-n, s.free+n, s.ended+int64(n)
		}
		if l.woken.Swap(false) {
			l.wake()
		}
	}
}

// timers applies the times that have come: a hold's end, a lane's look again, the end of a
// coalescing wait, the poll.
func (s *state[J]) timers(now time.Time) {
	for _, l := range s.lanes {
		if !l.holdUntil.IsZero() && !now.Before(l.holdUntil) {
			l.holdUntil = time.Time{}
			l.wake() // work may have come during the hold, unannounced
		}
		if !l.lookAt.IsZero() && !now.Before(l.lookAt) {
			l.lookAt = time.Time{}
			l.wake()
		}
		if !l.coalesceAt.IsZero() && !now.Before(l.coalesceAt) {
			l.coalesceAt, l.urgent = time.Time{}, true
		}
	}
	if !s.pollAt.IsZero() && !now.Before(s.pollAt) {
		s.pollAt = time.Time{} // set again, from a fresh period, at the end of the step
		for _, l := range s.lanes {
			l.wake()
		}
	}
}

// pollEvery is the poll's period now; 0: no poll.
func (s *state[J]) pollEvery() time.Duration {
	if s.cfg.Poll == nil {
		return 0
	}
	return s.cfg.Poll()
}

// repoll starts the poll's period again if it is now shorter than what is left of it (the
// store's notifications stopped, so the period fell back to the short one).
func (s *state[J]) repoll(now time.Time) {
	if d := s.pollEvery(); d > 0 && (s.pollAt.IsZero() || now.Add(d).Before(s.pollAt)) {
		s.pollAt = now.Add(d)
	}
}

// gate asks the governor whether claims may start. While it holds, the jobs claimed ahead go
// back; when it lets go, every lane looks again (work may have come meanwhile, unannounced).
func (s *state[J]) gate(now time.Time, fx effects[J]) (held bool, until time.Time, changed <-chan struct{}) {
	if s.cfg.Held != nil {
		held, until, changed = s.cfg.Held(now)
	}
	if held {
		s.giveBackAll(Governed, fx)
	} else if s.held {
		for _, l := range s.lanes {
			l.wake()
		}
	}
	s.held = held
	return held, until, changed
}

// giveBackAll gives back every lane's jobs claimed ahead.
func (s *state[J]) giveBackAll(why Why, fx effects[J]) {
	for _, l := range s.lanes {
		s.giveBack(l, why, fx)
	}
}

// giveBack returns the jobs l claimed ahead to their queue, and asks for none ahead until its
// jobs end during a claim again.
func (s *state[J]) giveBack(l *lane[J], why Why, fx effects[J]) {
	if jobs := l.waiting.All(); len(jobs) > 0 {
		fx.giveBack(l.name, jobs, why)
	}
	l.aheadN = 0
}

// startWaiting starts jobs claimed ahead on the units free to their lanes, the lanes furthest
// below their share first, and gives back the jobs of a lane whose oldest has waited MaxWait.
func (s *state[J]) startWaiting(now time.Time, fx effects[J]) {
	for _, l := range s.byNeed() {
		if l.waiting.Len() == 0 {
			continue
		}
		if n := s.take(l, l.waiting.Len()); n > 0 {
			s.start(l, l.waiting.Take(n), fx)
		}
		if d := l.waiting.Due(s.cfg.MaxWait); !d.IsZero() && !now.Before(d) {
			s.giveBack(l, Expired, fx)
		}
	}
}

// claims starts the claims that are due: a lane that may claim does so at once after a
// wake-up, else once a quarter of its share of the units is free, or when its coalescing
// wait ends. (A quarter of all units would be the whole share of a light lane: it would claim
// only once every job of its had ended, so none would end during its claims, and it would
// never claim ahead.)
func (s *state[J]) claims(now time.Time, fx effects[J]) {
	for _, l := range s.byNeed() {
		for l.canClaim(now, s.cfg.MaxInFlight, s.cfg.LongPoll) {
			// The units free to the lane, less those its claims out will use, and the jobs it
			// asks for ahead: for the units that will free while the claim is out (ahead).
			avail := max(s.avail(l)-l.reserved, 0)
			ahead := min(l.aheadN, s.cfg.Batch-min(avail, s.cfg.Batch))
			if avail == 0 {
				l.coalesceAt = time.Time{}
				break
			}
			if !l.urgent && avail+ahead < max(1, min(s.entitled(l), s.cfg.Batch)/4) {
				// A busy lane frees its units one job at a time: wait a moment for more, so
				// one claim fills several instead of each job costing a claim.
				if l.coalesceAt.IsZero() {
					l.coalesceAt = now.Add(s.cfg.Coalesce)
				}
				break
			}
			n := min(avail, s.cfg.Batch)
			c := claimed{req: Request{Lane: l.name, Units: n, Ahead: ahead, Alone: l.inflight == 0},
				gen: l.gen, ended: s.ended, at: now}
			c.lane = slices.Index(s.lanes, l)
			l.inflight, l.reserved, l.urgent, l.coalesceAt = l.inflight+1, l.reserved+n, false, time.Time{}
			fx.launch(c)
		}
		if !l.canClaim(now, s.cfg.MaxInFlight, s.cfg.LongPoll) {
			l.coalesceAt = time.Time{}
		}
	}
}

// received takes a claim's result: its jobs queue up behind those its lane claimed ahead
// before (claim order), the units free to the lane start the oldest, and the rest wait for
// units. A claim holds no units while it is out (it is sized by them: reserved): units go to
// jobs at hand only, so that a lane's share counts what it runs, not what it waits for (a
// lane whose claims held units for their round trip ran below its weight). The lane's view of
// its queue follows what the claim found.
func (s *state[J]) received(c claimed, r Result[J], now time.Time, fx effects[J]) {
	s.absorb() // the ends during the claim count for claiming ahead
	l := s.lanes[c.lane]
	l.inflight, l.reserved = l.inflight-1, l.reserved-c.req.Units
	if r.Return {
		if len(r.Jobs) > 0 {
			fx.giveBack(l.name, r.Jobs, Returned)
		}
		l.more, l.full, l.aheadN = false, false, 0
		return
	}
	l.waiting.Add(now, r.Jobs...)
	if n := s.take(l, l.waiting.Len()); n > 0 {
		s.start(l, l.waiting.Take(n), fx)
	}
	if r.Err != nil {
		l.more, l.full, l.aheadN = false, false, 0
		if !s.stopping {
			l.holdUntil = now.Add(l.retry.Fail(r.Err))
		}
		return
	}
	l.retry.Succeed()
	full := r.Restricted && len(r.Jobs) == c.req.Units || !r.Restricted && len(r.Jobs) == c.req.Units+c.req.Ahead
	l.full, l.aheadN = full, 0
	if full && !r.Restricted {
		l.aheadN = s.ahead(l, s.ended-c.ended, now.Sub(c.at), r.FairAhead)
	}
	switch {
	case !r.HoldUntil.IsZero():
		// No job of the lane can start before then: no claim until then, whatever wakes it
		// (each wake-up would otherwise make a claim that takes nothing).
		l.holdUntil = r.HoldUntil
		l.more, l.full, l.urgent = false, false, false
	case c.gen < l.gen:
		// Woken since this claim was made: what it saw is stale, so keep looking.
	default:
		l.more = full
		if !full && !r.RetryAt.IsZero() {
			l.lookAt = earliest(l.lookAt, r.RetryAt)
		}
	}
}

// ahead is how many jobs l's next claim asks for beyond its free units, after a claim that
// took took and during whose round trip ended jobs ended (of every lane): the lane's share of
// the units times how many times the units turned over meanwhile (what its share will free
// while the next claim is on its way), at most AheadLimit and, where the loop has several
// lanes, at most the lane's share of the units.
//
// Counting every lane's ends, not the lane's own, keeps the weights where claims are the
// bottleneck (short jobs): a lane's own ends follow its own claims, so any split between
// lanes would sustain itself. And at most the lane's share, because a larger claim takes
// longer: asking for each job that ended during the last claim, a busy lane's claims grew
// with every one (measured: to 500-1,000 jobs, 50-200 ms of SQLite's one writer, which every
// other lane's claims waited behind; on PostgreSQL the heavy lane's larger claims, each
// longer, gave it 2 starts for the light lane's 1 at weights 3:1). A loop of one lane has no
// other lane to hold up or outweigh, and on PostgreSQL its larger claims run faster (a
// process of one queue and 100 workers: 18,900 no-op jobs/s against 12,700 within its share).
//
// A fair claim (its queue has fairness keys: fairAhead, the store's bound, is set) took its
// jobs in turns between the keys, but the jobs claimed ahead start in claim order: a job of a
// quiet key that comes after a claim waits behind all of them, the flood's turns included. So
// a fair lane asks ahead for what ends within fairAhead at most, not in the whole round trip
// (which grows with the claims: the loop above settles at AheadLimit with short jobs), and at
// least for its share: the jobs it waits behind start within about fairAhead. The stores'
// bounds and what they were measured against: sqlite.fairAhead, postgres.fairAhead.
func (s *state[J]) ahead(l *lane[J], ended int64, took, fairAhead time.Duration) int {
	share := int64(s.entitled(l))
	n := share * ended / int64(s.cfg.Units)
	limit := int64(s.cfg.AheadLimit)
	if len(s.lanes) > 1 {
		limit = min(limit, share)
	}
	if fairAhead > 0 && took > fairAhead {
		n = max(n*int64(fairAhead)/int64(took), min(n, share))
	}
	return int(max(min(n, limit), 0))
}

// take takes up to n free units for l, leaving what the other wanting lanes are owed and
// within l's own bound, and returns how many it took.
func (s *state[J]) take(l *lane[J], n int) int {
	n = min(n, s.avail(l))
	if n <= 0 {
		return 0
	}
	s.free -= n
	l.share.Held += n
	l.share.Served += int64(n)
	return n
}

// avail is how many units l may take now: the free ones, less what the other wanting lanes
// are owed (what each holds below its weighted share among the wanting lanes and l), within
// l's bound.
func (s *state[J]) avail(l *lane[J]) int {
	n := min(s.free, l.max()-l.share.Held)
	var others []*fairshare.Queue
	for _, o := range s.lanes {
		if o != l && o.share.Wanting {
			others = append(others, &o.share)
		}
	}
	if len(others) == 0 {
		return n
	}
	owed := 0
	for q, fair := range fairshare.Shares(s.cfg.Units, append(others, &l.share)) {
		if q != &l.share {
			owed += max(min(fair, q.Max)-q.Held, 0)
		}
	}
	return min(n, s.free-owed)
}

// entitled is l's share of the units among the lanes that want them and l: the most it asks
// for ahead.
func (s *state[J]) entitled(l *lane[J]) int {
	qs := []*fairshare.Queue{&l.share}
	for _, o := range s.lanes {
		if o != l && o.share.Wanting {
			qs = append(qs, &o.share)
		}
	}
	return min(fairshare.Shares(s.cfg.Units, qs)[&l.share], l.max())
}

// start starts jobs on units just taken for them.
func (s *state[J]) start(l *lane[J], jobs []J, fx effects[J]) {
	l.inUse += len(jobs)
	s.startTaken(l, jobs, fx)
}

// startTaken hands jobs over whose units l holds; a Start that fails stops the loop.
func (s *state[J]) startTaken(l *lane[J], jobs []J, fx effects[J]) {
	if err := fx.start(l.name, jobs); err != nil && s.err == nil {
		s.err, s.stopping = err, true
	}
}

// byNeed returns the lanes in the order they get free units: the furthest below their
// weighted share first (held per weight), then those served least for their weight.
func (s *state[J]) byNeed() []*lane[J] {
	out := slices.Clone(s.lanes)
	if len(out) < 2 {
		return out
	}
	slices.SortStableFunc(out, func(a, b *lane[J]) int {
		wa, wb := int64(a.share.Weight), int64(b.share.Weight)
		return cmp.Or(cmp.Compare(int64(a.share.Held)*wb, int64(b.share.Held)*wa),
			cmp.Compare(a.share.Served*wb, b.share.Served*wa))
	})
	return out
}

// inflight counts the claims out.
func (s *state[J]) inflight() int {
	n := 0
	for _, l := range s.lanes {
		n += l.inflight
	}
	return n
}
