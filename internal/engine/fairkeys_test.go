package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// A tenant's flood holds every slot of the queue; another tenant's job, enqueued after it,
// takes the first slot that frees up, not the flood's turn.
func TestAFairnessKeysJobTakesTheNextFreeSlot(t *testing.T) {
	t.Parallel()
	clk, st := fakeClockSQLite(t)
	insert := func(key string, n int) {
		ps := make([]*store.InsertParams, n)
		for i := range ps {
			ps[i] = &store.InsertParams{ID: fmt.Sprintf("%s-%04d", key, i), Kind: "k", Queue: "default",
				Args: []byte(`{}`), MaxAttempts: 1, RunAt: clk.Now(), FairnessKey: key, Actor: hoppertype.ActorOperator}
		}
		_, err := st.JobInsertMany(t.Context(), ps)
		require.NoError(t, err)
	}
	insert("tenant-a", 200)

	h := heldHandler{started: make(chan heldJob, 100)}
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1", Workers: workersOf("k", h),
		MaxWorkers: 4, Queues: map[string]int{"default": 4}})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(stopCtx))
	})

	var running []heldJob // oldest first
	next := func() heldJob {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			select {
			case j := <-h.started:
				running = append(running, j)
				return j
			// Real time: how long to let the loops run before the fake clock moves on.
			case <-time.After(time.Millisecond):
				clk.Advance(time.Millisecond)
			case <-deadline:
				t.Fatalf("no job started; running %d", len(running))
			}
		}
	}
	for range 4 {
		require.Equal(t, "tenant-a", next().key, "alone, the flood takes every slot")
	}
	insert("tenant-b", 1)
	e.Notify("default")
	close(running[0].finish)
	running = running[1:]
	require.Equal(t, "tenant-b", next().key, "the first free slot")
	for _, j := range running {
		close(j.finish)
	}
}
