package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/governor"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// claimCounter counts the claims that reach the store, those under way and the jobs they
// took.
type claimCounter struct {
	store.Store
	claims atomic.Int64
	active atomic.Int64
	took   atomic.Int64
}

func (c *claimCounter) JobClaim(ctx context.Context, p *store.ClaimParams) ([]*hoppertype.JobRow, store.Hold, error) {
	c.claims.Add(1)
	c.active.Add(1)
	defer c.active.Add(-1)
	rows, hold, err := c.Store.JobClaim(ctx, p)
	c.took.Add(int64(len(rows)))
	return rows, hold, err
}

// cpuReader reports the CPU use the test sets.
type cpuReader struct {
	mu  sync.Mutex
	cpu float64
}

func (r *cpuReader) set(cpu float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cpu = cpu
}

func (r *cpuReader) Read() (governor.Sample, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return governor.Sample{CPU: r.cpu, Memory: 1 << 20}, nil
}

// Contract 15: while the governor holds, the producer starts no claim; the jobs already
// running finish and their outcomes are written; the node's heartbeat says it holds; once
// the governor opens, claims resume at once, without waiting for a poll.
func TestGovernorHoldsClaimsAndRunningJobsFinish(t *testing.T) {
	t.Parallel()
	clk, sq := fakeClockSQLite(t)
	st := &claimCounter{Store: sq}
	ps := make([]*store.InsertParams, 4)
	for i := range ps {
		ps[i] = &store.InsertParams{ID: fmt.Sprintf("job-%d", i), Kind: "k", Queue: "default", Args: []byte(`{}`),
			MaxAttempts: 1, RunAt: clk.Now(), Actor: hoppertype.ActorOperator}
	}
	_, err := st.JobInsertMany(t.Context(), ps)
	require.NoError(t, err)

	cpu := &cpuReader{}
	gov, err := governor.New(governor.Config{MaxCPU: 0.5, Reader: cpu, Clock: clk})
	require.NoError(t, err)
	h := heldHandler{started: make(chan heldJob, 10)}
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1", Workers: workersOf("k", h), MaxWorkers: 2,
		Queues: map[string]int{"default": 2}, Governor: gov, PollInterval: time.Second})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(stopCtx))
	})
	started := func() heldJob {
		t.Helper()
		select {
		case j := <-h.started:
			return j
		case <-time.After(10 * time.Second):
			t.Fatal("no job started")
			return heldJob{}
		}
	}
	running := []heldJob{started(), started()}

	// The process gets busy: the governor holds.
	cpu.set(1)
	gov.Sample() // what its loop does every second (the fake clock's moves below do it too)
	require.NotNil(t, gov.Hold())
	require.Eventually(t, func() bool {
		nodes, err := st.NodeList(t.Context())
		return err == nil && len(nodes) == 1 && nodes[0].Holding &&
			fmt.Sprint(nodes[0].HeldQueues) == "[default]" && fmt.Sprint(nodes[0].Queues) == "[default]"
	}, 10*time.Second, time.Millisecond, "a change of the governor is heartbeated at once")

	// The running jobs finish, and their outcomes are written.
	claims := st.claims.Load()
	for _, j := range running {
		close(j.finish)
	}
	require.Eventually(t, func() bool { return countState(t, st, hoppertype.StateCompleted) == 2 },
		10*time.Second, time.Millisecond)
	// Free slots, an enqueue's wake-up and the poll timer: none starts a claim while held.
	p := e.producer.loop
	for range 3 {
		e.Notify("default")
		clk.Advance(time.Second) // poll timer (the governor samples 1 s again: still busy)
		require.Eventually(t, p.Settled, 10*time.Second, time.Millisecond, "the producer took the wake-up")
	}
	require.Equal(t, claims, st.claims.Load(), "no claim while the governor holds")
	require.Equal(t, 2, countState(t, st, hoppertype.StateQueued))
	select {
	case j := <-h.started:
		t.Fatalf("job of queue %s started while the governor held", j.queue)
	default:
	}

	// Idle again: the governor opens (after a few samples of the moving average) and the
	// producer claims at once.
	cpu.set(0)
	for gov.Hold() != nil {
		gov.Sample()
	}
	running = []heldJob{started(), started()}
	for _, j := range running {
		close(j.finish)
	}
	require.Eventually(t, func() bool {
		nodes, err := st.NodeList(t.Context())
		return err == nil && len(nodes) == 1 && !nodes[0].Holding && len(nodes[0].HeldQueues) == 0
	}, 10*time.Second, time.Millisecond)
}

func countState(t *testing.T, st store.Store, state hoppertype.JobState) int {
	t.Helper()
	counts, err := st.JobCounts(t.Context())
	require.NoError(t, err)
	n := 0
	for _, c := range counts {
		if c.State == state {
			n += int(c.Count)
		}
	}
	return n
}
