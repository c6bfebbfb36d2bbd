// Package ahead holds jobs claimed ahead: jobs a claimer took beyond its free slots, for the
// slots its running jobs will free while the next claim is on its way (docs/workers.md,
// "Claiming ahead"). The engine's producers, the server's job streams and remote workers that
// poll all claim ahead; this package is the one place for what they share: the queue the jobs
// wait in, in claim order, how long one may wait, and how many the next claim asks for.
package ahead

import (
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

// MaxWait bounds how long a job claimed ahead waits for a slot: past it the claimer gives the
// jobs that wait back to their queue, attempt unspent (another worker may have free slots).
const MaxWait = time.Second

// Unrenewed is how long a job claimed ahead may wait where nothing renews its lease meanwhile
// (a server's stream, a polling worker): MaxWait, or a quarter of the lease if that is
// shorter, so that it starts with most of its lease left.
func Unrenewed(lease time.Duration) time.Duration { return min(MaxWait, lease/4) }

// Next is how many jobs the next claim asks for ahead, after a claim that held asked slots,
// asked for extra jobs beyond them and got got: as many as the claimer's jobs ended (freed
// their slots) during that claim's round trip, at most limit. None after a claim that came
// back short (the queue ran dry) or restricted (a cap, a rate limit or a disabled kind
// applies, and the store takes none ahead): jobs claimed ahead would wait for nothing, or
// hold a cap's slots idle.
func Next(h store.Hold, got, asked, extra, ended, limit int) int {
	if h.Restricted || !h.Full(got, asked, extra) {
		return 0
	}
	return max(min(ended, limit), 0)
}

// Queue holds jobs claimed ahead in claim order, each with the time it was claimed. Its zero
// value is empty and ready; it is not safe for concurrent use (its claim loop owns it).
type Queue[T any] struct {
	jobs []T
	at   []time.Time
}

// Len is how many jobs wait.
func (q *Queue[T]) Len() int { return len(q.jobs) }

// Add appends the jobs of a claim made at at, behind those that wait.
func (q *Queue[T]) Add(at time.Time, jobs ...T) {
	for _, j := range jobs {
		q.jobs, q.at = append(q.jobs, j), append(q.at, at)
	}
}

// Take removes and returns the n that waited longest (all of them if fewer wait).
func (q *Queue[T]) Take(n int) []T {
	n = max(min(n, len(q.jobs)), 0)
	out := q.jobs[:n:n]
	q.jobs, q.at = q.jobs[n:], q.at[n:]
	if len(q.jobs) == 0 {
		q.jobs, q.at = nil, nil // let the backing arrays go
	}
	return out
}

// All removes and returns every job.
func (q *Queue[T]) All() []T { return q.Take(len(q.jobs)) }

// Due is when the job that waited longest will have waited maxWait; zero when none waits.
func (q *Queue[T]) Due(maxWait time.Duration) time.Time {
	if len(q.at) == 0 {
		return time.Time{}
	}
	return q.at[0].Add(maxWait)
}

// Expired reports whether the job that waited longest has waited maxWait by now.
func (q *Queue[T]) Expired(now time.Time, maxWait time.Duration) bool {
	return len(q.at) > 0 && !now.Before(q.at[0].Add(maxWait))
}
