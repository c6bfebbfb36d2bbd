package engine

import "sync"

// slots is the process-wide concurrency limit. Releasing broadcasts to every waiting producer.
type slots struct {
	mu      sync.Mutex
	free    int
	changed chan struct{}
}

func newSlots(n int) *slots { return &slots{free: n, changed: make(chan struct{})} }

// tryAcquire takes up to n slots without waiting and returns how many it took.
func (s *slots) tryAcquire(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n = min(n, s.free)
	s.free -= n
	return n
}

// release returns n slots and wakes the waiters.
func (s *slots) release(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.free += n
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// wait returns a channel closed at the next release.
func (s *slots) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
