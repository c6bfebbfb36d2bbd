package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// poisonStore refuses any batch that holds the job "poison", as a database refuses a whole
// statement for one value it cannot store.
type poisonStore struct {
	store.Store
	mu      sync.Mutex
	written []string
}

func (p *poisonStore) JobFinishMany(_ context.Context, ps []*store.FinishParams) ([]error, error) {
	for _, f := range ps {
		if f.ID == "poison" {
			return nil, errors.New("timestamp out of range")
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range ps {
		p.written = append(p.written, f.ID)
	}
	return make([]error, len(ps)), nil
}

func TestOnePoisonedOutcomeDoesNotHoldBackTheOthers(t *testing.T) {
	st := &poisonStore{}
	e, err := New(Config{Store: st, WorkerID: "w"})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	defer stoptest.Within(t, e, 10*time.Second)

	// Queue both before the completer runs, so they share a batch.
	done := map[string]chan error{"good": make(chan error, 1), "poison": make(chan error, 1)}
	e.completer.mu.Lock()
	for id, ch := range done {
		p := &store.FinishParams{ID: id, Token: 1, State: "completed"}
		e.completer.pending = append(e.completer.pending, p)
		e.completer.waiters[p] = ch
	}
	e.completer.mu.Unlock()
	e.completer.kick <- struct{}{}

	require.NoError(t, <-done["good"])
	require.ErrorContains(t, <-done["poison"], "timestamp out of range")
	require.Equal(t, []string{"good"}, st.written)
}

// downStore fails every JobFinishMany with store.ErrUnavailable while down, and counts them.
type downStore struct {
	store.Store
	down    atomic.Bool
	calls   atomic.Int64
	mu      sync.Mutex
	written []string
}

func (d *downStore) JobFinishMany(_ context.Context, ps []*store.FinishParams) ([]error, error) {
	if d.down.Load() {
		d.calls.Add(1)
		return nil, fmt.Errorf("connection refused: %w", store.ErrUnavailable)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range ps {
		d.written = append(d.written, p.ID)
	}
	return make([]error, len(ps)), nil
}

func (d *downStore) writtenIDs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.written...)
}

// While the store is down, outcomes keep arriving (each one kicks the completer): they wait
// for the retry after the backoff instead of each trying the store at once, the failing
// batch is not split item by item, and everything is written once the store is back.
func TestOutcomesDuringAnOutageWaitForTheBackoff(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	st := &downStore{}
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "w"})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	defer e.Stop(context.Background()) //nolint:errcheck // test cleanup

	st.down.Store(true)
	// The completer took its kick, and its store calls back off: it waits on the clock for
	// the retry (a flush that fails schedules one).
	settled := func() bool { return len(e.completer.kick) == 0 && e.completer.held() && clk.Pending() > 0 }
	var ids []string
	for i := range 200 { // 200 outcomes over 10 s
		id := fmt.Sprintf("job-%03d", i)
		ids = append(ids, id)
		e.completer.add(&store.FinishParams{ID: id, Token: 1, State: hoppertype.StateCompleted})
		requireSettled(t, settled)
		clk.Advance(50 * time.Millisecond)
	}
	calls := st.calls.Load()
	t.Logf("%d store calls for 200 outcomes during a 10 s outage", calls)
	require.Less(t, calls, int64(30), "a few calls, not one per outcome nor per item")
	require.True(t, e.completer.retry.Status().Failing())

	st.down.Store(false)
	require.Eventually(t, func() bool {
		clk.Advance(100 * time.Millisecond)
		return len(st.writtenIDs()) == len(ids)
	}, 10*time.Second, time.Millisecond)
	require.ElementsMatch(t, ids, st.writtenIDs(), "every outcome written once")
	require.False(t, e.completer.retry.Status().Failing())
}
