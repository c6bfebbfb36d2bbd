package postgres_test

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// The claim of what a batch of endings released goes out with the finish in one implicit
// transaction; when the claim fails (here a worker id PostgreSQL's text refuses), the batch
// rolls back as a whole, and the endings are written again alone: nothing is lost, nothing is
// claimed, and the claim's error is said apart from the endings'.
func TestFinishClaimFailsAlone(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	ctx := t.Context()
	s := openStore(t, freshSchema(t), nil)
	parent := insertParams("parents", 1)[0]
	child := insertParams("children", 1)[0]
	child.After = []string{parent.ID}
	_, err := s.JobInsertMany(ctx, []*store.InsertParams{parent, child})
	require.NoError(t, err)
	claimed, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: "parents", Limit: 1, WorkerID: "w", LeaseDuration: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.True(t, claimed[0].HasChildren)
	end := &store.FinishParams{ID: parent.ID, Token: claimed[0].Token, State: hoppertype.StateCompleted,
		Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker, Job: claimed[0]}
	rc := &store.ReleaseClaim{Queues: map[string]int{"children": 1}, WorkerID: "bad\x00worker", LeaseDuration: time.Minute}
	errs, err := s.JobFinishClaim(ctx, []*store.FinishParams{end}, rc)
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.Error(t, rc.Err)
	require.Empty(t, rc.Jobs)
	got, err := s.JobGet(ctx, parent.ID)
	require.NoError(t, err)
	require.Equal(t, hoppertype.StateCompleted, got.State)
	got, err = s.JobGet(ctx, child.ID)
	require.NoError(t, err)
	require.Equal(t, hoppertype.StateQueued, got.State, "released by the ending written again, not claimed")
}
