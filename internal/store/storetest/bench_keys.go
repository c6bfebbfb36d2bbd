package storetest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// BenchKeyLimits times fair claims of 10 jobs in a queue of 10,000 fairness keys (3 queued
// jobs each; half of them with a job running already), without limits per key and with a cap
// of 1 per key and a rate of 1,000,000/1s per key on the queue: what the limits per key add to
// a claim, however many keys the queue has. Each claim's jobs are completed and replaced by
// new ones untimed.
func BenchKeyLimits(b *testing.B, opener Opener) {
	for _, name := range []string{"NoLimits", "CapPerKey1", "CapAndRatePerKey"} {
		b.Run(name, func(b *testing.B) {
			s := openBench(b, opener)
			const keys = 10_000
			var ps []*store.InsertParams
			for k := range keys {
				for range 3 {
					ps = append(ps, benchKeyed(fmt.Sprintf("k%05d", k)))
				}
				if len(ps) >= 3000 {
					_, err := s.JobInsertMany(b.Context(), ps)
					require.NoError(b, err)
					ps = ps[:0]
				}
			}
			for range keys / 2 / 100 { // half the keys run a job: 5,000 running keyed jobs
				jobs, _, err := s.JobClaim(b.Context(), &store.ClaimParams{Queue: defaultQueue, Limit: 100, WorkerID: "busy",
					LeaseDuration: time.Hour})
				require.NoError(b, err)
				require.NotEmpty(b, jobs)
			}
			if name != "NoLimits" {
				require.NoError(b, s.LimitSet(b.Context(), &store.LimitParams{Scope: store.LimitQueue, Name: defaultQueue,
					MaxRunning: 1, PerKey: true}))
			}
			if name == "CapAndRatePerKey" {
				require.NoError(b, s.RateSet(b.Context(), &store.RateParams{Scope: store.LimitQueue, Name: defaultQueue,
					Rate: store.Rate{Limit: 1_000_000, Period: time.Second}, PerKey: true}))
			}
			next := keys
			for b.Loop() {
				jobs, _, err := s.JobClaim(b.Context(), &store.ClaimParams{Queue: defaultQueue, Limit: 10, WorkerID: workerA,
					LeaseDuration: time.Minute})
				require.NoError(b, err)
				b.StopTimer()
				require.NotEmpty(b, jobs)
				benchComplete(b, s, jobs)
				more := make([]*store.InsertParams, len(jobs))
				for i := range more {
					more[i] = benchKeyed(fmt.Sprintf("k%05d", next))
					next++
				}
				_, err = s.JobInsertMany(b.Context(), more)
				require.NoError(b, err)
				b.StartTimer()
			}
		})
	}
}

func benchKeyed(key string) *store.InsertParams {
	return &store.InsertParams{ID: uuid.Must(uuid.NewV7()).String(), Kind: "noop", Queue: defaultQueue,
		Args: json.RawMessage(`{}`), MaxAttempts: 5, Actor: hoppertype.ActorAPI, FairnessKey: key}
}
