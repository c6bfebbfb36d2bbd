package governor

import "slices"

// Holds gathers, queue by queue, whether every worker of the queue is held back by its
// governor: what a node's heartbeat records for awaiting compute.
type Holds map[string]bool

// Add counts one worker of queue, held back or not.
func (h Holds) Add(queue string, held bool) {
	prev, seen := h[queue]
	h[queue] = (prev || !seen) && held
}

// Lists returns the queues counted and those where every worker is held, both sorted.
func (h Holds) Lists() (queues, held []string) {
	for q, all := range h {
		queues = append(queues, q)
		if all {
			held = append(held, q)
		}
	}
	slices.Sort(queues)
	slices.Sort(held)
	return queues, held
}
