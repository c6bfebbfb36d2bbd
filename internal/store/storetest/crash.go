package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testCrash(t *testing.T, opener Opener) {
	parallel(t, opener, "NoJobLost", crashNoJobLost)
}

// Contract 1: a process that dies holding leases loses no job. A second handle, opened while
// the first is still open (the dead process never closed it), sees every job; once the leases
// expire the rescued jobs are claimed again.
func crashNoJobLost(t *testing.T, b *bundle) {
	var all []string
	for range 5 {
		all = append(all, b.insert(t).ID)
	}
	claimed := ids(b.claim(t, defaultQueue, 2))
	require.Len(t, claimed, 2)

	second := b.open()
	t.Cleanup(func() { second.Close() })
	for _, id := range all {
		job, err := second.JobGet(t.Context(), id)
		require.NoError(t, err)
		want := hoppertype.StateQueued
		if slices.Contains(claimed, id) {
			want = hoppertype.StateRunning
		}
		require.Equal(t, want, job.State, id)
	}

	res, err := second.JobRescueExpired(t.Context(), &store.RescueParams{})
	require.NoError(t, err)
	require.Empty(t, res.JobIDs, "leases have not expired yet")

	b.clock.Advance(defaultLease + time.Second)
	res, err = second.JobRescueExpired(t.Context(), &store.RescueParams{})
	require.NoError(t, err)
	require.ElementsMatch(t, claimed, res.JobIDs)
	require.Equal(t, []string{defaultQueue}, res.Queues)

	again, _, err := second.JobClaim(t.Context(), &store.ClaimParams{
		Queue: defaultQueue, Limit: 10, WorkerID: workerB, LeaseDuration: defaultLease,
	})
	require.NoError(t, err)
	require.ElementsMatch(t, all, ids(again))
	for _, job := range again {
		require.Equal(t, workerB, job.WorkerID)
		require.Equal(t, 1, job.Attempt, "a rescued attempt is given back")
	}
	// The first handle sees what the second did.
	require.Equal(t, workerB, b.get(t, claimed[0]).WorkerID)
}
