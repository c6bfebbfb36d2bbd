package postgres_test

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Without Config.Clock every time comes from the database's now(): the suite covers the fake
// clock; this covers the parameters being NULL.
func TestDatabaseClock(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	ctx := t.Context()
	before := s.Now()
	require.WithinDuration(t, time.Now(), before, time.Minute, "Now follows the database clock")

	ps := insertParams("default", 2)
	ps[1].RunAt = before.Add(time.Hour)
	res, err := s.JobInsertMany(ctx, ps)
	require.NoError(t, err)
	require.Equal(t, hoppertype.StateQueued, res[0].Job.State)
	require.Equal(t, hoppertype.StateScheduled, res[1].Job.State)
	require.WithinDuration(t, before, res[0].Job.CreatedAt, 5*time.Second)

	jobs, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: "default", Limit: 10, WorkerID: "w", LeaseDuration: time.Hour})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, time.Hour, jobs[0].LeaseExpiresAt.Sub(jobs[0].StartedAt))
	rescued, err := s.JobRescueExpired(ctx, &store.RescueParams{})
	require.NoError(t, err)
	require.Empty(t, rescued.JobIDs)
	errs, err := s.JobFinishMany(ctx, []*store.FinishParams{{ID: jobs[0].ID, Token: jobs[0].Token,
		State: hoppertype.StateCompleted, Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker}})
	require.NoError(t, err)
	require.NoError(t, errs[0])
	promoted, err := s.JobPromoteScheduled(ctx, &store.PromoteParams{})
	require.NoError(t, err)
	require.Zero(t, promoted.Promoted)
	require.True(t, promoted.NextRunAt.Equal(res[1].Job.RunAt))

	l, err := s.LeaderElect(ctx, &store.LeaderParams{NodeID: "a", TTL: time.Hour})
	require.NoError(t, err)
	require.Equal(t, "a", l.NodeID)
	l, err = s.LeaderElect(ctx, &store.LeaderParams{NodeID: "b", TTL: time.Hour})
	require.NoError(t, err)
	require.Equal(t, "a", l.NodeID)
	require.NoError(t, s.LeaderResign(ctx, "a"))
	l, err = s.LeaderElect(ctx, &store.LeaderParams{NodeID: "b", TTL: time.Hour})
	require.NoError(t, err)
	require.Equal(t, "b", l.NodeID)
	require.Equal(t, int64(2), l.Term)
}
