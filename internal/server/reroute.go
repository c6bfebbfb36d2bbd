package server

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/claim"
)

// pushFailure says why jobs claimed for a stream could not be pushed to its worker, or were
// pushed late (hopper_stream_push_failed_total{reason}).
type pushFailure int

const (
	// pushClosed: the stream had ended (the worker went away, the server shuts down, its key
	// was revoked) before the jobs could be sent.
	pushClosed pushFailure = iota
	// pushSendError: writing the message to the worker failed.
	pushSendError
	// pushTooSlow: the write blocked for longer than slowPush: the worker does not read what
	// it is sent (HTTP/2 flow control holds the server back), so the jobs reach it late. The
	// stream never sends more than the worker's credit, so a worker that reads only blocks a
	// push when it, or the network to it, is stalled.
	pushTooSlow
	pushFailures // the number of reasons
)

// slowPush is how long a push may block before it counts as blocked by a worker too slow.
const slowPush = time.Second

// label is the reason's value of the metric's label.
func (f pushFailure) label() string {
	return [...]string{"stream_closed", "send_error", "worker_too_slow"}[f]
}

// pushCounters count the jobs whose push failed, by reason, and those handed to another
// stream (hopper_stream_push_rerouted_total).
type pushCounters struct {
	failed   [pushFailures]atomic.Int64
	rerouted atomic.Int64
}

// failed counts n jobs whose push failed for why.
func (c *pushCounters) fail(why pushFailure, n int) { c.failed[why].Add(int64(n)) }

// reroute offers jobs claimed for stream from that were never pushed to it (its push failed,
// or it closed first) to the other open streams of this server that take their queue and
// kind, whose worker is not held back and that have credit free, and room in their cap of
// the job's kind if they cap it (counted from then on, as the stream's own claims are): the first such stream in
// the order of most credit free takes each job, which waits in its claim loop as jobs claimed
// ahead do (claim.Loop.Offer) and is pushed with the job's lease as it is. It returns the
// jobs no stream took, for the caller to give back to their queue.
func (r *registry) reroute(from *stream, jobs []*hopper.JobRow, now time.Time) (left []*hopper.JobRow) {
	type offer struct {
		st    *stream
		queue string
	}
	offers := map[offer][]*hopper.JobRow{}
	var order []offer
	r.mu.Lock()
	free := map[*stream]int{}
	for _, st := range r.streams {
		if st != from && st.offer != nil && !st.heldLocked(now) {
			free[st] = st.credit - len(st.inflight)
		}
	}
	for _, j := range jobs {
		st := bestTarget(free, j, now)
		if st == nil || !st.caps.Take(j.Kind) {
			left = append(left, j)
			continue
		}
		free[st]--
		o := offer{st, j.Queue}
		if offers[o] == nil {
			order = append(order, o)
		}
		offers[o] = append(offers[o], j)
	}
	r.mu.Unlock()
	for _, o := range order {
		got := offers[o]
		if !o.st.offer(o.queue, got) {
			for _, j := range got {
				o.st.caps.Free(j.Kind, 1)
			}
			left = append(left, got...)
			continue
		}
		r.push.rerouted.Add(int64(len(got)))
	}
	return left
}

// bestTarget is the stream of free with the most credit free that takes j; nil if none. A
// stream takes j if it works j's queue and kind, its cap of j's kind (if it has one) has
// room, and j's lease outlasts the longest j may wait in its claim loop for credit (its
// MaxWait).
func bestTarget(free map[*stream]int, j *hopper.JobRow, now time.Time) *stream {
	var best *stream
	for st, n := range free {
		if n <= 0 || !slices.Contains(st.queues, j.Queue) || len(st.kinds) > 0 && !slices.Contains(st.kinds, j.Kind) ||
			st.caps.Saturated(j.Kind) {
			continue
		}
		if !j.LeaseExpiresAt.IsZero() && !now.Add(claim.Unrenewed(st.lease)).Before(j.LeaseExpiresAt) {
			continue
		}
		if best == nil || n > free[best] || n == free[best] && st.id < best.id {
			best = st
		}
	}
	return best
}

// heldLocked reports whether the stream's worker is held back at now on any of its queues
// (reg.mu held).
func (st *stream) heldLocked(now time.Time) bool {
	return slices.ContainsFunc(st.ws, func(w *workerInfo) bool { return w.heldAt(now) })
}
