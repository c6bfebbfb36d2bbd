package server

import "time"

// streamRecheck is how often a stream looks again at its queues found without ready jobs,
// for jobs that no wake-up announced (as a long poll does, hopper.WorkerAPI.Activate).
const streamRecheck = time.Second

// asking says which of a stream's queues its next claim asks (contract 14: they share its
// credit by weight, hopper.WorkerAPI.ActivateQueues): all of them, less those found without
// ready jobs (drained), until a wake-up names them or the stream looks at all again
// (streamRecheck). A queue woken while a claim that found it drained was under way stays
// asked: the job that woke it may have come after that claim looked.
type asking struct {
	queues   []string
	drained  map[string]bool
	launched int            // claims launched
	woke     map[string]int // per queue, the claims launched when it was last woken
}

func newAsking(queues []string) *asking {
	return &asking{queues: queues, drained: map[string]bool{}, woke: map[string]int{}}
}

// next returns the queues to ask, in the stream's order; none when every one is drained.
func (a *asking) next() []string {
	out := make([]string, 0, len(a.queues))
	for _, q := range a.queues {
		if !a.drained[q] {
			out = append(out, q)
		}
	}
	return out
}

// anyDrained reports whether some queue waits for a wake-up or the recheck.
func (a *asking) anyDrained() bool { return len(a.drained) > 0 }

// launch records that a claim starts and returns its number, for found.
func (a *asking) launch() int {
	a.launched++
	return a.launched
}

// found records the queues that claim number n found drained, but those woken since it
// started.
func (a *asking) found(n int, drained []string) {
	for _, q := range drained {
		if a.woke[q] < n {
			a.drained[q] = true
		}
	}
}

// woken records wake-ups of queues.
func (a *asking) woken(queues []string) {
	for _, q := range queues {
		delete(a.drained, q)
		a.woke[q] = a.launched
	}
}

// all asks every queue again.
func (a *asking) all() { clear(a.drained) }
