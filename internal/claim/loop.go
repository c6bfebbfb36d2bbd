package claim

import (
	"context"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
)

// Loop claims jobs for its lanes and hands them to its Driver (see the package comment). Make
// it with New, run it with Run; Wake, Lane and SetWeights are safe to call from any goroutine.
type Loop[J any] struct {
	s       *state[J]
	d       Driver[J]
	signal  chan struct{} // something to look at (buffered 1)
	results chan outcome[J]
	claims  sync.WaitGroup
	ctx     context.Context // Run's, for the claims it starts

	mu      sync.Mutex
	weights map[string]int // set by SetWeights, applied at the next step
	handles map[string]*Lane
	offers  map[string][]J // handed over by Offer, taken in at the next step
	closed  bool           // Run is stopping: Offer takes no more
}

// outcome is a claim's result, on its way back to the loop.
type outcome[J any] struct {
	c claimed
	r Result[J]
}

// Lane is the handle of one lane, for the goroutines that end its jobs.
type Lane struct {
	done   func(n int)
	signal func()
}

// Done frees the units of n of the lane's started jobs (their handlers returned, or the worker
// reported them): the Loop starts jobs claimed ahead on them or claims more. It never blocks.
func (h *Lane) Done(n int) {
	h.done(n)
	h.signal()
}

// New checks cfg and returns a Loop for d, ready to Run.
func New[J any](cfg Config, d Driver[J]) (*Loop[J], error) {
	s, err := newState[J](cfg)
	if err != nil {
		return nil, err
	}
	lp := &Loop[J]{s: s, d: d, signal: make(chan struct{}, 1), handles: map[string]*Lane{}}
	total := 0
	for _, l := range s.lanes {
		lp.handles[l.name] = &Lane{done: func(n int) { l.done.Add(int64(n)) }, signal: lp.poke}
		total += s.cfg.MaxInFlight
	}
	lp.results = make(chan outcome[J], total) // a claim's goroutine never waits to deliver
	return lp, nil
}

// Lane returns the handle of the lane named name; nil if there is none.
func (lp *Loop[J]) Lane(name string) *Lane { return lp.handles[name] }

// Wake says that work may be waiting in lane name ("" for every lane): it claims at once,
// even after a claim that found the queue empty. It never blocks.
func (lp *Loop[J]) Wake(name string) {
	for _, l := range lp.s.lanes {
		if name == "" || l.name == name {
			l.woken.Store(true)
		}
	}
	lp.poke()
}

// SetWeights sets the weights of the lanes named in w (weights under 1 count as 1); the
// others keep theirs.
func (lp *Loop[J]) SetWeights(w map[string]int) {
	lp.mu.Lock()
	if lp.weights == nil {
		lp.weights = map[string]int{}
	}
	for k, v := range w {
		lp.weights[k] = max(v, 1)
	}
	lp.mu.Unlock()
	lp.poke()
}

// Offer hands the loop jobs of lane name that were claimed elsewhere (the server hands the
// jobs of a stream whose push failed to another stream): they wait as jobs claimed ahead do,
// start as units free, and go back through the Driver's GiveBack when no unit frees within
// MaxWait or the loop stops. It returns false, keeping none, for a lane the loop does not
// have or once Run is stopping. It never blocks.
func (lp *Loop[J]) Offer(name string, jobs []J) bool {
	if lp.handles[name] == nil {
		return false
	}
	lp.mu.Lock()
	if lp.closed {
		lp.mu.Unlock()
		return false
	}
	if lp.offers == nil {
		lp.offers = map[string][]J{}
	}
	lp.offers[name] = append(lp.offers[name], jobs...)
	lp.mu.Unlock()
	lp.poke()
	return true
}

// takeOffers puts the jobs offered since the last step in their lanes' waiting line; with
// closing, Offer takes no more.
func (lp *Loop[J]) takeOffers(now time.Time, closing bool) {
	lp.mu.Lock()
	offers := lp.offers
	lp.offers, lp.closed = nil, lp.closed || closing
	lp.mu.Unlock()
	for _, l := range lp.s.lanes {
		if jobs := offers[l.name]; len(jobs) > 0 {
			l.waiting.Add(now, jobs...)
		}
	}
}

// Settled reports whether the loop has taken in every wake-up and every Done so far (tests of
// its drivers wait for it before they check that nothing happened).
func (lp *Loop[J]) Settled() bool { return len(lp.signal) == 0 }

func (lp *Loop[J]) poke() {
	select {
	case lp.signal <- struct{}{}:
	default:
	}
}

// Run claims and hands over jobs until ctx ends or the Driver's Start fails, then waits for
// the claims out, hands over their jobs as usual (their units are held for them), gives the
// jobs claimed ahead back and returns Start's error, if any. Run once.
func (lp *Loop[J]) Run(ctx context.Context) error {
	lp.ctx = ctx
	clk := lp.s.cfg.Clock
	var timer clock.Timer
	var timerAt time.Time
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for ctx.Err() == nil && !lp.s.stopping {
		lp.applyWeights()
		lp.takeOffers(clk.Now(), false)
		next, changed := lp.s.step(clk.Now(), lp)
		if lp.s.stopping {
			break
		}
		var fire <-chan time.Time
		if !next.IsZero() {
			if timer == nil || !next.Equal(timerAt) {
				if timer != nil {
					timer.Stop()
				}
				timer, timerAt = clock.NewTimerAt(clk, next), next
			}
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-lp.signal:
		case o := <-lp.results:
			lp.s.received(o.c, o.r, clk.Now(), lp)
		case <-fire:
			timer = nil
		case <-changed:
		}
	}
	lp.s.stopping = true
	for lp.s.inflight() > 0 {
		o := <-lp.results
		lp.s.received(o.c, o.r, clk.Now(), lp)
	}
	lp.takeOffers(clk.Now(), true)
	lp.s.giveBackAll(Stopping, lp)
	lp.claims.Wait()
	return lp.s.err
}

// applyWeights applies the weights SetWeights set.
func (lp *Loop[J]) applyWeights() {
	lp.mu.Lock()
	w := lp.weights
	lp.weights = nil
	lp.mu.Unlock()
	for _, l := range lp.s.lanes {
		if v, ok := w[l.name]; ok {
			l.share.Weight = v
		}
	}
}

// launch runs a claim on its own goroutine.
func (lp *Loop[J]) launch(c claimed) {
	lp.claims.Go(func() { lp.results <- outcome[J]{c: c, r: lp.d.Claim(lp.ctx, c.req)} })
}

func (lp *Loop[J]) start(lane string, jobs []J) error { return lp.d.Start(lane, jobs) }

func (lp *Loop[J]) giveBack(lane string, jobs []J, why Why) {
	lp.s.cfg.Logger.Info("gave back jobs claimed ahead", "queue", lane, "jobs", len(jobs), "why", why.String())
	lp.d.GiveBack(lane, jobs, why)
}

// String says why, for logs.
func (w Why) String() string {
	switch w {
	case Expired:
		return "no slot freed for them in time"
	case Governed:
		return "the resource governor holds"
	case Stopping:
		return "the worker stopped"
	case Returned:
		return "the worker was held while they were claimed"
	}
	return "unknown"
}
