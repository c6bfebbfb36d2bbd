package store

import (
	"math"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Rate is a rate limit: at most Limit job starts per Period. The zero Rate is no limit.
type Rate = hoppertype.Rate

// RateParams sets (Rate non-zero) or removes (Rate zero) the rate limit of a queue or a kind,
// or, PerKey, the rate limit of each of their fairness keys (keylimits.go).
type RateParams struct {
	Scope  LimitScope
	Name   string
	Rate   Rate
	PerKey bool
}

// Bucket is a rate limit's token bucket as the store keeps it: Tokens starts are available at
// At (whole starts and a part of the next), at most Rate.Limit, refilled continuously at
// Rate.Limit per Rate.Period. A full bucket lets Rate.Limit jobs start at once; after that
// starts follow the rate. So over any stretch of time T at most Limit + Limit·T/Period jobs
// start, and over a long run Limit per Period.
type Bucket struct {
	Rate   Rate
	Tokens float64
	At     time.Time
}

// tokenEpsilon absorbs floating-point error, so that a bucket refilled to exactly 3 tokens
// as 2.9999999999 still allows 3 starts.
const tokenEpsilon = 1e-9

// Refill returns the bucket as it stands at now. A now before At (another node's claim with a
// clock a little behind wrote the bucket) refills nothing.
func (b Bucket) Refill(now time.Time) Bucket {
	if elapsed := now.Sub(b.At); elapsed > 0 {
		b.Tokens = min(float64(b.Rate.Limit), b.Tokens+float64(elapsed)*float64(b.Rate.Limit)/float64(b.Rate.Period))
		b.At = now
	}
	return b
}

// Free is how many jobs the bucket lets start now.
func (b Bucket) Free() int { return int(math.Floor(b.Tokens + tokenEpsilon)) }

// Take spends n starts (at most Free).
func (b Bucket) Take(n int) Bucket {
	b.Tokens = max(b.Tokens-float64(n), 0)
	return b
}

// Next is how long after At the bucket lets one more job start than it does at At.
func (b Bucket) Next() time.Duration {
	missing := float64(b.Free()+1) - b.Tokens
	return time.Duration(math.Ceil(missing * float64(b.Rate.Period) / float64(b.Rate.Limit)))
}

// Hold says what kept a claim from taking as many jobs as it asked for, besides an empty
// queue (the third result of Store.JobClaim).
type Hold struct {
	// Capped: a fleet-wide cap or a rate limit, of the queue or of a kind the claim could
	// take, left it fewer jobs than it asked for while more of them wait (as far as the claim
	// can tell: it took all the bound let it take, or jobs of a kind the bound let it take
	// none of are queued). A claim short only because the queue ran dry is not Capped.
	Capped bool
	// Wait, when positive, is how long after the claim a rate limit that bounds it allows its
	// next start. With QueueWide it is the queue's own limit, whose bucket the claim left
	// empty: no job of the queue can start before then. Otherwise it is the soonest of the
	// kinds' limits that left the claim short.
	Wait      time.Duration
	QueueWide bool
	// Restricted: a fleet-wide cap, a rate limit or a disabled kind applies to the claim (the
	// queue's, or a kind's it could take), so it took none of ClaimParams.Ahead.
	Restricted bool
	// FairAhead, when positive, says the queue has fairness keys, so the claim took its jobs
	// in turns between the keys (FairPick), in that order; a claimer should then claim ahead
	// only for the jobs that end within FairAhead: a job of a key that comes after the claim
	// waits behind every job claimed ahead of it, whatever its turn. Each store chooses it by
	// what its claims cost the other keys.
	FairAhead time.Duration
}

// ShorterSet is the shorter of a and b that is set (positive), or 0 when neither is: two
// claims' FairAhead together.
func ShorterSet(a, b time.Duration) time.Duration {
	if b > 0 && (a <= 0 || b < a) {
		return b
	}
	return max(a, 0)
}

// Full reports whether a claim that held asked slots and asked for ahead jobs beyond them got
// all it could: ahead does not count where a restriction applied (the store took none of them).
// A full claim suggests more work waits.
func (h Hold) Full(got, asked, ahead int) bool {
	if h.Restricted {
		return got == asked
	}
	return got == asked+ahead
}

// Retry is how soon a claimer held back by h should claim again: when the rate limit's next
// start is due, at most ceiling (so that a limit raised or removed meanwhile applies within
// it), or after capRetry when only a cap held the claim; 0 when nothing held it.
func (h Hold) Retry(capRetry, ceiling time.Duration) time.Duration {
	switch {
	case h.Wait > 0:
		return min(h.Wait, ceiling)
	case h.Capped:
		return capRetry
	}
	return 0
}
