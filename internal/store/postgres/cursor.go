package postgres

import (
	"sync"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Claim cursors. A claim takes the first queued jobs of its queue in claim order (priority
// descending, then id) from the partial index jobs_claim. A claimed job's index entry stays
// behind until vacuum or a later scan can prove that no transaction can still see the queued
// row version, and a long transaction elsewhere (a report, a forgotten BEGIN, a replica's
// feedback) proves that impossible: every claim then walks, and visits in the heap, the entry
// of every job claimed since that transaction began. Claims slow down with every job worked
// (docs/benchmarks.md, "Pinned horizon").
//
// So a store remembers, per queue and kinds filter, where the last claim found its first job:
// the position (priority p, id i). No job before that position in claim order was claimable
// then (it was not queued, another claim held it, or its group made it wait), and the next
// claim leaves out the "hole" of jobs at priority p with an id below i: it scans, in three
// index ranges, the higher priorities, priority p from id i, and the lower priorities
// (claimCursorSQL). A job that becomes claimable inside the hole is announced by the trigger
// that made it so ('q:<queue> <smallest id>', migration 0016), and hearing it forgets the
// cursor, before the wake-up reaches the engine. So cursors are used only while a
// subscription is listening: without one a store scans from the start, as before.
//
// Two cases are not announced: a claim that another claim skipped while it held the row and
// then rolled back, and a row locked by another writer at the moment of the claim (SKIP
// LOCKED skips it) that stays queued. For those a store scans from the start at least every
// claimRescan per cursor, or every rescanFactor times as long as its last such scan took, if
// longer: while a long transaction holds the dead entries, that scan is the slow one, and
// this keeps it to a hundredth of the claims' time.
type claimCursors struct {
	mu   sync.Mutex
	subs int    // subscriptions listening
	gen  uint64 // counts the times cursors were forgotten
	// byQueue holds the cursors of a queue by kinds filter.
	byQueue map[string]map[string]*claimCursor
}

// claimRescan is how often a claim of a queue with a cursor scans from the start anyway, at
// least; rescanFactor stretches it to that many times the last such scan's duration.
const (
	claimRescan  = time.Second
	rescanFactor = 100
)

// claimCursor is the position of the first job the last claim found.
type claimCursor struct {
	priority int
	id       string        // "" when none is known
	fullAt   time.Time     // when the last scan from the start began
	fullTook time.Duration // how long it took
}

// cursorUse is what a claim starts from: a position, or none (a scan from the start), and the
// generation to hand back to done.
type cursorUse struct {
	queue, kinds string
	gen          uint64
	at           time.Time    // when the claim began
	from         *claimCursor // nil: scan from the start
}

// start returns where a claim of queue with the kinds filter kinds may start at now.
func (c *claimCursors) start(queue, kinds string, now time.Time) cursorUse {
	c.mu.Lock()
	defer c.mu.Unlock()
	use := cursorUse{queue: queue, kinds: kinds, gen: c.gen, at: now}
	cur := c.byQueue[queue][kinds]
	if c.subs > 0 && cur != nil && cur.id != "" && now.Sub(cur.fullAt) < max(claimRescan, rescanFactor*cur.fullTook) {
		from := *cur
		use.from = &from
	}
	return use
}

// done records what a claim that started with use found: first is the first job in claim order
// of those it claimed, nil for none (the cursor stays: nothing became claimable before it).
// A claim that ran while cursors were forgotten records nothing, since what it saw may predate
// what was heard; a claim that scanned from the start records the time, for claimRescan.
func (c *claimCursors) done(use cursorUse, first *hoppertype.JobRow, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if use.gen != c.gen || c.subs == 0 {
		return
	}
	if c.byQueue == nil {
		c.byQueue = map[string]map[string]*claimCursor{}
	}
	kinds := c.byQueue[use.queue]
	if kinds == nil {
		kinds = map[string]*claimCursor{}
		c.byQueue[use.queue] = kinds
	}
	cur := kinds[use.kinds]
	if cur == nil {
		cur = &claimCursor{}
		kinds[use.kinds] = cur
	}
	if use.from == nil {
		cur.fullAt, cur.fullTook = use.at, now.Sub(use.at)
	}
	if first != nil {
		cur.priority, cur.id = first.Priority, first.ID
	}
}

// forget drops the cursor of queue and kinds (the claim found a cap or rate limit applying:
// the capped path claims without one).
func (c *claimCursors) forget(queue, kinds string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.byQueue[queue][kinds]; cur != nil && cur.id != "" {
		cur.id = ""
		c.gen++
	}
}

// heard handles a wake-up: jobs became claimable in queue ("": in any queue), the smallest of
// their ids first ("" when unknown). Cursors past one of them are forgotten.
func (c *claimCursors) heard(queue, first string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	forgot := false
	for q, kinds := range c.byQueue {
		if queue != "" && q != queue {
			continue
		}
		for _, cur := range kinds {
			if cur.id != "" && (queue == "" || first == "" || first < cur.id) {
				cur.id, forgot = "", true
			}
		}
	}
	if forgot {
		c.gen++
	}
}

// subscribed counts a subscription that starts listening (+1) or ends (-1). Either way every
// cursor is forgotten: wake-ups sent while no subscription listened are lost.
func (c *claimCursors) subscribed(delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs += delta
	c.byQueue = nil
	c.gen++
}
