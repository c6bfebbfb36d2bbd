package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// A rate limit makes no producer spin: with a kind's limit set and nothing to do, the
// producer claims once and then waits for its (hour-long) poll; with jobs of the kind waiting
// for its bucket, it claims about once per start the limit allows, not every few
// milliseconds. Five seconds of fake time pass in 50 ms steps.
func TestRateLimitedProducerDoesNotSpin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		waiting   int // sms jobs queued
		maxClaims int64
	}{
		{"idle", 0, 2},
		{"waiting for the bucket", 10, 2 + 5 + 2}, // the first claim, one per second, slack
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			sq, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "hopper.db"), Clock: clk})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, sq.Close()) })
			st := &claimCounter{Store: sq}
			require.NoError(t, st.RateSet(t.Context(), &store.RateParams{Scope: store.LimitKind, Name: "sms",
				Rate: store.Rate{Limit: 1, Period: time.Second}}))
			ran := make(chan string, 20)
			if tc.waiting > 0 {
				ps := make([]*store.InsertParams, tc.waiting)
				for i := range ps {
					ps[i] = &store.InsertParams{ID: fmt.Sprintf("job-%d", i), Kind: "sms", Queue: "default", Args: []byte(`{}`),
						MaxAttempts: 1, RunAt: clk.Now(), Actor: hoppertype.ActorOperator}
				}
				_, err = st.JobInsertMany(t.Context(), ps)
				require.NoError(t, err)
			}
			e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1", Workers: workersOf("sms", okHandler{ran: ran}),
				MaxWorkers: 10, Queues: map[string]int{"default": 10}, PollInterval: time.Hour})
			require.NoError(t, err)
			require.NoError(t, e.Start(context.Background()))
			t.Cleanup(func() {
				stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				require.NoError(t, e.Stop(stopCtx))
			})
			require.Eventually(t, func() bool { return st.claims.Load() >= 1 }, 5*time.Second, time.Millisecond)
			if tc.waiting > 0 {
				select {
				case <-ran: // the bucket's first start
				case <-time.After(10 * time.Second):
					t.Fatal("the bucket's first start never ran")
				}
			}
			for range 100 {
				clk.Advance(50 * time.Millisecond)
				time.Sleep(time.Millisecond)
			}
			// How many starts the limit's refills made depends on how fast the producer keeps up
			// with the clock, so only the claims are bounded.
			require.LessOrEqual(t, st.claims.Load(), tc.maxClaims, "claims in 5 s of fake time")
		})
	}
}
