package hopper

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/internal/fairshare"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/workerapi"
)

// A remote worker may ask for several queues at once (ActivateParams.Queues): one poll, or
// one job stream, shares its jobs between them by weight, as a process shares its workers
// (contract 14, internal/fairshare).

// activatePoll is how often a waiting Activate looks at its queues without a wake-up, for
// jobs that no notification announced.
const activatePoll = time.Second

// ActivateQueues is Activate that also says which queues it found without ready jobs at its
// last look, and when a rate limit lets one start again: a caller that asks again and again
// for one worker (a job stream) need not ask those again until a wake-up says they may have
// more, or Retry has passed.
func (a *workerAPI) ActivateQueues(ctx context.Context, p workerapi.ActivateParams) (*workerapi.Activated, error) {
	c := a.c
	if err := p.Validate(c.cfg.LeaseDuration); err != nil {
		return nil, err
	}
	queues := p.QueueNames()
	weights := map[string]int{}
	if len(queues) > 1 {
		weights = c.engine.QueueWeights(ctx, queues)
	}
	deadline := c.clock.Now().Add(p.Wait)
	var wakes *wakeups
	if p.Wait > 0 {
		// Listen before claiming: a job enqueued between an empty claim and the wait still
		// wakes us.
		wakes = a.listen(queues)
		defer wakes.Stop()
	}
	empty := map[string]bool{}
	asking := queues
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		batchOf := map[string]string{}
		jobs, retry, said, err := a.claimShared(ctx, p, asking, weights, empty, batchOf)
		if err != nil {
			return nil, fmt.Errorf("activate jobs: %w", err)
		}
		left := deadline.Sub(c.clock.Now())
		if len(jobs) > 0 || left <= 0 {
			got := &workerapi.Activated{Jobs: jobs, Retry: retry, Restricted: said.Restricted, FairAhead: said.FairAhead}
			if len(batchOf) > 0 {
				got.BatchIDs = batchOf
			}
			for _, q := range queues {
				if empty[q] {
					got.Drained = append(got.Drained, q)
				}
			}
			return got, nil
		}
		next := activatePoll
		if retry > 0 {
			next = retry
		}
		t := c.clock.NewTimer(min(left, next))
		select {
		case <-ctx.Done():
		case <-wakes.C():
			asking = wakes.Take()
		case <-t.C():
			wakes.Take() // every queue is looked at anyway
			asking = queues
		}
		t.Stop()
	}
}

// claimShared claims up to p.MaxJobs jobs from asking, shared by weights and p.Held
// (fairshare.Split), in rounds: the part of a queue that had fewer ready jobs goes to the
// others in the next round, until p.MaxJobs are claimed or every queue came back short. It
// records in empty whether each queue asked had fewer ready jobs than it was asked for, and
// returns how soon a rate limit that held one of its claims back allows another start (0 when
// none did; at most activatePoll), and what its claims' holds said together: whether a cap,
// rate limit or disabled kind applied to a claim (Restricted), and how far a fair claim lets
// its caller claim ahead (FairAhead). Only a single queue's first claim asks ahead (p.Ahead). The batch of each job claimed
// in one goes in batchOf; a batch that lingers counts as a rate limit's wait does.
func (a *workerAPI) claimShared(ctx context.Context, p workerapi.ActivateParams, asking []string, weights map[string]int,
	empty map[string]bool, batchOf map[string]string) (jobs []*JobRow, retry time.Duration, said store.Hold, err error) {
	qs := make([]*fairshare.Queue, len(asking))
	for i, name := range asking {
		qs[i] = &fairshare.Queue{Name: name, Weight: max(weights[name], 1), Held: max(p.Held[name], 0)}
		empty[name] = false
	}
	for left := p.MaxJobs; left > 0 && len(qs) > 0; {
		parts := fairshare.Split(left, qs, rand.Float64())
		next := qs[:0:0]
		for _, q := range qs {
			n := parts[q]
			if n == 0 {
				next = append(next, q)
				continue
			}
			if ctx.Err() != nil {
				return jobs, retry, said, nil // claims nothing more (Activate)
			}
			one := p
			one.Queue, one.MaxJobs, one.Ahead = q.Name, n, 0
			if len(asking) == 1 && n == p.MaxJobs {
				one.Ahead = p.Ahead
			}
			got, err := a.claim(ctx, one)
			hold := got.hold
			if err != nil && len(jobs) == 0 {
				return nil, 0, store.Hold{}, err
			}
			if err != nil {
				return jobs, retry, said, nil // the jobs claimed are the caller's (Activate)
			}
			said.Restricted = said.Restricted || hold.Restricted
			said.FairAhead = store.ShorterSet(said.FairAhead, hold.FairAhead)
			if hold.Restricted { // the claim asked for none ahead, and no later round may
				n, left = n-one.Ahead, left-one.Ahead
			}
			if r := hold.Retry(activatePoll, activatePoll); hold.Wait > 0 && (retry == 0 || r < retry) {
				retry = r
			}
			if !got.readyAt.IsZero() { // a batch lingers: look again when it is ready
				r := min(max(got.readyAt.Sub(a.c.clock.Now()), time.Millisecond), activatePoll)
				if retry == 0 || r < retry {
					retry = r
				}
			}
			for id, b := range got.batchOf {
				batchOf[id] = b
			}
			jobs = append(jobs, got.jobs...)
			left -= len(got.jobs)
			q.Held += len(got.jobs)
			empty[q.Name] = len(got.jobs) < n
			if len(got.jobs) == n {
				next = append(next, q)
			}
		}
		qs = next
	}
	return jobs, retry, said, nil
}

