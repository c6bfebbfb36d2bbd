package sqlite_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

func openBench(b *testing.B) *sqlite.Store {
	b.Helper()
	s, err := sqlite.Open(b.Context(), sqlite.Config{Path: b.TempDir() + "/bench.db"})
	require.NoError(b, err)
	b.Cleanup(func() { s.Close() })
	return s
}

func insertN(b *testing.B, s *sqlite.Store, n int) {
	b.Helper()
	ps := make([]*store.InsertParams, n)
	for i := range ps {
		ps[i] = &store.InsertParams{ID: uuid.Must(uuid.NewV7()).String(), Kind: "noop", Queue: "default",
			Args: json.RawMessage(`{}`), MaxAttempts: 5, Actor: hoppertype.ActorAPI}
	}
	_, err := s.JobInsertMany(b.Context(), ps)
	require.NoError(b, err)
}

// BenchmarkInsertBatch100 inserts 100 jobs per transaction; ns/op is per batch.
func BenchmarkInsertBatch100(b *testing.B) {
	s := openBench(b)
	for b.Loop() {
		insertN(b, s, 100)
	}
}

// BenchmarkClaimEmpty measures the claim query against an empty queue (an idle poll).
func BenchmarkClaimEmpty(b *testing.B) {
	s := openBench(b)
	p := &store.ClaimParams{Queue: "default", Kinds: []string{"noop"}, Limit: 50, WorkerID: "w", LeaseDuration: time.Minute}
	for b.Loop() {
		_, err := s.JobClaim(b.Context(), p)
		require.NoError(b, err)
	}
}

// BenchmarkClaimComplete50 claims 50 jobs and completes them in a second transaction; ns/op is
// per 50 jobs (two fsyncs with synchronous=FULL).
func BenchmarkClaimComplete50(b *testing.B) {
	s := openBench(b)
	p := &store.ClaimParams{Queue: "default", Kinds: []string{"noop"}, Limit: 50, WorkerID: "w", LeaseDuration: time.Minute}
	for b.Loop() {
		b.StopTimer()
		insertN(b, s, 50)
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
