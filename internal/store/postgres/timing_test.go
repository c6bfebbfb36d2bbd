package postgres_test

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// TestTiming prints rough throughput on the database clock: 10,000 jobs inserted in batches
// of 1,000, then claimed and completed in batches of 100 by 4 goroutines. It asserts nothing
// about speed and runs only when asked:
//
//	HOPPER_PG_TIMING=1 go test -run TestTiming -v ./internal/store/postgres/
func TestTiming(t *testing.T) {
	if os.Getenv("HOPPER_PG_TIMING") == "" {
		t.Skip("set HOPPER_PG_TIMING=1 to print PostgreSQL store throughput")
	}
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	const total, insertBatch, claimBatch, workers = 10000, 1000, 100, 4

	start := time.Now()
	for range total / insertBatch {
		_, err := s.JobInsertMany(t.Context(), insertParams("default", insertBatch))
		require.NoError(t, err)
	}
	inserted := time.Since(start)

	start = time.Now()
	var mu sync.Mutex
	done := 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				jobs, _, err := s.JobClaim(t.Context(), &store.ClaimParams{Queue: "default", Limit: claimBatch,
					WorkerID: "w" + string(rune('0'+w)), LeaseDuration: time.Minute})
				require.NoError(t, err)
				if len(jobs) == 0 {
					return
				}
				fin := make([]*store.FinishParams, len(jobs))
				for i, j := range jobs {
					fin[i] = &store.FinishParams{ID: j.ID, Token: j.Token, State: hoppertype.StateCompleted,
						Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker}
				}
				errs, err := s.JobFinishMany(t.Context(), fin)
				require.NoError(t, err)
				for _, e := range errs {
					require.NoError(t, e)
				}
				mu.Lock()
				done += len(jobs)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	worked := time.Since(start)
	require.Equal(t, total, done)
	t.Logf("insert: %d jobs in %v (%.0f jobs/s, batches of %d)", total, inserted.Round(time.Millisecond),
		float64(total)/inserted.Seconds(), insertBatch)
	t.Logf("claim+complete: %d jobs in %v (%.0f jobs/s, batches of %d, %d goroutines)", total,
		worked.Round(time.Millisecond), float64(total)/worked.Seconds(), claimBatch, workers)
}
