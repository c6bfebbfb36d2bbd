// Package backoff spaces out retries: the exponential delay with jitter that a job's retry
// policy and every retrying loop use (Delay), and the Tracker of a background loop whose calls
// fail, which picks the wait before its next try and logs when an outage starts and ends, not
// once per attempt.
package backoff

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Delay returns the delay before the retry that follows failed attempt n (n ≥ 1):
// min(Cap, Base·Multiplierⁿ⁻¹) ± Jitter·delay; a Jitter of 0 or less adds none. rnd returns a
// float in [0, 1); nil uses math/rand.
func Delay(p hoppertype.RetryPolicy, n int, rnd func() float64) time.Duration {
	if n < 1 {
		n = 1
	}
	d := float64(p.Base) * math.Pow(p.Multiplier, float64(n-1))
	capped := d >= float64(p.Cap) || math.IsInf(d, 0) || math.IsNaN(d)
	if capped {
		d = float64(p.Cap)
	}
	if p.Jitter > 0 {
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
// or a policy from the wire with huge floats, would retry at once instead of never (found by
// FuzzDelay).
func durationOf(d float64) time.Duration {
	switch {
	case !(d > 0): // also NaN
		return 0
	case d >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(d)
}
