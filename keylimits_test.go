package hopper

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Limits per key go in through SetLimit and SetRateLimit with PerKey (or Config), refuse bad
// values naming cap_per_key and rate_per_key, and show in Limits, RateLimits, Queues and Kinds.
func TestLimitsPerKeyThroughTheGoAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, func(c *Config) {
		c.Limits = []Limit{{Kind: "pdf", MaxRunning: 2, PerKey: true}}
		c.RateLimits = []RateLimit{{Kind: "pdf", Rate: Rate{Limit: 10, Period: time.Second}, PerKey: true}}
	})
	ctx := t.Context()
	require.NoError(t, b.client.SetLimit(ctx, Limit{Queue: "emails", MaxRunning: 3, PerKey: true}))
	require.NoError(t, b.client.SetLimit(ctx, Limit{Queue: "emails", MaxRunning: 20}))
	require.NoError(t, b.client.SetRateLimit(ctx, RateLimit{Queue: "emails", Rate: Rate{Limit: 5, Period: time.Minute}, PerKey: true}))

	for want, err := range map[string]error{
		"cap_per_key":  b.client.SetLimit(ctx, Limit{Queue: "emails", MaxRunning: -1, PerKey: true}),
		"rate_per_key": b.client.SetRateLimit(ctx, RateLimit{Queue: "emails", Rate: Rate{Limit: 0, Period: time.Second}, PerKey: true}),
		"limit":        b.client.SetLimit(ctx, Limit{MaxRunning: 1, PerKey: true}),
	} {
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, want)
		require.Equal(t, want, ve.Field)
	}

	caps, err := b.client.Limits(ctx)
	require.NoError(t, err)
	require.Equal(t, []Limit{{Queue: "emails", MaxRunning: 20}, {Queue: "emails", MaxRunning: 3, PerKey: true},
		{Kind: "pdf", MaxRunning: 2, PerKey: true}}, caps)
	rates, err := b.client.RateLimits(ctx)
	require.NoError(t, err)
	require.Equal(t, []RateLimit{{Queue: "emails", Rate: Rate{Limit: 5, Period: time.Minute}, PerKey: true},
		{Kind: "pdf", Rate: Rate{Limit: 10, Period: time.Second}, PerKey: true}}, rates)
	qs, err := b.client.Queues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, 3, qs[0].CapPerKey)
	require.Equal(t, 20, qs[0].MaxRunning)
	require.Equal(t, Rate{Limit: 5, Period: time.Minute}, qs[0].RatePerKey)
	ks, err := b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, []*KindInfo{{Name: "pdf", CapPerKey: 2, RatePerKey: Rate{Limit: 10, Period: time.Second},
		Counts: map[JobState]int64{}}}, ks)

	require.NoError(t, b.client.SetLimit(ctx, Limit{Kind: "pdf", PerKey: true}))
	require.NoError(t, b.client.SetRateLimit(ctx, RateLimit{Kind: "pdf", PerKey: true}))
	ks, err = b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Empty(t, ks, "removed")
}
