package engine

import (
	"context"
	"sync"

	"github.com/hopperjobs/hopper/internal/store"
)

// A Gather makes the outcomes of one request's items (a remote worker's batched report) reach
// the completer together, so they are written in one transaction instead of the first few
// starting a flush while the rest are still being checked. Each item runs under the context
// of its Item and calls Finish at most once (later calls go to the completer alone); the
// outcomes are handed over once every item has either called Finish or ended.
type Gather struct {
	e     *Engine
	mu    sync.Mutex
	left  int // items that have neither queued an outcome nor ended
	ps    []*store.FinishParams
	dones []chan error
}

// Gather starts a gather of n items.
func (e *Engine) Gather(n int) *Gather { return &Gather{e: e, left: n} }

// Item returns the context under which one item calls Finish, and the func that ends the item
// (call it when the item's work is over, whether or not it called Finish).
func (g *Gather) Item(ctx context.Context) (context.Context, func()) {
	it := &gatherItem{g: g}
	return context.WithValue(ctx, gatherKey{}, it), it.end
}

type gatherKey struct{}

type gatherItem struct {
	g    *Gather
	once sync.Once
}

func gatheredFrom(ctx context.Context) *gatherItem {
	it, _ := ctx.Value(gatherKey{}).(*gatherItem)
	return it
}

// queue hands p to the gather, or to the completer alone when this item already counted.
func (it *gatherItem) queue(p *store.FinishParams, done chan error) {
	queued := false
	it.once.Do(func() {
		it.g.count(p, done)
		queued = true
	})
	if !queued {
		it.g.e.completer.addWaiting(p, done)
	}
}

func (it *gatherItem) end() { it.once.Do(func() { it.g.count(nil, nil) }) }

// count records one item's outcome (nil: the item ended without one); the last item hands
// them all to the completer.
func (g *Gather) count(p *store.FinishParams, done chan error) {
	g.mu.Lock()
	if p != nil {
		g.ps, g.dones = append(g.ps, p), append(g.dones, done)
	}
	g.left--
	last := g.left == 0
	ps, dones := g.ps, g.dones
	g.mu.Unlock()
	if last && len(ps) > 0 {
		g.e.completer.addAll(ps, dones)
	}
}
