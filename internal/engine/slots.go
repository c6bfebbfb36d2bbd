package engine

import (
	"sync"

	"github.com/hopperjobs/hopper/internal/fairshare"
)

// slots is the process-wide concurrency limit, shared between the queues by weight. A queue
// holds the slots of its outstanding claims and running jobs. While the pool has room every
// queue takes what it asks for; once queues compete, a queue that wants slots is owed its
// weighted share of the pool among the queues that want slots (weight × total ÷ the wanting
// queues' weights, at most its own concurrency), and a slot freed goes to a queue below its
// share before any other queue can take it. So a flooded queue that holds every slot gives
// them up, one finished job at a time, to a queue that wakes up with work, until each holds
// its share; a queue with nothing to do is owed nothing. Releasing broadcasts to every
// waiting producer.
type slots struct {
	mu      sync.Mutex
	total   int
	free    int
	queues  map[string]*fairshare.Queue // Max: the queue's own concurrency in this process
	changed chan struct{}
}

func newSlots(n int) *slots {
	return &slots{total: n, free: n, queues: map[string]*fairshare.Queue{}, changed: make(chan struct{})}
}

// add registers queue with its concurrency in this process and weight 1.
func (s *slots) add(queue string, max int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[queue] = &fairshare.Queue{Name: queue, Max: max, Weight: 1}
}

// setWeights sets the weights of the queues named in w (weights under 1 count as 1); the
// others keep theirs.
func (s *slots) setWeights(w map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	changed := false
	for name, weight := range w {
		if q := s.queues[name]; q != nil && q.Weight != max(weight, 1) {
			q.Weight, changed = max(weight, 1), true
		}
	}
	if changed {
		s.broadcastLocked()
	}
}

// weight is queue's weight.
func (s *slots) weight(queue string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queues[queue].Weight
}

// want records whether queue has work waiting for slots. A queue that stops wanting frees
// what it was owed for the others.
func (s *slots) want(queue string, wanting bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[queue]
	if q.Wanting == wanting {
		return
	}
	q.Wanting = wanting
	if !wanting {
		s.broadcastLocked()
	}
}

// tryAcquire takes up to n slots for queue without waiting, leaving what the other wanting
// queues are owed, and returns how many it took. It marks queue as wanting.
func (s *slots) tryAcquire(queue string, n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[queue]
	q.Wanting = true
	n = min(n, s.free-s.owedLocked(q))
	if n <= 0 {
		return 0
	}
	s.free -= n
	q.Held += n
	q.Served += int64(n)
	return n
}

// owedLocked is how many free slots the wanting queues other than q are owed: what each
// holds below its weighted share among the wanting queues and q.
func (s *slots) owedLocked(q *fairshare.Queue) int {
	var others []*fairshare.Queue
	for _, o := range s.queues {
		if o != q && o.Wanting {
			others = append(others, o)
		}
	}
	if len(others) == 0 {
		return 0 // nobody else wants slots
	}
	owed := 0
	for o, fair := range fairshare.Shares(s.total, append(others, q)) {
		if o != q {
			owed += max(min(fair, o.Max)-o.Held, 0)
		}
	}
	return owed
}

// release returns n of queue's slots and wakes the waiters.
func (s *slots) release(queue string, n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free += n
	s.queues[queue].Held -= n
	s.broadcastLocked()
}

func (s *slots) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// wait returns a channel closed at the next release (or change of shares).
func (s *slots) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
