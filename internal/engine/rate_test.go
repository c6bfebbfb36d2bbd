package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// A rate limit makes no producer spin: with a kind's limit set and nothing to do, the
// producer claims once and then waits for its (hour-long) poll; with jobs of the kind waiting
// for its bucket, it claims about once per start the limit allows, not every few
// milliseconds. Five seconds of fake time pass in 50 ms steps, each once the engine waits on
// the clock again.
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
			sq, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t), Clock: clk})
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
			started := int64(0) // the jobs that ran, less those still in ran
			if tc.waiting > 0 {
				select {
				case <-ran: // the bucket's first start
					started++
				case <-time.After(10 * time.Second):
					t.Fatal("the bucket's first start never ran")
				}
			}
			// Each step waits until the producer is between claims, every job it claimed has
			// run, and the engine's loops wait on the clock (the producer, the lease keeper and
			// the node heartbeat), so the producer keeps up with the clock.
			settled := func() bool {
				return st.active.Load() == 0 && started+int64(len(ran)) == st.took.Load() && clk.Pending() == 3
			}
			stepClock(t, clk, 5*time.Second, 50*time.Millisecond, settled)
			// How many starts the limit's refills made depends on how the producer's looks fall
			// against the refills, so only the claims are bounded.
			require.LessOrEqual(t, st.claims.Load(), tc.maxClaims, "claims in 5 s of fake time")
		})
	}
}
