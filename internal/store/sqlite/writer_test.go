package sqlite_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// One caller's context ending must not undo or misreport the other writes that share its
// transaction: every insert that reports success is stored, every one that fails is not.
func TestCanceledCallerSparesItsGroup(t *testing.T) {
	t.Parallel()
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	defer s.Close()
	stop := make(chan struct{})
	var cancelers sync.WaitGroup
	cancelers.Add(1)
	go func() { // writes whose contexts end while they wait or run
		defer cancelers.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(50+len(stop))*time.Microsecond)
			_, _ = s.JobPromoteScheduled(ctx, &store.PromoteParams{})
			_, _ = s.JobRescueExpired(ctx, &store.RescueParams{})
			cancel()
		}
	}()
	ok, _ := insertConcurrently(s, json.RawMessage(`{}`))
	close(stop)
	cancelers.Wait()
	requireStoredAsReported(t, s, ok)
}

// insertConcurrently inserts 320 jobs of args from 8 goroutines, one job a call, and returns
// whether each insert reported success, and the errors of those that did not.
func insertConcurrently(s *sqlite.Store, args json.RawMessage) (ok map[string]bool, errs []error) {
	var mu sync.Mutex
	ok = map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 40 {
				id := uuid.Must(uuid.NewV7()).String()
				_, err := s.JobInsertMany(context.Background(), []*store.InsertParams{{ID: id, Kind: "k", Queue: "q",
					Args: args, MaxAttempts: 1, Actor: hoppertype.ActorAPI}})
				mu.Lock()
				ok[id] = err == nil
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ok, errs
}

// requireStoredAsReported: every insert reported stored is stored, none reported failed is.
func requireStoredAsReported(t *testing.T, s *sqlite.Store, ok map[string]bool) {
	t.Helper()
	for id, inserted := range ok {
		_, err := s.JobGet(context.Background(), id)
		if inserted {
			require.NoError(t, err, "reported stored")
		} else {
			require.ErrorIs(t, err, store.ErrNotFound, "reported failed but stored")
		}
	}
}

// A full disk fails writes with store.ErrUnavailable, also those of a request that shared its
// transaction with the one that found the disk full (SQLite then rolls the whole transaction
// back: the writer's statements keep no statement journal); every insert reported stored is
// stored, none reported failed is; once there is room, writes go on.
func TestAFullDiskIsUnavailable(t *testing.T) {
	t.Parallel()
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, sqlite.LimitPages(s, 50))
	args := json.RawMessage(`{"pad":"` + strings.Repeat("x", 2000) + `"}`)
	ok, errs := insertConcurrently(s, args)
	require.NotEmpty(t, errs, "the 50 pages' room ran out")
	aborted := 0
	for _, err := range errs {
		require.ErrorIs(t, err, store.ErrUnavailable)
		if strings.Contains(err.Error(), "write aborted") {
			aborted++
		}
	}
	t.Logf("%d of %d inserts failed, %d of them with another request's transaction", len(errs), len(ok), aborted)
	requireStoredAsReported(t, s, ok)

	require.NoError(t, sqlite.LimitPages(s, -1))
	_, err = s.JobInsertMany(context.Background(), []*store.InsertParams{{ID: uuid.Must(uuid.NewV7()).String(), Kind: "k",
		Queue: "q", Args: args, MaxAttempts: 1, Actor: hoppertype.ActorAPI}})
	require.NoError(t, err)
}
