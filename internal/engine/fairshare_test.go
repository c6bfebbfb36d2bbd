package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// heldHandler runs each job until the test lets it finish, and says which queue it came from
// and its fairness key.
type heldHandler struct{ started chan heldJob }

type heldJob struct {
	queue, key string
	finish     chan struct{}
}

func (h heldHandler) Prepare(row *hoppertype.JobRow) (attempt.Unit, error) {
	return heldUnit{h, row.Queue, row.FairnessKey}, nil
}

type heldUnit struct {
	h          heldHandler
	queue, key string
}

func (u heldUnit) Work(ctx context.Context) error {
	j := heldJob{queue: u.queue, key: u.key, finish: make(chan struct{})}
	u.h.started <- j
	select {
	case <-j.finish:
	case <-ctx.Done():
	}
	return nil
}
func (heldUnit) Timeout() time.Duration               { return 0 }
func (heldUnit) RetryPolicy() *hoppertype.RetryPolicy { return nil }

// Contract 14: two backlogged queues share a process's slots by weight. The flood queue's
// jobs fill every slot before the other queue has work; as jobs finish, the other queue gets
// slots until the running jobs split 3:1 (configured), then 1:3 once an operator stores
// weights the other way round, and from then on each queue starts jobs in that proportion.
func TestBackloggedQueuesShareSlotsByWeight(t *testing.T) {
	t.Parallel()
	clk, st := fakeClockSQLite(t)
	insert := func(queue string, n int) {
		ps := make([]*store.InsertParams, n)
		for i := range ps {
			ps[i] = &store.InsertParams{ID: fmt.Sprintf("%s-%04d", queue, i), Kind: "k", Queue: queue,
				Args: []byte(`{}`), MaxAttempts: 1, RunAt: clk.Now(), Actor: hoppertype.ActorOperator}
		}
		_, err := st.JobInsertMany(t.Context(), ps)
		require.NoError(t, err)
	}
	insert("flood", 400)

	h := heldHandler{started: make(chan heldJob, 100)}
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1", Workers: workersOf("k", h),
		MaxWorkers: 8, Queues: map[string]int{"flood": 8, "other": 8}, Weights: map[string]int{"flood": 3}})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(stopCtx))
	})

	var running []heldJob // oldest first
	// next waits for the next job to start, moving the fake clock so that a producer waiting
	// to gather free slots (ClaimCoalesce) claims.
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
	for range 8 {
		require.Equal(t, "flood", next().queue, "alone, the flood takes every slot")
	}
	insert("other", 400)
	e.Notify("other")

	// finishOldest lets the oldest running job finish, waits for the job that takes its
	// slot, and returns that job's queue.
	finishOldest := func() string {
		close(running[0].finish)
		running = running[1:]
		return next().queue
	}
	held := func() map[string]int {
		n := map[string]int{}
		for _, j := range running {
			n[j.queue]++
		}
		return n
	}
	for range 16 {
		finishOldest()
	}
	require.Equal(t, map[string]int{"flood": 6, "other": 2}, held(), "3:1 of 8 slots")
	starts := map[string]int{}
	for range 80 {
		starts[finishOldest()]++
	}
	require.Equal(t, map[string]int{"flood": 60, "other": 20}, starts, "jobs start 3:1 while both are backlogged")

	// An operator's stored weights apply fleet-wide and take precedence over the config.
	require.NoError(t, st.QueueSetWeight(t.Context(), "other", 3))
	require.NoError(t, st.QueueSetWeight(t.Context(), "flood", 1))
	require.NoError(t, e.RefreshWeights(t.Context()))
	require.Equal(t, map[string]int{"flood": 1, "other": 3}, e.Weights())
	for range 16 {
		finishOldest()
	}
	require.Equal(t, map[string]int{"flood": 2, "other": 6}, held(), "1:3 of 8 slots")
	for _, j := range running {
		close(j.finish)
	}
}
