package backoff

import (
	"math"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// FuzzDelay feeds Delay any policy (a remote worker takes the job's from the wire, where
// nothing validated it) and attempt: the delay is never negative, and without jitter it never
// exceeds a positive cap.
func FuzzDelay(f *testing.F) {
	f.Add(int64(time.Second), 2.0, int64(time.Hour), 0.1, 1, 0.5)
	f.Add(int64(time.Second), 2.0, int64(math.MaxInt64), 0.0, 100, 0.5)
	f.Add(int64(time.Hour), 2.0, int64(math.MaxInt64), 1.0, 70, 0.99)
	f.Add(int64(time.Second), 1e300, int64(time.Hour), 1e300, 2, 0.9)
	f.Add(int64(-time.Second), -2.0, int64(-time.Hour), -1.0, -5, 0.0)
	f.Add(int64(time.Second), math.NaN(), int64(time.Hour), math.Inf(1), 3, 0.7)
	f.Fuzz(func(t *testing.T, base int64, mult float64, capNs int64, jitter float64, n int, r float64) {
		p := hoppertype.RetryPolicy{Base: time.Duration(base), Multiplier: mult, Cap: time.Duration(capNs), Jitter: jitter}
		r = math.Abs(math.Mod(r, 1)) // rnd returns [0, 1)
		if math.IsNaN(r) {
			r = 0
		}
		d := Delay(p, n, func() float64 { return r })
		if d < 0 {
			t.Fatalf("Delay(%+v, %d, %v) = %s, negative", p, n, r, d)
		}
		if !(jitter > 0) && capNs > 0 && d > p.Cap {
			t.Fatalf("Delay(%+v, %d) = %s, above the cap without jitter", p, n, d)
		}
	})
}
