package sqlite_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// A key is held while it has queued jobs: the claim that takes its last one removes it (and
// with no key left, the queue's claims take the first-in, first-out path again).
func TestFairKeysLeaveWithTheirLastQueuedJob(t *testing.T) {
	t.Parallel()
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()
	for _, key := range []string{"tenant-a", "tenant-a", "tenant-b", ""} {
		_, err := s.JobInsertMany(ctx, []*store.InsertParams{{ID: uuid.Must(uuid.NewV7()).String(), Kind: "k",
			Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, FairnessKey: key, Actor: hoppertype.ActorAPI}})
		require.NoError(t, err)
	}
	keys, err := sqlite.FairKeys(s, "default")
	require.NoError(t, err)
	require.Equal(t, []string{"tenant-a", "tenant-b"}, keys)

	claim := func(n int) []*hoppertype.JobRow {
		jobs, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: "default", Limit: n, WorkerID: "w", LeaseDuration: time.Minute})
		require.NoError(t, err)
		return jobs
	}
	require.Len(t, claim(3), 3) // tenant-a, tenant-b and the unkeyed job, one each
	keys, err = sqlite.FairKeys(s, "default")
	require.NoError(t, err)
	require.Equal(t, []string{"tenant-a"}, keys, "tenant-b has no job left")
	require.Len(t, claim(3), 1)
	keys, err = sqlite.FairKeys(s, "default")
	require.NoError(t, err)
	require.Empty(t, keys)
}
