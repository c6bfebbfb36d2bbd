package store

import (
	"fmt"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Bounded rescues (contract 3). Every way a running job loses its worker — its lease expires,
// its node stops heartbeating, a remote worker's stream closes under it — goes through one
// transition per store: while the job's Rescues are under its MaxRescues it returns to queued
// (attempt given back, outcome lease_expired, Rescues+1); the loss after that fails it with
// outcome worker_lost, finished and kept for the dead-letter retention, so a job that crashes
// or hangs its worker ends in the dead-letter queue instead of looping.

// DefaultMaxRescues is the bound of a job inserted with MaxRescues 0.
const DefaultMaxRescues = 3

// IdleNodeTTL is how long a node marked idle (hoppertype.Node.Idle) stays registered without
// a heartbeat: the leader's dead-node rescue removes it after that. An idle node holds no jobs
// and is never taken for dead (its jobs are not rescued, it is not removed, with NodeTTL), so
// without this bound one that crashed while idle would be listed for ever. A live idle node
// heartbeats again well within it.
const IdleNodeTTL = 24 * time.Hour

// RescueBound is the max_rescues a store keeps for n: DefaultMaxRescues for 0, -1 (unbounded)
// for any negative n, else n.
func RescueBound(n int) int {
	switch {
	case n == 0:
		return DefaultMaxRescues
	case n < 0:
		return -1
	}
	return n
}

// WorkerLostError is the error a job that ran out of rescues fails with: losses is the number
// of times its worker was lost (its rescues plus the last one), last why the last one was.
// Stores build the same text in SQL; this is the reference their tests compare against.
func WorkerLostError(losses, maxRescues int, last string) string {
	return fmt.Sprintf("worker lost %d times (max_rescues %d); last: %s", losses, maxRescues, last)
}

// LeaseRef names one attempt: a job and the fencing token of its lease.
type LeaseRef struct {
	ID    string
	Token int64
}

// RescueLeasesParams rescues attempts whose worker the caller knows is gone.
type RescueLeasesParams struct {
	Leases []LeaseRef
	// Actor and Reason are recorded in the jobs' history; Error with the lost attempts.
	Actor  hoppertype.Actor
	Reason string
	Error  string
	// ExpiresAt is as in RescueParams.
	ExpiresAt time.Time
}

// Add records one job of kind a rescue moved to state: failed (out of rescues), or back to
// queue.
func (r *RescueResult) Add(id, kind, queue string, state hoppertype.JobState) {
	r.Jobs = append(r.Jobs, RescuedJob{ID: id, Kind: kind, Queue: queue, State: state})
	if state == hoppertype.StateFailed {
		r.Failed = append(r.Failed, id)
		return
	}
	r.JobIDs = append(r.JobIDs, id)
	if !slices.Contains(r.Queues, queue) {
		r.Queues = append(r.Queues, queue)
	}
}
