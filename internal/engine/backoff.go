package engine

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// DefaultRetryPolicy is the backoff when neither the job, its worker nor the client sets one:
// 1 s, 2 s, 4 s … capped at 1 h, ±10 % jitter.
var DefaultRetryPolicy = hoppertype.RetryPolicy{Base: time.Second, Multiplier: 2, Cap: time.Hour, Jitter: 0.1}

// MergePolicy fills p's zero fields from the fallbacks, in order.
func MergePolicy(p *hoppertype.RetryPolicy, fallbacks ...*hoppertype.RetryPolicy) hoppertype.RetryPolicy {
	var out hoppertype.RetryPolicy
	for _, f := range append([]*hoppertype.RetryPolicy{p}, append(fallbacks, &DefaultRetryPolicy)...) {
		if f == nil {
			continue
		}
		if out.Base == 0 {
			out.Base = f.Base
		}
		if out.Multiplier == 0 {
			out.Multiplier = f.Multiplier
		}
		if out.Cap == 0 {
			out.Cap = f.Cap
		}
		if out.Jitter == 0 {
			out.Jitter = f.Jitter
		}
	}
	return out
}

// Backoff returns the delay before the retry that follows failed attempt n (n ≥ 1):
// min(Cap, Base·Multiplierⁿ⁻¹) ± Jitter·delay. rnd returns a float in [0, 1).
func Backoff(p hoppertype.RetryPolicy, n int, rnd func() float64) time.Duration {
	if n < 1 {
		n = 1
	}
	d := float64(p.Base) * math.Pow(p.Multiplier, float64(n-1))
	capped := d >= float64(p.Cap) || math.IsInf(d, 0) || math.IsNaN(d)
	if capped {
		d = float64(p.Cap)
	}
	if p.Jitter > 0 { // negative: jitter disabled
		if rnd == nil {
			rnd = rand.Float64
		}
		d += d * p.Jitter * (2*rnd() - 1)
	} else if capped {
		return max(p.Cap, 0) // exact: float64(p.Cap) may round above it
	}
	return durationOf(d)
}

// durationOf converts d to a Duration within 0 and the longest one. A plain conversion of a
// float64 beyond int64 gives a negative Duration (on amd64): a cap near the longest Duration,
// or a policy from the wire with huge floats, would retry at once instead of never.
func durationOf(d float64) time.Duration {
	switch {
	case !(d > 0): // also NaN
		return 0
	case d >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(d)
}
