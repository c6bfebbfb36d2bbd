package postgres

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
)

// DefaultWakeInterval is how long a store waits, after it sent a wake-up for its own inserts
// into a queue, before it sends the next one for that queue (Config.WakeInterval).
const DefaultWakeInterval = 5 * time.Millisecond

// wakeLimiter spaces the wake-ups a store sends for its own inserts (migration 0019). A
// transaction that notifies commits under a server-wide lock held until its commit is flushed,
// so inserts of one or a few jobs each, when every one notifies, commit one at a time: about a
// thousand a second on a machine whose disk flushes several thousand plain commits.
//
// Per wake-up key ("q:<queue>", or "s:" for scheduled jobs): the first insert after a quiet
// interval notifies in its own transaction, at once. An insert within the interval after that
// leaves its wake-up out (the statement names it in hopper.held_wakes) and, once it has
// committed, records the smallest id (or earliest run_at) it would have sent; when the interval
// is over the limiter sends one notification per key carrying the smallest of them, in a
// statement of its own. Every notification is so sent at or after the commit of the jobs it
// names, as the claim cursors need (cursor.go): a listener that hears it finds them. Under a
// steady stream a key sends one notification per interval; the process that inserted wakes its
// own workers itself, so the interval delays only other processes' workers.
//
// Inserts in the application's transactions (Tx) are never held: the limiter cannot know when
// they commit.
type wakeLimiter struct {
	every time.Duration
	clock clock.Clock
	send  func(ctx context.Context, payloads []string) error

	mu      sync.Mutex
	last    map[string]time.Time // key → when its last wake-up was sent, or reserved by an insert
	pending map[string]string    // key → the smallest id (queue) or run_at (scheduled) held back
	timer   clock.Timer          // set while pending is not empty
	flushAt time.Time            // when timer fires
	closed  bool
	flushes sync.WaitGroup // timer callbacks scheduled or running
}

// pruneAbove is the number of keys above which hold forgets the quiet ones, so a store that
// inserts into many short-lived queues does not keep one entry per queue forever.
const pruneAbove = 256

func newWakeLimiter(every time.Duration, c clock.Clock, send func(context.Context, []string) error) *wakeLimiter {
	return &wakeLimiter{every: every, clock: c, send: send, last: map[string]time.Time{}, pending: map[string]string{}}
}

// queueKey and scheduledKey name wake-ups, as hopper.held_wakes lists them.
func queueKey(queue string) string { return payloadQueue + queue }

const scheduledKey = payloadScheduled

// hold decides, for an insert about to run, which of keys it must leave out: those sent or
// reserved within the interval. The others are reserved for the insert, which notifies them
// itself. A nil limiter (WakeInterval negative) holds nothing.
func (l *wakeLimiter) hold(keys []string) []string {
	if l == nil {
		return nil
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if len(l.last) > pruneAbove {
		for k, at := range l.last {
			if _, held := l.pending[k]; !held && now.Sub(at) >= l.every {
				delete(l.last, k)
			}
		}
	}
	var held []string
	for _, k := range keys {
		if at, ok := l.last[k]; ok && now.Sub(at) < l.every {
			held = append(held, k)
			continue
		}
		l.last[k] = now
	}
	return held
}

// committed records what a committed insert held back, from the rows it returned, and makes
// sure a flush is due when the earliest held key's interval is over.
func (l *wakeLimiter) committed(held []string, jobs []*hoppertype.JobRow) {
	if l == nil || len(held) == 0 {
		return
	}
	first := heldFirsts(held, jobs)
	if len(first) == 0 {
		return // nothing held became queued or scheduled (existing jobs, merges)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.sendNow(first) // the limiter closed while the insert ran
		return
	}
	for k, v := range first {
		if old, ok := l.pending[k]; !ok || earlier(k, v, old) {
			l.pending[k] = v
		}
	}
	l.scheduleLocked()
	l.mu.Unlock()
}

// heldFirsts returns, per held key, the smallest id of the rows that became queued in its
// queue, or the earliest run_at (microseconds) of those that became scheduled.
func heldFirsts(held []string, jobs []*hoppertype.JobRow) map[string]string {
	isHeld := make(map[string]bool, len(held))
	for _, k := range held {
		isHeld[k] = true
	}
	first := map[string]string{}
	for _, j := range jobs {
		var k, v string
		switch j.State {
		case hoppertype.StateQueued:
			k, v = queueKey(j.Queue), j.ID
		case hoppertype.StateScheduled:
			k, v = scheduledKey, strconv.FormatInt(j.RunAt.UnixMicro(), 10)
		default:
			continue
		}
		if old, ok := first[k]; isHeld[k] && (!ok || earlier(k, v, old)) {
			first[k] = v
		}
	}
	return first
}

// earlier reports whether v comes before old for key k: ids compare as bytes (the triggers'
// COLLATE "C"), run_ats as numbers.
func earlier(k, v, old string) bool {
	if k != scheduledKey {
		return v < old
	}
	a, _ := strconv.ParseInt(v, 10, 64)
	b, _ := strconv.ParseInt(old, 10, 64)
	return a < b
}

// scheduleLocked arms the timer for the earliest pending key whose interval ends, unless it
// is armed for that time already.
func (l *wakeLimiter) scheduleLocked() {
	var due time.Time
	for k := range l.pending {
		if at := l.last[k].Add(l.every); due.IsZero() || at.Before(due) {
			due = at
		}
	}
	if l.timer != nil {
		if !l.flushAt.After(due) {
			return
		}
		if !l.timer.Stop() {
			return // firing now; the flush reschedules what it leaves
		}
		l.flushes.Done()
	}
	l.flushAt = due
	l.flushes.Add(1)
	l.timer = l.clock.AfterFunc(due.Sub(l.clock.Now()), l.flush)
}

// flush sends the pending wake-ups whose interval is over, each reserving a new interval, and
// rearms for the rest.
func (l *wakeLimiter) flush() {
	defer l.flushes.Done()
	now := l.clock.Now()
	l.mu.Lock()
	l.timer = nil
	if l.closed {
		l.mu.Unlock()
		return
	}
	due := map[string]string{}
	for k, v := range l.pending {
		if now.Sub(l.last[k]) >= l.every {
			due[k] = v
			delete(l.pending, k)
			l.last[k] = now
		}
	}
	if len(l.pending) > 0 {
		l.scheduleLocked()
	}
	l.mu.Unlock()
	l.sendNow(due)
}

// sendNow sends the wake-ups, worded as the triggers word them, in one statement. When it
// fails (the database is unreachable) they are dropped: the jobs are stored, and workers that
// poll find them.
func (l *wakeLimiter) sendNow(first map[string]string) {
	if len(first) == 0 {
		return
	}
	payloads := make([]string, 0, len(first))
	for k, v := range first {
		if k == scheduledKey {
			payloads = append(payloads, k+v)
		} else {
			payloads = append(payloads, k+" "+v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.send(ctx, payloads) //nolint:errcheck // see above
}

// close sends what is pending and stops the limiter: inserts after it are not held, and it
// returns once no flush runs.
func (l *wakeLimiter) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	if l.timer != nil && l.timer.Stop() {
		l.flushes.Done()
	}
	l.timer = nil
	pending := l.pending
	l.pending = map[string]string{}
	l.mu.Unlock()
	l.sendNow(pending)
	l.flushes.Wait()
}

// sendWakes sends wake-ups the limiter held, in a statement of its own.
func (s *Store) sendWakes(ctx context.Context, payloads []string) error {
	_, err := s.pool.Exec(ctx, `SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) AS p`, s.channel, payloads)
	return err
}
