package store

import (
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// CapsLeft is what the fleet-wide caps and rate limits that apply to one claim let it take.
// QueueLeft is -1 when neither the queue's cap nor its rate limit applies; KindLeft has an
// entry per kind the claim may take that a cap or rate limit applies to. A left is the lower
// of the cap's free slots and the rate limit's free starts.
type CapsLeft struct {
	QueueLeft int
	KindLeft  map[string]int
	// QueueRate is the queue's rate-limit bucket refilled to the claim's time (nil: none);
	// KindRates holds those of the kinds the claim may take.
	QueueRate *Bucket
	KindRates map[string]*Bucket
	// KeyLimits are the limits per fairness key of the queue and of the kinds the claim may
	// take (keylimits.go): the fair claim applies them.
	KeyLimits []KeyLimit
	// charged: the buckets Spend took starts from, the ones to write back.
	queueCharged bool
	kindsCharged map[string]bool
}

// NoCaps is the CapsLeft of a claim that no cap or rate limit applies to.
func NoCaps() *CapsLeft { return &CapsLeft{QueueLeft: -1} }

// QueueCap bounds the claim by the queue's cap: limit running jobs, running of them now.
func (c *CapsLeft) QueueCap(limit, running int) { c.boundQueue(max(limit-running, 0)) }

// KindCap bounds the claim's jobs of kind by the kind's cap.
func (c *CapsLeft) KindCap(kind string, limit, running int) {
	c.boundKind(kind, max(limit-running, 0))
}

// QueueRateAt bounds the claim by the queue's rate limit, its bucket b refilled to now.
func (c *CapsLeft) QueueRateAt(b Bucket, now time.Time) {
	b = b.Refill(now)
	c.QueueRate = &b
	c.boundQueue(b.Free())
}

// KindRateAt bounds the claim's jobs of kind by the kind's rate limit, its bucket b refilled to
// now.
func (c *CapsLeft) KindRateAt(kind string, b Bucket, now time.Time) {
	b = b.Refill(now)
	if c.KindRates == nil {
		c.KindRates = map[string]*Bucket{}
	}
	c.KindRates[kind] = &b
	c.boundKind(kind, b.Free())
}

func (c *CapsLeft) boundQueue(left int) {
	if c.QueueLeft < 0 || left < c.QueueLeft {
		c.QueueLeft = left
	}
}

func (c *CapsLeft) boundKind(kind string, left int) {
	if c.KindLeft == nil {
		c.KindLeft = map[string]int{}
	}
	if cur, ok := c.KindLeft[kind]; !ok || left < cur {
		c.KindLeft[kind] = left
	}
}

// Limits reports whether the caps may keep a claim of n jobs short.
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

// Apply reports whether a cap or a rate limit, of the queue or of a kind, bounds the claim.
func (c *CapsLeft) Apply() bool {
	return c.QueueLeft >= 0 || len(c.KindLeft) > 0 || c.QueueRate != nil || len(c.KindRates) > 0
}

// Limit is n bounded by what the queue's cap and rate limit let the claim take.
func (c *CapsLeft) Limit(n int) int {
	if c.QueueLeft >= 0 {
		return min(n, c.QueueLeft)
	}
	return n
}

// KindLimits is KindLeft with each left bounded by n, the claim's limit: a capped or
// rate-limited kind's scan takes (and on PostgreSQL locks) no more rows than the claim can
// use, however many starts its bucket holds or slots its cap leaves.
func (c *CapsLeft) KindLimits(n int) map[string]int {
	if len(c.KindLeft) == 0 {
		return nil
	}
	out := make(map[string]int, len(c.KindLeft))
	for k, left := range c.KindLeft {
		out[k] = min(left, n)
	}
	return out
}

// Spend charges the jobs a claim of asked jobs took to the rate limits' buckets, and says
// what held the claim back: a cap or a rate limit held it only when the claim took fewer jobs
// than asked and all that the bound let it take. A kind the bounds let the claim take none of
// may have no job waiting at all; waiting, asked only then, says whether jobs of such kinds wait
// in the queue. The buckets Spend took starts from are then Charged.
func (c *CapsLeft) Spend(asked int, jobs []*hoppertype.JobRow, waiting func(kinds []string) (bool, error)) (Hold, error) {
	var h Hold
	if b := c.QueueRate; b != nil {
		if len(jobs) > 0 {
			*b, c.queueCharged = b.Take(len(jobs)), true
		}
		if b.Free() == 0 { // whatever waits, no job of the queue can start before Next
			h.Wait, h.QueueWide = b.Next(), true
		}
	}
	perKind := map[string]int{}
	for _, j := range jobs {
		perKind[j.Kind]++
	}
	for kind, b := range c.KindRates {
		if n := perKind[kind]; n > 0 {
			*b = b.Take(n)
			if c.kindsCharged == nil {
				c.kindsCharged = map[string]bool{}
			}
			c.kindsCharged[kind] = true
		}
	}
	if len(jobs) >= asked {
		return h, nil
	}
	h.Capped = c.QueueLeft >= 0 && c.QueueLeft < asked && len(jobs) == c.QueueLeft
	var bound, none []string // kinds whose bound held the claim; kinds it could take none of
	for kind, left := range c.KindLeft {
		switch {
		case left >= asked || perKind[kind] < left:
		case left == 0:
			none = append(none, kind)
		default:
			bound = append(bound, kind)
		}
	}
	if len(none) > 0 && !h.Capped && len(bound) == 0 {
		ok, err := waiting(none)
		if err != nil {
			return Hold{}, err
		}
		if ok {
			bound = none
		}
	}
	h.Capped = h.Capped || len(bound) > 0
	for _, kind := range bound {
		if b := c.KindRates[kind]; b != nil && !h.QueueWide && b.Free() == 0 && (h.Wait == 0 || b.Next() < h.Wait) {
			h.Wait = b.Next()
		}
	}
	return h, nil
}

// Charged returns the buckets Spend took starts from, to be written back: the queue's (nil
// when not charged) and the kinds', by kind.
func (c *CapsLeft) Charged() (queue *Bucket, kinds map[string]*Bucket) {
	if c.queueCharged {
		queue = c.QueueRate
	}
	for kind := range c.kindsCharged {
		if kinds == nil {
			kinds = map[string]*Bucket{}
		}
		kinds[kind] = c.KindRates[kind]
	}
	return queue, kinds
}
