package engine

import (
	"math"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/stretchr/testify/require"
)

func TestBackoffGrowsAndCaps(t *testing.T) {
	t.Parallel()
	p := hoppertype.RetryPolicy{Base: time.Second, Multiplier: 3, Cap: 20 * time.Second}
	mid := func() float64 { return 0.5 } // no jitter effect
	require.Equal(t, time.Second, Backoff(p, 1, mid))
	require.Equal(t, 3*time.Second, Backoff(p, 2, mid))
	require.Equal(t, 9*time.Second, Backoff(p, 3, mid))
	require.Equal(t, 20*time.Second, Backoff(p, 4, mid))
	require.Equal(t, 20*time.Second, Backoff(p, 5000, mid), "no overflow")
}

// A delay beyond the longest Duration is the longest, not a negative one (found by
// FuzzBackoff: a cap of math.MaxInt64 retried at once from attempt 64 on).
func TestBackoffNeverOverflows(t *testing.T) {
	t.Parallel()
	mid := func() float64 { return 0.5 }
	p := hoppertype.RetryPolicy{Base: time.Second, Multiplier: 2, Cap: math.MaxInt64}
	require.Equal(t, time.Duration(math.MaxInt64), Backoff(p, 100, mid))
	p.Jitter = 1
	require.Equal(t, time.Duration(math.MaxInt64), Backoff(p, 70, func() float64 { return 0.99 }))
	wild := hoppertype.RetryPolicy{Base: time.Second, Multiplier: 1e300, Cap: time.Hour, Jitter: 1e300}
	require.GreaterOrEqual(t, Backoff(wild, 2, func() float64 { return 0.9 }), time.Duration(0))
	require.Equal(t, time.Duration(0), Backoff(wild, 2, func() float64 { return 0.1 }))
}

func TestBackoffJitterBounds(t *testing.T) {
	t.Parallel()
	p := hoppertype.RetryPolicy{Base: 10 * time.Second, Multiplier: 2, Cap: time.Hour, Jitter: 0.2}
	require.Equal(t, 8*time.Second, Backoff(p, 1, func() float64 { return 0 }))
	require.Equal(t, 12*time.Second, Backoff(p, 1, func() float64 { return 1 }))
	for range 1000 {
		d := Backoff(p, 1, nil)
		require.GreaterOrEqual(t, d, 8*time.Second)
		require.LessOrEqual(t, d, 12*time.Second)
	}
}

func TestMergePolicyPrecedence(t *testing.T) {
	t.Parallel()
	job := &hoppertype.RetryPolicy{Base: 5 * time.Second}
	kind := &hoppertype.RetryPolicy{Base: time.Minute, Multiplier: 4}
	got := MergePolicy(job, kind)
	require.Equal(t, 5*time.Second, got.Base, "job wins")
	require.Equal(t, 4.0, got.Multiplier, "kind fills what the job leaves")
	require.Equal(t, DefaultRetryPolicy.Cap, got.Cap, "default fills the rest")
	require.Equal(t, DefaultRetryPolicy.Jitter, got.Jitter)
}

func TestNegativeJitterDisablesJitter(t *testing.T) {
	t.Parallel()
	got := MergePolicy(&hoppertype.RetryPolicy{Base: time.Second, Jitter: -1})
	require.Equal(t, time.Second, Backoff(got, 1, func() float64 { return 0 }))
}
