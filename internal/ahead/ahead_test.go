package ahead_test

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/ahead"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func TestQueueKeepsClaimOrderAndEachClaimsTime(t *testing.T) {
	var q ahead.Queue[int]
	t0 := time.Unix(1000, 0)
	require.Zero(t, q.Len())
	require.True(t, q.Due(time.Second).IsZero(), "none waits: no due time")
	require.False(t, q.Expired(t0, time.Second))

	q.Add(t0, 1, 2)
	q.Add(t0.Add(500*time.Millisecond), 3)
	require.Equal(t, 3, q.Len())
	require.Equal(t, t0.Add(time.Second), q.Due(time.Second))
	require.False(t, q.Expired(t0.Add(999*time.Millisecond), time.Second))
	require.True(t, q.Expired(t0.Add(time.Second), time.Second))

	require.Equal(t, []int{1}, q.Take(1))
	require.Equal(t, t0.Add(time.Second), q.Due(time.Second), "job 2 came with job 1's claim")
	require.Equal(t, []int{2}, q.Take(1))
	require.Equal(t, t0.Add(1500*time.Millisecond), q.Due(time.Second), "job 3 keeps its own claim's time")
	require.Empty(t, q.Take(0))
	require.Empty(t, q.Take(-1))
	require.Equal(t, []int{3}, q.Take(5), "fewer wait than asked")
	require.Zero(t, q.Len())

	q.Add(t0, 4, 5)
	require.Equal(t, []int{4, 5}, q.All())
	require.Zero(t, q.Len())
}

func TestNextAsksAheadForWhatEndedAfterAFullClaim(t *testing.T) {
	require.Equal(t, 7, ahead.Next(store.Hold{}, 15, 10, 5, 7, 100), "full: what ended during the round trip")
	require.Equal(t, 3, ahead.Next(store.Hold{}, 15, 10, 5, 7, 3), "at most the limit")
	require.Zero(t, ahead.Next(store.Hold{}, 15, 10, 5, 7, -1), "a negative limit is none")
	require.Zero(t, ahead.Next(store.Hold{}, 14, 10, 5, 7, 100), "short: the queue ran dry")
	require.Zero(t, ahead.Next(store.Hold{Restricted: true}, 10, 10, 5, 7, 100), "restricted: none ahead")
	require.Zero(t, ahead.Next(store.Hold{}, 15, 10, 5, 0, 100), "nothing ended")
	require.Equal(t, 250*time.Millisecond, ahead.Unrenewed(time.Second))
	require.Equal(t, ahead.MaxWait, ahead.Unrenewed(time.Minute))
}
