package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestBucketRefillsAtItsRateUpToItsLimit(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	b := Bucket{Rate: Rate{Limit: 3, Period: time.Second}, Tokens: 3, At: t0}
	require.Equal(t, 3, b.Free())
	b = b.Take(3)
	require.Equal(t, 0, b.Free())
	require.Equal(t, time.Second/3+1, b.Next())
	require.Equal(t, 1, b.Refill(t0.Add(time.Second/3+1)).Free(), "Next is when the next start comes")
	require.Equal(t, 0, b.Refill(t0.Add(time.Second/3-time.Millisecond)).Free())
	require.Equal(t, 3, b.Refill(t0.Add(time.Hour)).Free(), "at most Limit")
	require.Equal(t, b, b.Refill(t0.Add(-time.Second)), "a time before At refills nothing")
}

// Over any stretch of time T, however claims are spread, a bucket lets at most
// Limit + Limit·T/Period jobs start.
func TestBucketBoundsStartsOverAnyStretch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.IntRange(1, 1000).Draw(t, "limit")
		period := time.Duration(rapid.Int64Range(int64(time.Millisecond), int64(time.Hour)).Draw(t, "period"))
		t0 := time.Unix(1_700_000_000, 0)
		b := Bucket{Rate: Rate{Limit: limit, Period: period}, Tokens: float64(limit), At: t0}
		now, started := t0, 0
		for range rapid.IntRange(1, 200).Draw(t, "claims") {
			now = now.Add(time.Duration(rapid.Int64Range(0, int64(period)).Draw(t, "gap")))
			b = b.Refill(now)
			n := min(b.Free(), rapid.IntRange(0, 2*limit).Draw(t, "ask"))
			b, started = b.Take(n), started+n
		}
		bound := float64(limit) + float64(limit)*float64(now.Sub(t0))/float64(period)
		if float64(started) > bound+1e-6 {
			t.Fatalf("%d starts in %s at %d/%s: more than %.2f", started, now.Sub(t0), limit, period, bound)
		}
	})
}

// A kind's scan is bounded by the claim, however many starts or slots the kind has left.
func TestKindLimitsAreBoundedByTheClaim(t *testing.T) {
	c := NoCaps()
	c.KindCap("pdf", 1000, 10)
	c.KindRateAt("sms", Bucket{Rate: Rate{Limit: 1_000_000, Period: time.Second}, Tokens: 1_000_000}, time.Unix(0, 0))
	c.KindCap("mail", 3, 0)
	require.Equal(t, map[string]int{"pdf": 990, "sms": 1_000_000, "mail": 3}, c.KindLeft)
	require.Equal(t, map[string]int{"pdf": 50, "sms": 50, "mail": 3}, c.KindLimits(50))
	require.Nil(t, NoCaps().KindLimits(50))
}