// wakeups hears when jobs may have become claimable in any of a set of queues (as
// JobsAvailable does for one queue), for as long as it listens: a caller that claims from
// several queues again and again (a job stream) learns which to look at again. Its methods
// are safe for concurrent use.
type wakeups struct {
	a      *availability
	queues []string
	c      chan struct{}   // buffered 1: something to Take
	woken  map[string]bool // guarded by a.mu
	fn     func(queue string)
}

// listen starts listening for wake-ups of queues; Stop ends it.
func (a *workerAPI) listen(queues []string) *wakeups {
	av := &a.c.avail
	w := &wakeups{a: av, queues: slices.Clone(queues), c: make(chan struct{}, 1), woken: map[string]bool{}}
	av.mu.Lock()
	defer av.mu.Unlock()
	if av.listeners == nil {
		av.listeners = map[*wakeups]struct{}{}
	}
	av.listeners[w] = struct{}{}
	return w
}

// ListenFunc calls fn with the name of each of queues that jobs may have become claimable in,
// from then until stop is called; fn is called with a.mu held, so it must not block nor call
// back into the API. A job stream's claim loop listens so.
func (a *workerAPI) ListenFunc(queues []string, fn func(queue string)) (stop func()) {
	av := &a.c.avail
	w := &wakeups{a: av, queues: slices.Clone(queues), fn: fn}
	av.mu.Lock()
	defer av.mu.Unlock()
	if av.listeners == nil {
		av.listeners = map[*wakeups]struct{}{}
	}
	av.listeners[w] = struct{}{}
	return w.Stop
}

// QueueWeights returns the weights a remote worker's jobs of several queues are shared by:
// each queue's stored weight, else this process's QueueConfig.Weight, else 1.
func (a *workerAPI) QueueWeights(ctx context.Context, queues []string) map[string]int {
	return a.c.engine.QueueWeights(ctx, queues)
}

// C receives when Take has queues to return. A nil wakeups's never does.
func (w *wakeups) C() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.c
}

// Take returns the queues woken since the last Take, in the order listen was given them.
func (w *wakeups) Take() []string {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	var out []string
	for _, q := range w.queues {
		if w.woken[q] {
			out = append(out, q)
		}
	}
	clear(w.woken)
	return out
}

// Stop ends the listening.
func (w *wakeups) Stop() {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	delete(w.a.listeners, w)
}

// heardLocked records a wake-up of queue ("": of every queue). a.mu is held.
func (w *wakeups) heardLocked(queue string) {
	if w.fn != nil {
		for _, q := range w.queues {
			if queue == "" || q == queue {
				w.fn(q)
			}
		}
		return
	}
	switch {
	case queue == "":
		for _, q := range w.queues {
			w.woken[q] = true
		}
	case slices.Contains(w.queues, queue):
		w.woken[queue] = true
	default:
		return
	}
	select {
	case w.c <- struct{}{}:
	default:
	}
}
