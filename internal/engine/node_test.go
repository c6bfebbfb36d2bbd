package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// beatRecorder is a real store that records the node heartbeats it wrote.
type beatRecorder struct {
	store.Store
	mu    sync.Mutex
	beats []hoppertype.Node
}

func (r *beatRecorder) NodeHeartbeat(ctx context.Context, n *hoppertype.Node) error {
	if err := r.Store.NodeHeartbeat(ctx, n); err != nil {
		return err
	}
	r.mu.Lock()
	r.beats = append(r.beats, *n)
	r.mu.Unlock()
	return nil
}

// idle returns, for each heartbeat so far, whether it said the node was idle.
func (r *beatRecorder) idle() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]bool, len(r.beats))
	for i, b := range r.beats {
		out[i] = b.Idle
	}
	return out
}

// An idle node (no job running, nothing held back) heartbeats once, saying it is idle, and then
// writes no heartbeat while nothing changes, but one every 12 hours. The first job that starts
// makes it heartbeat at once, not idle, without waiting for its timer; it heartbeats as usual
// while the job runs; idle again, it says so once and goes quiet. On the old code an idle node
// heartbeated every NodeTTL/3.
func TestAnIdleNodeHeartbeatsOnlyWhenItsStateChanges(t *testing.T) {
	t.Parallel()
	clk, sq := fakeClockSQLite(t)
	st := &beatRecorder{Store: sq}
	h := heldHandler{started: make(chan heldJob, 1)}
	const nodeTTL = 30 * time.Second
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1", Workers: workersOf("k", h), MaxWorkers: 1,
		Queues: map[string]int{"default": 1}, NodeTTL: nodeTTL, PollInterval: time.Second})
	require.NoError(t, err)
	started(t, e)
	// Its producer, its node heartbeat and its lease keeper wait on the clock between looks.
	settled := func() bool { return clk.Pending() == 3 }
	advance := func(d time.Duration) { stepClock(t, clk, d, time.Second, settled) }
	beatsAre := func(want []bool, msg string) {
		t.Helper()
		require.Eventually(t, func() bool { return len(st.idle()) >= len(want) }, 10*time.Second, time.Millisecond, msg)
		requireSettled(t, settled) // a heartbeat too many would land before the loops wait again
		require.Equal(t, want, st.idle(), msg)
	}
	storedIdle := func() bool {
		t.Helper()
		nodes, err := sq.NodeList(t.Context())
		require.NoError(t, err)
		require.Len(t, nodes, 1)
		return nodes[0].Idle
	}

	beatsAre([]bool{true}, "the first heartbeat says the node is idle")
	require.True(t, storedIdle())
	advance(3 * nodeTTL)
	beatsAre([]bool{true}, "an idle node writes no heartbeat over three NodeTTLs")

	_, err = sq.JobInsertMany(t.Context(), []*store.InsertParams{{ID: "job-1", Kind: "k", Queue: "default",
		Args: []byte(`{}`), MaxAttempts: 1, RunAt: clk.Now(), Actor: hoppertype.ActorAPI}})
	require.NoError(t, err)
	e.Notify("default")
	var job heldJob
	select {
	case job = <-h.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not start")
	}
	beatsAre([]bool{true, false}, "a job started: the node heartbeats at once, with no time passing")
	require.False(t, storedIdle())
	advance(nodeTTL / 3)
	beatsAre([]bool{true, false, false}, "while the job runs, the node heartbeats every NodeTTL/3")

	close(job.finish)
	require.Eventually(t, func() bool { return countState(t, sq, hoppertype.StateCompleted) == 1 },
		10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return e.Running() == 0 }, 10*time.Second, time.Millisecond)

	// Another job starts before the node said it was idle: no heartbeat for it (a busy node
	// does not heartbeat per job).
	_, err = sq.JobInsertMany(t.Context(), []*store.InsertParams{{ID: "job-2", Kind: "k", Queue: "default",
		Args: []byte(`{}`), MaxAttempts: 1, RunAt: clk.Now(), Actor: hoppertype.ActorAPI}})
	require.NoError(t, err)
	e.Notify("default")
	select {
	case job = <-h.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the second job did not start")
	}
	close(job.finish)
	require.Eventually(t, func() bool { return countState(t, sq, hoppertype.StateCompleted) == 2 },
		10*time.Second, time.Millisecond)
	require.Eventually(t, func() bool { return e.Running() == 0 }, 10*time.Second, time.Millisecond)
	beatsAre([]bool{true, false, false}, "a job that starts on a busy node writes no heartbeat")

	advance(nodeTTL / 3)
	beatsAre([]bool{true, false, false, true}, "idle again: one heartbeat says so")
	require.True(t, storedIdle())
	advance(3 * nodeTTL)
	beatsAre([]bool{true, false, false, true}, "and then none")

	clk.Advance(12 * time.Hour)
	beatsAre([]bool{true, false, false, true, true}, "an idle node says it again every 12 hours, to stay listed")
	advance(3 * nodeTTL)
	beatsAre([]bool{true, false, false, true, true}, "and is quiet again")
}
