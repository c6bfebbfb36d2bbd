package hoppertype

import (
	"sort"
	"time"
)

// WaitBounds are the upper bounds of the wait histogram's buckets (a wait is the time from a
// job's run_at, when it became due, to the start of its attempt). Bucket i counts the waits
// in [WaitBounds[i-1], WaitBounds[i]); the last bucket counts the waits of WaitBounds' last
// value or more. Stores keep one column per bucket: changing the bounds is a migration.
var WaitBounds = [WaitBuckets - 1]time.Duration{
	5 * time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond,
	2 * time.Second, 10 * time.Second, time.Minute, 5 * time.Minute, 30 * time.Minute,
}

// WaitBuckets is the number of buckets of a WaitHistogram.
const WaitBuckets = 10

// WaitHistogram counts waits per bucket of WaitBounds.
type WaitHistogram [WaitBuckets]int64

// WaitBucket is the bucket of WaitBounds a wait falls in (a negative wait counts as none).
func WaitBucket(wait time.Duration) int {
	return sort.Search(len(WaitBounds), func(i int) bool { return WaitBounds[i] > wait })
}

// Add counts one wait.
func (h *WaitHistogram) Add(wait time.Duration) { h[WaitBucket(wait)]++ }

// Merge adds o's counts to h's.
func (h *WaitHistogram) Merge(o *WaitHistogram) {
	for i := range h {
		h[i] += o[i]
	}
}

// Count is the number of waits counted.
func (h *WaitHistogram) Count() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Percentile estimates the p-th percentile (0 < p ≤ 100) of the waits as the upper bound of
// the bucket it falls in (so it never understates a wait); the last bucket, which has no upper
// bound, reports its lower bound. It is 0 when nothing was counted.
func (h *WaitHistogram) Percentile(p float64) time.Duration {
	total := h.Count()
	if total == 0 {
		return 0
	}
	rank := int64(float64(total)*p/100 + 0.999999)
	var seen int64
	for i, c := range h {
		seen += c
		if seen >= rank && i < len(WaitBounds) {
			return WaitBounds[i]
		}
	}
	return WaitBounds[len(WaitBounds)-1]
}

// MinuteStats is what happened to the jobs of one kind in one queue during one minute: the
// history behind the dashboard's charts. Stores write it in the transactions that enqueue and
// finish jobs and keep it for StatsRetention.
type MinuteStats struct {
	Minute    time.Time // the minute's start, UTC
	Queue     string
	Kind      string
	Enqueued  int64 // jobs inserted (not those an idempotency key or a merge key folded into another)
	Completed int64 // attempts that ended completed
	// Failed counts the new dead letters: attempts that ended failed, jobs failed because their
	// worker was lost once more than their MaxRescues allow (outcome worker_lost), and
	// suspended jobs failed at their deadline.
	Failed  int64
	Retried int64 // attempts that failed (error, timeout, panic) with attempts left
	// Wait counts the waits of the attempts that ended this minute without a new run_at (every
	// completed or failed attempt; not a retry, a snooze or a suspension, nor a job failed by
	// the leader: a lost worker's, an overdue suspension's).
	Wait WaitHistogram
}

// Add adds o's counts to s's.
func (s *MinuteStats) Add(o *MinuteStats) {
	s.Enqueued += o.Enqueued
	s.Completed += o.Completed
	s.Failed += o.Failed
	s.Retried += o.Retried
	s.Wait.Merge(&o.Wait)
}

// StatsRetention is how long stores keep MinuteStats; the leader's sweep prunes older ones.
const StatsRetention = 7 * 24 * time.Hour
