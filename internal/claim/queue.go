package claim

import "time"

// Unrenewed is how long a job claimed ahead may wait where nothing renews its lease meanwhile
// (a server's stream, a polling worker): the default MaxWait, or a quarter of the lease if
// that is shorter, so that it starts with most of its lease left.
func Unrenewed(lease time.Duration) time.Duration { return min(defaultMaxWait, lease/4) }

// queue holds a lane's jobs claimed ahead in claim order, each with the time it was claimed.
// Its zero value is empty and ready.
type queue[J any] struct {
	jobs []J
	at   []time.Time
}

// Len is how many jobs wait.
func (q *queue[J]) Len() int { return len(q.jobs) }

// Add appends the jobs of a claim made at at, behind those that wait.
func (q *queue[J]) Add(at time.Time, jobs ...J) {
	for _, j := range jobs {
		q.jobs, q.at = append(q.jobs, j), append(q.at, at)
	}
}

// Take removes and returns the n that waited longest (all of them if fewer wait).
func (q *queue[J]) Take(n int) []J {
	n = max(min(n, len(q.jobs)), 0)
	out := q.jobs[:n:n]
	q.jobs, q.at = q.jobs[n:], q.at[n:]
	if len(q.jobs) == 0 {
		q.jobs, q.at = nil, nil // let the backing arrays go
	}
	return out
}

// All removes and returns every job.
func (q *queue[J]) All() []J { return q.Take(len(q.jobs)) }

// Due is when the job that waited longest will have waited maxWait; zero when none waits.
func (q *queue[J]) Due(maxWait time.Duration) time.Time {
	if len(q.at) == 0 {
		return time.Time{}
	}
	return q.at[0].Add(maxWait)
}
