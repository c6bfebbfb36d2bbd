package server

import (
	"context"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"slices"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/governor"
)

// A remote worker's resource governor (contract 15) holds it back with WorkerService.Hold.
// The worker keeps its stream: its credit is the server's, so the server is where new work
// stops. While the worker is held its streams on the queue start no claim and its waiting
// claims (a stream's long wait, a long poll) end at once, empty; the jobs it already has are
// untouched. A hold lapses holdTTL after the worker last said so (it repeats it every
// holdRefresh, the remote package's constant), so a worker that restarts under the same name
// without a governor is not held back for good.

// holdTTL is how long a hold lasts unless the worker repeats it.
const holdTTL = 30 * time.Second

// remoteLive: a remote worker seen this recently (or with a stream or poll open) works its
// queue, for its node's awaiting compute.
const remoteLive = 30 * time.Second

// Hold records whether the worker's governor holds it back.
func (w *workerService) Hold(ctx context.Context, req *hopperv1.HoldRequest) (*hopperv1.HoldResponse, error) {
	p := workerapi.ActivateParams{Worker: req.GetWorker(), Queue: req.GetQueue(), Queues: req.GetQueues()}
	if err := p.Check(); err != nil {
		return nil, rpcError("hold", err)
	}
	changed := false
	for _, q := range p.QueueNames() {
		if w.s.reg.hold(p.Worker, q, req.GetHeld(), w.s.clock.Now()) {
			w.s.log.Debug("remote worker governor", "worker", p.Worker, "queue", q, "held", req.GetHeld())
			changed = true
		}
	}
	if changed {
		w.s.api.RemoteQueuesChanged()
	}
	return &hopperv1.HoldResponse{}, nil
}

// hold records whether worker name's governor holds it back on queue, until holdTTL from at
// unless repeated, and reports whether that changed. A worker held ends its waiting claims;
// one let go wakes its streams.
func (r *registry) hold(name, queue string, held bool, at time.Time) bool {
	r.mu.Lock()
	w := r.workerLocked(name, queue, at)
	was := w.heldAt(at)
	w.lastSeen = at
	if held {
		w.heldUntil = at.Add(holdTTL)
		for c := range w.waits {
			c.cancel() // at once, not from a goroutine: the hold has taken effect when it answers
		}
	} else {
		w.heldUntil = time.Time{}
	}
	// Its streams look again: let go, they may push; held, they give back what they claimed
	// ahead.
	var wake []*stream
	for _, st := range r.streams {
		if slices.Contains(st.ws, w) {
			wake = append(wake, st)
		}
	}
	r.mu.Unlock()
	for _, st := range wake {
		st.wake()
	}
	return was != held
}

// workerLocked returns the entry of worker name on queue, made if new. r.mu must be held.
func (r *registry) workerLocked(name, queue string, at time.Time) *workerInfo {
	if len(r.workers) >= 256 {
		r.pruneLocked(at)
	}
	key := name + "\x00" + queue
	w := r.workers[key]
	if w == nil {
		w = &workerInfo{name: name, queue: queue, lastSeen: at}
		r.workers[key] = w
	}
	return w
}

// liveAt reports whether the worker works its queue at now: it has a stream or a long poll
// open, was seen within remoteLive (a polling worker calls again as soon as a poll ends;
// PollWait is 30 s), or is held back by its governor. Its node counts the queue of a live
// worker as worked (queues); the dashboard marks the others stale.
func (w *workerInfo) liveAt(now time.Time) bool {
	return w.streams > 0 || w.polls > 0 || now.Sub(w.lastSeen) < remoteLive || w.heldAt(now)
}

// heldAt reports whether the worker is held at now.
func (w *workerInfo) heldAt(now time.Time) bool { return now.Before(w.heldUntil) }

// untilHeld returns ctx, ended also when worker name becomes held on any of queues (at once
// if it is held at now), and the func that releases it. A Hold cancels it before it answers.
func (r *registry) untilHeld(ctx context.Context, name string, queues []string, now time.Time) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &claimWait{cancel: cancel}
	var ws []*workerInfo
	for _, q := range queues {
		w := r.workers[name+"\x00"+q]
		if w == nil { // seen first, so only if pruned meanwhile
			continue
		}
		if w.heldAt(now) {
			cancel()
		}
		if w.waits == nil {
			w.waits = map[*claimWait]struct{}{}
		}
		w.waits[c] = struct{}{}
		ws = append(ws, w)
	}
	return ctx, func() {
		r.mu.Lock()
		for _, w := range ws {
			delete(w.waits, c)
		}
		r.mu.Unlock()
		cancel()
	}
}

// heldUntil returns when worker name's hold on queue lapses, zero when it is not held at now.
func (r *registry) heldUntil(name, queue string, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.workers[name+"\x00"+queue]; w != nil && w.heldAt(now) {
		return w.heldUntil
	}
	return time.Time{}
}

// queues returns the queues the live remote workers work (those with a stream or poll open,
// or seen within remoteLive) and those where every one of them is held, both sorted: this
// server's part of its node's heartbeat.
func (r *registry) queues(now time.Time) (queues, held []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	holds := governor.Holds{}
	for _, w := range r.workers {
		if !w.liveAt(now) {
			continue
		}
		holds.Add(w.queue, w.heldAt(now))
	}
	return holds.Lists()
}
