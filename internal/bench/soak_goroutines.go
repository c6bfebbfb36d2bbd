package bench

import (
	"context"
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// goroutineFloor keeps the fewest goroutines seen since the last take. A running job has a
// goroutine of its own, so one look at the count sees however many jobs run at that instant;
// the floor over a row is what the process keeps between jobs, where a leak would show.
type goroutineFloor struct {
	min atomic.Int64
}

func newGoroutineFloor() *goroutineFloor {
	g := &goroutineFloor{}
	g.min.Store(math.MaxInt64)
	return g
}

// run looks at the count every interval until ctx ends.
func (g *goroutineFloor) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		g.note(int64(runtime.NumGoroutine()))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (g *goroutineFloor) note(n int64) {
	for {
		cur := g.min.Load()
		if n >= cur || g.min.CompareAndSwap(cur, n) {
			return
		}
	}
}

// take returns the floor since the last take (now, if there was no look since) and starts
// a new one.
func (g *goroutineFloor) take() int {
	g.note(int64(runtime.NumGoroutine()))
	return int(g.min.Swap(math.MaxInt64))
}
