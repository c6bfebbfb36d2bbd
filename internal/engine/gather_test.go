package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// batchStore records the batches of outcomes it is asked to write.
type batchStore struct {
	store.Store
	mu      sync.Mutex
	batches [][]string
}

func (b *batchStore) JobFinishMany(_ context.Context, ps []*store.FinishParams) ([]error, error) {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
	}
	b.mu.Lock()
	b.batches = append(b.batches, ids)
	b.mu.Unlock()
	return make([]error, len(ps)), nil
}

func TestTheOutcomesOfAGatherAreWrittenTogether(t *testing.T) {
	st := &batchStore{}
	e, err := New(Config{Store: st, WorkerID: "w"})
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	defer stoptest.Within(t, e, 10*time.Second)

	g := e.Gather(4)
	var wg sync.WaitGroup
	finish := func(id string) {
		ctx, end := g.Item(context.Background())
		wg.Go(func() {
			defer end()
			require.NoError(t, e.Finish(ctx, &store.FinishParams{ID: id, Token: 1, State: "completed"}))
		})
	}
	finish("a")
	require.Eventually(t, func() bool { g.mu.Lock(); defer g.mu.Unlock(); return len(g.ps) == 1 },
		5*time.Second, time.Millisecond)
	// "a" waits for the rest of its gather: nothing has reached the completer.
	e.completer.mu.Lock()
	require.Empty(t, e.completer.pending)
	e.completer.mu.Unlock()
	_, end := g.Item(context.Background())
	end() // an item that ends without an outcome (refused before it reached the store)
	finish("b")
	finish("c")
	wg.Wait()
	require.Len(t, st.batches, 1, "one write for the gather")
	require.ElementsMatch(t, []string{"a", "b", "c"}, st.batches[0])

	// A second Finish under the same item goes to the completer alone.
	ctx, end := e.Gather(1).Item(context.Background())
	defer end()
	require.NoError(t, e.Finish(ctx, &store.FinishParams{ID: "d", Token: 1, State: "completed"}))
	require.NoError(t, e.Finish(ctx, &store.FinishParams{ID: "e", Token: 1, State: "completed"}))
	require.Equal(t, [][]string{{"d"}, {"e"}}, st.batches[1:])
}
