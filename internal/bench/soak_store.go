package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// timedStore is the store the soak's client uses: the real one, with its claims and sweep
// windows timed. A claim that overlapped a sweep window is also kept apart, to see whether the
// sweep holds claims up (issue 13: "the sweep never holds a lock long enough to push claim
// p99 above 20 ms").
type timedStore struct {
	store.Store

	sweeping atomic.Int64 // sweep windows in flight
	sweeps   atomic.Int64 // sweep windows begun

	mu          sync.Mutex
	claims      []time.Duration // since the last row
	duringSweep []time.Duration // the claims among them that overlapped a sweep window
	sweepMax    time.Duration
	sweepWins   int64
	swept       int64
}

func newTimedStore(st store.Store) *timedStore { return &timedStore{Store: st} }

// wrapped is t as the client's store. A store that pushes notifications (PostgreSQL) keeps
// pushing them: without, the engine would fall back to polling and the latencies would be
// its poll interval.
func (t *timedStore) wrapped() store.Store {
	if n, ok := t.Store.(store.Notifier); ok {
		return &timedNotifier{timedStore: t, Notifier: n}
	}
	return t
}

// timedNotifier is a timedStore over a store that pushes notifications.
type timedNotifier struct {
	*timedStore
	store.Notifier
}

// PollOnly passes on the PostgreSQL store's setting, which the engine looks for.
func (t *timedNotifier) PollOnly() bool {
	po, ok := t.Store.(interface{ PollOnly() bool })
	return ok && po.PollOnly()
}

// JobClaim times the claim.
func (t *timedStore) JobClaim(ctx context.Context, p *store.ClaimParams) ([]*hoppertype.JobRow, store.Hold, error) {
	sweepsBefore, sweepingBefore := t.sweeps.Load(), t.sweeping.Load()
	start := time.Now()
	jobs, hold, err := t.Store.JobClaim(ctx, p)
	d := time.Since(start)
	overlapped := sweepingBefore > 0 || t.sweeping.Load() > 0 || t.sweeps.Load() != sweepsBefore
	t.mu.Lock()
	t.claims = append(t.claims, d)
	if overlapped {
		t.duringSweep = append(t.duringSweep, d)
	}
	t.mu.Unlock()
	return jobs, hold, err
}

// JobSweepExpired times one window of the sweep and counts what it deleted.
func (t *timedStore) JobSweepExpired(ctx context.Context, p *store.SweepParams) (*store.SweepResult, error) {
	t.sweeps.Add(1)
	t.sweeping.Add(1)
	start := time.Now()
	res, err := t.Store.JobSweepExpired(ctx, p)
	d := time.Since(start)
	t.sweeping.Add(-1)
	t.mu.Lock()
	t.sweepMax = max(t.sweepMax, d)
	t.sweepWins++
	if err == nil {
		t.swept += int64(res.Deleted)
	}
	t.mu.Unlock()
	return res, err
}

// claimTimes are the timings since the last take.
type claimTimes struct {
	claims, duringSweep []time.Duration
	sweepMax            time.Duration
	sweepWins, swept    int64
}

// take returns the timings since the last take and starts new lists in the lists of prev,
// which the caller is done with.
func (t *timedStore) take(prev claimTimes) claimTimes {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := claimTimes{claims: t.claims, duringSweep: t.duringSweep, sweepMax: t.sweepMax,
		sweepWins: t.sweepWins, swept: t.swept}
	t.claims, t.duringSweep = prev.claims[:0], prev.duringSweep[:0]
	t.sweepMax, t.sweepWins, t.swept = 0, 0, 0
	return out
}
