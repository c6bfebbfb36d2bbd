package postgres

import (
	"fmt"
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
	subs int // subscriptions listening
	// byQueue holds the cursors of a queue by kinds filter.
	byQueue map[string]map[string]*claimCursor
	// running holds the claims between start and done, so that what is heard meanwhile reaches
	// them: a job that became claimable after a claim's snapshot was not seen by it.
	running map[*cursorUse]struct{}
	// wall reads the clock job ids are drawn on (uuid.NewV7 reads the system's): nil is
	// time.Now. Not the store's clock, which tests move at will.
	wall func() time.Time
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

// cursorUse is a claim between start and done: what it starts from, and what was heard while
// it ran.
type cursorUse struct {
	queue, kinds string
	at           time.Time    // when the claim began
	wallAt       time.Time    // the same on the clock ids are drawn on
	from         *claimCursor // nil: scan from the start
	// stale: cursors were forgotten while it ran (a subscription began or ended, a wake-up
	// without an id, a cap), so what it saw may predate what was heard: it records nothing.
	stale bool
	// heardLow is the smallest id of the jobs announced in its queue while it ran, "" for none.
	heardLow string
}

// start returns where a claim of queue with the kinds filter kinds may start at now. The
// caller hands it back to done once the claim has ended, whatever its outcome.
func (c *claimCursors) start(queue, kinds string, now time.Time) *cursorUse {
	c.mu.Lock()
	defer c.mu.Unlock()
	use := &cursorUse{queue: queue, kinds: kinds, at: now, wallAt: time.Now()}
	if c.wall != nil {
		use.wallAt = c.wall()
	}
	cur := c.byQueue[queue][kinds]
	if c.subs > 0 && cur != nil && cur.id != "" && now.Sub(cur.fullAt) < max(claimRescan, rescanFactor*cur.fullTook) {
		from := *cur
		use.from = &from
	}
	if c.running == nil {
		c.running = map[*cursorUse]struct{}{}
	}
	c.running[use] = struct{}{}
	return use
}

// done records what a claim that started with use found, when ok (the claim succeeded and
// no cap applied): first is the first job in claim order of those it claimed, nil for none.
// The cursor moves to first. A scan from the start that found nothing moves it just below the
// jobs enqueued from now on (uuidV7Floor); one from the cursor that found nothing leaves it.
// A claim that ran while cursors were forgotten records nothing, and one that heard of a job
// before the new position while it ran leaves the cursor where it is: its snapshot may not
// have held that job. A claim that scanned from the start records the time, for claimRescan.
func (c *claimCursors) done(use *cursorUse, ok bool, first *hoppertype.JobRow, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.running, use)
	if !ok || use.stale || c.subs == 0 {
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
	priority, id := cur.priority, ""
	switch {
	case first != nil:
		priority, id = first.Priority, first.ID
	case use.from == nil:
		// A scan from the start found no claimable job in the whole queue, so every position
		// is a cursor. The one that leaves out the most is just below the jobs enqueued from
		// now on: ids are UUIDv7, which begin with their creation time. A job whose id sorts
		// below it (a client whose clock is behind by more than idClockSlack) is announced
		// with its id, and hearing it forgets the cursor. The priority is the last job found's
		// (0, the default, for a queue never claimed from here). Without this, the claims of
		// an idle queue, or the first after a store starts listening, would each walk the
		// dead entries a long transaction keeps, until one found a job.
		id = uuidV7Floor(use.wallAt.Add(-idClockSlack))
		if cur.id != "" && cur.id > id {
			return // the cursor it has leaves out more
		}
	}
	if id == "" || (use.heardLow != "" && use.heardLow < id) {
		return
	}
	cur.priority, cur.id = priority, id
}

// forget drops the cursor of queue and kinds (the claim found a cap or rate limit applying:
// the capped path claims without one).
func (c *claimCursors) forget(queue, kinds string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.byQueue[queue][kinds]; cur != nil {
		cur.id = ""
	}
	for use := range c.running {
		if use.queue == queue && use.kinds == kinds {
			use.stale = true
		}
	}
}

// heard handles a wake-up: jobs became claimable in queue ("": in any queue), the smallest of
// their ids first ("" when unknown). Cursors past one of them are forgotten, and the claims
// running learn of them.
func (c *claimCursors) heard(queue, first string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, kinds := range c.byQueue {
		if queue != "" && q != queue {
			continue
		}
		for _, cur := range kinds {
			if cur.id != "" && (queue == "" || first == "" || first < cur.id) {
				cur.id = ""
			}
		}
	}
	for use := range c.running {
		switch {
		case queue != "" && use.queue != queue:
		case queue == "" || first == "":
			use.stale = true
		case use.heardLow == "" || first < use.heardLow:
			use.heardLow = first
		}
	}
}

// subscribed counts a subscription that starts listening (+1) or ends (-1). Either way every
// cursor is forgotten: wake-ups sent while no subscription listened are lost.
func (c *claimCursors) subscribed(delta int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.subs += delta
	c.byQueue = nil
	for use := range c.running {
		use.stale = true
	}
}

// idClockSlack is how far behind this process's clock the clocks of the clients that
// enqueue may be for a cursor set by a scan that found nothing to stay in place.
const idClockSlack = time.Second

// uuidV7Floor is the smallest UUIDv7, in its text form, of a job created at t or later: its
// first 48 bits are the Unix time in milliseconds.
func uuidV7Floor(t time.Time) string {
	ms := uint64(max(t.UnixMilli(), 0))
	return fmt.Sprintf("%08x-%04x", ms>>16&0xffffffff, ms&0xffff)
}
