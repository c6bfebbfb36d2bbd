package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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
