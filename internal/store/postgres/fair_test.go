package postgres

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
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

// A key is held while it has queued jobs: the claim that takes its last one removes it (and
// with no key left, the queue's claims take the first-in, first-out path again).
func TestFairKeysLeaveWithTheirLastQueuedJob(t *testing.T) {
	t.Parallel()
	s := openPlanStore(t)
	ctx := t.Context()
	for _, key := range []string{"tenant-a", "tenant-a", "tenant-b", ""} {
		_, err := s.JobInsertMany(ctx, []*store.InsertParams{{ID: uuid.Must(uuid.NewV7()).String(), Kind: "k",
			Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, FairnessKey: key, Actor: hoppertype.ActorAPI}})
		require.NoError(t, err)
	}
	keys := func() []string {
		rs, err := s.pool.Query(ctx, s.sql(`SELECT fairness_key FROM {schema}.fair_keys
			WHERE queue = 'default' AND fairness_key <> '' ORDER BY fairness_key`))
		require.NoError(t, err)
		out, err := pgx.CollectRows(rs, pgx.RowTo[string])
		require.NoError(t, err)
		return out
	}
	require.Equal(t, []string{"tenant-a", "tenant-b"}, keys())
	claim := func(n int) []*hoppertype.JobRow {
		jobs, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: "default", Limit: n, WorkerID: "w", LeaseDuration: time.Minute})
		require.NoError(t, err)
		return jobs
	}
	require.Len(t, claim(3), 3) // tenant-a, tenant-b and the unkeyed job, one each
	require.Equal(t, []string{"tenant-a"}, keys(), "tenant-b has no job left")
	require.Len(t, claim(3), 1)
	require.Empty(t, keys())
}
