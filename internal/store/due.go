package store

import (
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// DueHeadJobs bounds the jobs whose expiries LeaderDue reads: the first DueHeadJobs of the
// table in id order (its oldest), an index range, whatever the table holds. There is no index
// on expires_at (it cost every finish an entry); reading every job's expiry scanned the whole
// table, seconds for ten million retained jobs, on every read of every node that does not lead
// (docs/benchmarks.md#at-scale). Jobs mostly end in id order with one retention, so the oldest
// expire first; a newer job with a shorter retention than all of them is swept when they
// expire or when the cluster is next active (reads never show a job past its expiry).
const DueHeadJobs = 5000

// DueParams asks LeaderDue what the leader's duties have to do next.
type DueParams struct {
	// ExpiringAfter: only expiries after this count for Due.NextExpiry (the store's time when
	// the sweep's last complete walk of the table began: everything that expired before it was
	// deleted by that walk or is kept by an idempotency key, whose own expiry counts). The
	// later of it and the time the lease row keeps (LeaderParams.SweptBefore) counts; zero and
	// none count every expiry.
	ExpiringAfter time.Time
	// HeadJobs is how many of the oldest jobs' expiries count (see DueHeadJobs); 0 is
	// DueHeadJobs. The leader leaves it 0; the conformance suite sets a few to test the bound
	// without filling thousands of jobs.
	HeadJobs int
}

// Head is p.HeadJobs, or DueHeadJobs when it is not set.
func (p *DueParams) Head() int {
	if p.HeadJobs > 0 {
		return p.HeadJobs
	}
	return DueHeadJobs
}

// Due is what the leader's duties have to do next, read without writing: a node leaves the
// leader lease unheld while none of it is due, and takes it when some of it is.
type Due struct {
	// Leader is the leader lease as stored, nil when there never was one. It is live while
	// ExpiresAt is after the store's clock.
	Leader *hoppertype.Leadership
	// Running: some job is running (its lease must be watched).
	Running bool
	// The earliest run_at of a scheduled job, deadline of a suspended job, next fire time of
	// a schedule that is not paused, and expiry (of a job or an idempotency key) after
	// DueParams.ExpiringAfter. Zero: none.
	NextRunAt, NextDeadline, NextFire, NextExpiry time.Time
}

// Earliest is the earliest of the times in d (zero: none).
func (d *Due) Earliest() time.Time {
	return Earlier(Earlier(d.NextRunAt, d.NextDeadline), Earlier(d.NextFire, d.NextExpiry))
}

// Earlier is the earlier of two times, zero meaning none.
func Earlier(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
