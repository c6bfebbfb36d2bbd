package store

import (
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// BatchClaimParams claims one batch: up to MaxJobs queued jobs of Kind in Queue that run
// together in one handler call. A batch is the consecutive queued jobs of one group (same kind,
// group order, the group's older unfinished jobs blocking as in any claim) or, with Ungrouped,
// jobs of the kind without a group key. Each job gets its own lease and fencing token.
type BatchClaimParams struct {
	Queue   string
	Kind    string
	MaxJobs int
	// MaxWait is the linger: a candidate batch with fewer than MaxJobs ready jobs (fewer than
	// the caps let the claim take, when that is less) is claimed only once its oldest job has
	// been due (run_at) for MaxWait. 0 claims whatever is there.
	MaxWait time.Duration
	// Ungrouped also batches the kind's jobs that have no group key.
	Ungrouped     bool
	WorkerID      string
	LeaseDuration time.Duration
}

// BatchClaim is what a batch claim took.
type BatchClaim struct {
	// Jobs are the batch's jobs, in group order (ungrouped: claim order); none when no
	// candidate batch was ready.
	Jobs []*hoppertype.JobRow
	// Hold says what the caps and rate limits held back, as for JobClaim.
	Hold Hold
	// ReadyAt, when not zero, is the soonest time a candidate batch that lingers (it has fewer
	// than MaxJobs jobs and its oldest has not been due for MaxWait) becomes ready.
	ReadyAt time.Time
}

// BatchHeadScan bounds the candidate batches (groups' first jobs, and the ungrouped jobs as
// one) a batch claim looks at, in claim order: a claim costs at most this many group reads.
// Without a linger the first candidate is always ready, and only it is read.
const BatchHeadScan = 16

// BatchCandidate is one would-be batch a store found: the jobs it would take, in order, with
// the priority and id of its first job (its place in claim order) and the oldest run_at.
type BatchCandidate struct {
	IDs      []string
	Priority int
	FirstID  string
	Oldest   time.Time
}

// Ready reports whether the candidate is claimed now: it has want jobs, or its oldest job has
// been due for maxWait; else when it will be.
func (c *BatchCandidate) Ready(want int, maxWait time.Duration, now time.Time) (bool, time.Time) {
	at := c.Oldest.Add(maxWait)
	return len(c.IDs) >= want || !now.Before(at), at
}

// Before orders candidates in claim order: higher priority first, then older first.
func (c *BatchCandidate) Before(o *BatchCandidate) bool {
	if c.Priority != o.Priority {
		return c.Priority > o.Priority
	}
	return c.FirstID < o.FirstID
}

// PickBatch returns the first ready candidate in claim order (nil: none), and the soonest time
// one of the others becomes ready (zero: none lingers). want is how many jobs the claim may
// take (MaxJobs bounded by the caps).
func PickBatch(cands []*BatchCandidate, want int, maxWait time.Duration, now time.Time) (*BatchCandidate, time.Time) {
	var readyAt time.Time
	var best *BatchCandidate
	for _, c := range cands {
		if len(c.IDs) == 0 {
			continue // its first job was taken meanwhile (PostgreSQL: read after a lock wait)
		}
		ok, at := c.Ready(want, maxWait, now)
		switch {
		case ok:
			if best == nil || c.Before(best) {
				best = c
			}
		case readyAt.IsZero() || at.Before(readyAt):
			readyAt = at
		}
	}
	if best != nil && len(best.IDs) > want {
		best.IDs = best.IDs[:want]
	}
	return best, readyAt
}

// BatchRun is one job of a group read in group order from its first queued job on, for
// TakeRun.
type BatchRun struct {
	ID, Kind, Queue string
	State           hoppertype.JobState
	RunAt           time.Time
}

// TakeRun is the batch a group offers from its first job on: its consecutive queued jobs of
// kind in queue, in group order, at most max; it stops at the first job that is not (another
// kind, another queue, a scheduled retry or a suspended job keeps its place in the group).
func TakeRun(head *BatchCandidate, run []BatchRun, kind, queue string, max int) {
	for _, r := range run {
		if len(head.IDs) >= max || r.State != hoppertype.StateQueued || r.Kind != kind || r.Queue != queue {
			return
		}
		head.IDs = append(head.IDs, r.ID)
		if head.Oldest.IsZero() || r.RunAt.Before(head.Oldest) {
			head.Oldest = r.RunAt
		}
	}
}
