package store

// CapsLeft are the free slots under the fleet-wide caps that apply to one claim. QueueLeft is
// -1 when the queue has no cap; KindLeft has an entry per capped kind the claim may take.
type CapsLeft struct {
	QueueLeft int
	KindLeft  map[string]int
}

// NoCaps is the CapsLeft of a claim that no cap applies to.
func NoCaps() *CapsLeft { return &CapsLeft{QueueLeft: -1} }

// Limits reports whether the caps may keep a claim of n jobs short (the second result of Store.JobClaim).
func (c *CapsLeft) Limits(n int) bool {
	if c.QueueLeft >= 0 && c.QueueLeft < n {
		return true
	}
	for _, left := range c.KindLeft {
		if left < n {
			return true
		}
	}
	return false
}

// Limit is n bounded by the queue's free slots.
func (c *CapsLeft) Limit(n int) int {
	if c.QueueLeft >= 0 {
		return min(n, c.QueueLeft)
	}
	return n
}
