package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
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
	var mu sync.Mutex
	ok := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				id := uuid.Must(uuid.NewV7()).String()
				_, err := s.JobInsertMany(context.Background(), []*store.InsertParams{{ID: id, Kind: "k", Queue: "q",
					Args: json.RawMessage(`{}`), MaxAttempts: 1, Actor: hoppertype.ActorAPI}})
				mu.Lock()
				ok[id] = err == nil
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	cancelers.Wait()
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
	var mu sync.Mutex
	ok := map[string]bool{}
	var failed, aborted int
	var others []error // failures that do not say the store is unavailable
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				id := uuid.Must(uuid.NewV7()).String()
				_, err := s.JobInsertMany(context.Background(), []*store.InsertParams{{ID: id, Kind: "k", Queue: "q",
					Args: args, MaxAttempts: 1, Actor: hoppertype.ActorAPI}})
				mu.Lock()
				ok[id] = err == nil
				if err != nil {
					failed++
					if strings.Contains(err.Error(), "write aborted") {
						aborted++
					}
					if !errors.Is(err, store.ErrUnavailable) {
						others = append(others, err)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Positive(t, failed, "the 50 pages' room ran out")
	require.Empty(t, others, "every failure is store.ErrUnavailable")
	t.Logf("%d of %d inserts failed, %d of them with another request's transaction", failed, len(ok), aborted)
	for id, inserted := range ok {
		_, err := s.JobGet(context.Background(), id)
		if inserted {
			require.NoError(t, err, "reported stored")
		} else {
			require.ErrorIs(t, err, store.ErrNotFound, "reported failed but stored")
		}
	}

	require.NoError(t, sqlite.LimitPages(s, -1))
	_, err = s.JobInsertMany(context.Background(), []*store.InsertParams{{ID: uuid.Must(uuid.NewV7()).String(), Kind: "k",
		Queue: "q", Args: args, MaxAttempts: 1, Actor: hoppertype.ActorAPI}})
	require.NoError(t, err)
}
