package engine

import (
	"context"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// promoteSpy answers a promotion pass as a store that read before a job was scheduled: during
// the call, the job is written and the maintainer nudged (during).
type promoteSpy struct {
	store.Store
	during func()
}

func (s *promoteSpy) JobPromoteScheduled(context.Context, *store.PromoteParams) (*store.PromoteResult, error) {
	s.during()
	return &store.PromoteResult{}, nil
}

// A retry written while a promotion pass reads the store is still promoted at its run_at: the
// pass's answer (no scheduled job) does not erase the nudge that came meanwhile. On the old
// code the job waited for the next promotion poll (TestShortRetryIsPromotedOnTime saw it).
func TestANudgeDuringAPromotionPassIsKept(t *testing.T) {
	t.Parallel()
	spy := &promoteSpy{}
	e, err := New(Config{Store: spy, WorkerID: "node-1", Maintenance: true})
	require.NoError(t, err)
	runAt := time.Date(2026, 3, 1, 12, 0, 0, 100_000_000, time.UTC)
	spy.during = func() { e.maint.nudge(runAt) }
	require.NoError(t, e.maint.promote(t.Context()))
	require.Equal(t, runAt, e.maint.nextRunAt(), "the nudged run_at is the next wake")

	later := runAt.Add(time.Hour)
	spy.during = func() { e.maint.nudge(later) }
	require.NoError(t, e.maint.promote(t.Context()))
	require.Equal(t, later, e.maint.nextRunAt())
}
