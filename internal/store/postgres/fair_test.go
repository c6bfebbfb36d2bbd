package postgres

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// A fair claim whose chosen job another claim holds takes the next job in the fair order
// instead of coming back short: claims that run at once read the same jobs and choose alike.
func TestFairClaimSkipsAJobAnotherClaimHolds(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	insert := func(key string) *hoppertype.JobRow {
		res, err := s.JobInsertMany(ctx, []*store.InsertParams{{ID: uuid.Must(uuid.NewV7()).String(), Kind: "k",
			Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, FairnessKey: key, Actor: hoppertype.ActorAPI}})
		require.NoError(t, err)
		return res[0].Job
	}
	a0, a1 := insert("tenant-a"), insert("tenant-a")
	insert("tenant-a")
	b0 := insert("tenant-b")

	tx, err := s.pool.Begin(ctx) // another claim, in flight, holds tenant-a's first job
	require.NoError(t, err)
	defer tx.Rollback(ctx) //nolint:errcheck // the test ends it
	_, err = tx.Exec(ctx, s.sql(`SELECT id FROM {schema}.jobs WHERE id = $1 FOR UPDATE`), a0.ID)
	require.NoError(t, err)

	jobs, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: "default", Limit: 2, WorkerID: "w", LeaseDuration: time.Minute})
	require.NoError(t, err)
	got := []string{}
	for _, j := range jobs {
		got = append(got, j.ID)
	}
	require.ElementsMatch(t, []string{b0.ID, a1.ID}, got)
}
