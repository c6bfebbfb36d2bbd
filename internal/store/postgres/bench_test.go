package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/stretchr/testify/require"
)

func benchInsert(b *testing.B, s *postgres.Store, n int) {
	b.Helper()
	ps := make([]*store.InsertParams, n)
	for i := range ps {
		ps[i] = &store.InsertParams{ID: uuid.Must(uuid.NewV7()).String(), Kind: "noop", Queue: "default",
			Args: json.RawMessage(`{}`), MaxAttempts: 5, Actor: hoppertype.ActorAPI}
	}
	_, err := s.JobInsertMany(b.Context(), ps)
	require.NoError(b, err)
}

// BenchmarkInsertBatch100 inserts 100 jobs per statement batch; ns/op is per batch.
func BenchmarkInsertBatch100(b *testing.B) {
	requireDatabase(b)
	s := openStore(b, freshSchema(b), nil)
	for b.Loop() {
		benchInsert(b, s, 100)
	}
}

// BenchmarkClaimComplete50 claims 50 jobs and completes them; ns/op is per 50 jobs (two
// durable commits, synchronous_commit=on).
func BenchmarkClaimComplete50(b *testing.B) {
	requireDatabase(b)
	s := openStore(b, freshSchema(b), nil)
	p := &store.ClaimParams{Queue: "default", Kinds: []string{"noop"}, Limit: 50, WorkerID: "w", LeaseDuration: time.Minute}
	for b.Loop() {
		b.StopTimer()
		benchInsert(b, s, 50)
		b.StartTimer()
		jobs, err := s.JobClaim(b.Context(), p)
		require.NoError(b, err)
		fin := make([]*store.FinishParams, len(jobs))
		for i, j := range jobs {
			fin[i] = &store.FinishParams{ID: j.ID, Token: j.Token, State: hoppertype.StateCompleted,
				Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker}
		}
		_, err = s.JobFinishMany(b.Context(), fin)
		require.NoError(b, err)
	}
}
