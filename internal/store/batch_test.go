package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestPickBatch(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := func(first string, prio, n int, age time.Duration) *BatchCandidate {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = first
		}
		return &BatchCandidate{IDs: ids, Priority: prio, FirstID: first, Oldest: now.Add(-age)}
	}
	best, at := PickBatch([]*BatchCandidate{c("a", 0, 2, time.Second), c("b", 0, 3, 0)}, 3, time.Minute, now)
	require.Equal(t, "b", best.FirstID, "a lingers; b is full")
	require.Equal(t, now.Add(59*time.Second), at)
	best, _ = PickBatch([]*BatchCandidate{c("b", 0, 1, 0), c("c", 1, 1, 0), c("a", 0, 1, 0)}, 3, 0, now)
	require.Equal(t, "c", best.FirstID, "claim order: priority, then age")
	best, at = PickBatch([]*BatchCandidate{c("a", 0, 0, time.Hour)}, 3, 0, now)
	require.Nil(t, best, "an empty candidate is none")
	require.True(t, at.IsZero())
	best, _ = PickBatch([]*BatchCandidate{c("a", 0, 5, 0)}, 2, 0, now)
	require.Len(t, best.IDs, 2, "cut to what the caps leave")
}
