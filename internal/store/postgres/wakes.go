package postgres

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
)

// DefaultWakeInterval is the pace of the wake-ups a store sends for its own inserts into one
// queue once their burst is spent: one per interval (Config.WakeInterval).
const DefaultWakeInterval = 2 * time.Millisecond

// wakeBurst is how many wake-ups a queue's inserts may send at once, or in quicker succession
// than the interval, before they are paced.
const wakeBurst = 10

// wakeStuckAfter is how long a notifying statement in flight holds its key's other wake-ups
// back: one that waits longer (for a lock, a connection, a big batch) no longer delays the
// jobs committed meanwhile.
const wakeStuckAfter = 50 * time.Millisecond

// wakeLimiter spaces the wake-ups a store sends for its own inserts (migration 0019). A
// transaction that notifies commits under a server-wide lock held until its commit is flushed,
// so inserts of one or a few jobs each, when every one notifies, commit one at a time: about a
// thousand a second on a machine whose disk flushes several thousand plain commits.
//
// Per wake-up key ("q:<queue>", or "s:" for scheduled jobs) a store has at most one notifying
// statement in flight (for wakeStuckAfter at most), and starts them at the pace of one per interval after a burst of
// wakeBurst (a GCRA: tat is when the key's pace is back to a full burst). An insert notifies
// in its own transaction, at once, unless the key's last notification is in flight or its
// burst is spent: then it leaves its wake-up out (the statement names it in
// hopper.held_wakes) and, once it has committed, records the smallest id (or earliest run_at)
// it would have sent. When the key is free again, the limiter sends one notification carrying
// the smallest of them, in a statement of its own. Every notification is so sent at or after
// the commit of the jobs it names, as the claim cursors need (cursor.go): a listener that
// hears it finds them. Below a few hundred inserts a second nearly every insert finds the key
// free and is heard at its commit as before; under a steady stream the limiter sends one
// notification per interval or per commit, whichever is longer, instead of one per insert.
// The process that inserted wakes its own workers itself, so holding delays only other
// processes' workers.
//
// Inserts in the application's transactions (Tx) are never held: the limiter cannot know when
// they commit.
type wakeLimiter struct {
	every time.Duration
	clock clock.Clock
	send  func(ctx context.Context, payloads []string) error

	mu      sync.Mutex
	keys    map[string]*wakeState
	pruneAt int         // len(keys) above which reserve next forgets quiet keys (at least pruneAbove)
	timer   clock.Timer // armed while a held key waits for its turn
	flushAt time.Time   // when timer fires
	closed  bool
	flushes sync.WaitGroup // timer callbacks scheduled or running
	turns   sync.WaitGroup // inserts between reserve and release
}

// wakeState is one wake-up key's.
type wakeState struct {
	tat      time.Time // each notification started moves it an interval on, from now at least
	inflight int       // notifying statements that have not returned
	since    time.Time // when the oldest of them started
	first    string    // the smallest id (queue) or run_at (scheduled) held back; "" for none
}

// busy reports whether a statement in flight holds w's wake-ups back at now, and until when.
func (w *wakeState) busy(now time.Time) (bool, time.Time) {
	until := w.since.Add(wakeStuckAfter)
	return w.inflight > 0 && now.Before(until), until
}

// freeAt is when the key's pace lets it start a notification.
func (l *wakeLimiter) freeAt(w *wakeState) time.Time {
	return w.tat.Add(-(wakeBurst - 1) * l.every)
}

// start records a notification of w starting at now.
func (l *wakeLimiter) start(w *wakeState, now time.Time) {
	if w.tat.Before(now) {
		w.tat = now
	}
	w.tat = w.tat.Add(l.every)
	if w.inflight == 0 {
		w.since = now
	}
	w.inflight++
}

// free reports whether w may start a notification at now: nothing in flight holds it back,
// its pace allows one, and (for an insert) no held wake-up waits for the turn before it.
func (l *wakeLimiter) free(w *wakeState, now time.Time) bool {
	busy, _ := w.busy(now)
	return !busy && !now.Before(l.freeAt(w))
}

// pruneAbove is the number of keys above which reserve forgets the quiet ones, so a store that
// inserts into many short-lived queues does not keep one entry per queue forever.
const pruneAbove = 256

func newWakeLimiter(every time.Duration, c clock.Clock, send func(context.Context, []string) error) *wakeLimiter {
	return &wakeLimiter{every: every, clock: c, send: send, keys: map[string]*wakeState{}}
}

// queueKey and scheduledKey name wake-ups, as hopper.held_wakes lists them.
func queueKey(queue string) string { return payloadQueue + queue }

const scheduledKey = payloadScheduled

// wakeKeyOf names the wake-up the insert trigger sends for a job of queue that became state:
// ok is false for a state that sends none.
func wakeKeyOf(queue string, state hoppertype.JobState) (key string, ok bool) {
	switch state {
	case hoppertype.StateQueued:
		return queueKey(queue), true
	case hoppertype.StateScheduled:
		return scheduledKey, true
	}
	return "", false
}

// wakeTurn is what reserve decided for one insert: the keys it notifies itself (in flight
// until release) and those it leaves out.
type wakeTurn struct {
	sending, held []string
	taken         bool // counted in turns: release must end it
}

// reserve decides, for an insert about to run, which of keys it notifies itself and which it
// leaves out; the insert must release the turn. A nil limiter (WakeInterval negative) holds
// nothing.
func (l *wakeLimiter) reserve(keys []string) wakeTurn {
	var turn wakeTurn
	if l == nil {
		return turn
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return turn
	}
	l.turns.Add(1)
	turn.taken = true
	if len(l.keys) > max(pruneAbove, l.pruneAt) {
		for k, w := range l.keys {
			if l.quiet(w, now) {
				delete(l.keys, k)
			}
		}
		l.pruneAt = 2 * len(l.keys) // many busy keys: not a scan per insert
	}
	for _, k := range keys {
		w := l.keys[k]
		if w == nil {
			w = &wakeState{}
			l.keys[k] = w
		}
		if w.first != "" || !l.free(w, now) { // a held wake-up goes first
			turn.held = append(turn.held, k)
			continue
		}
		l.start(w, now)
		turn.sending = append(turn.sending, k)
	}
	return turn
}

// quiet reports whether a key's state says no more than an absent one would.
func (l *wakeLimiter) quiet(w *wakeState, now time.Time) bool {
	return w.inflight == 0 && w.first == "" && !w.tat.After(now)
}

// release ends an insert's turn, whatever its outcome: the keys it notified are free again,
// and the wake-ups it held are recorded from jobs, the rows it inserted, to be sent when their
// keys are free. After an error that may have followed the commit, jobs are the rows it may
// have inserted: a wake-up for jobs that do not exist costs a claim that finds nothing.
func (l *wakeLimiter) release(turn wakeTurn, jobs []*hoppertype.JobRow) {
	if l == nil || !turn.taken {
		return
	}
	defer l.turns.Done()
	first := heldFirsts(turn.held, jobs)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.sendNow(first) // the limiter closed while the insert ran; close waits for this
		return
	}
	for _, k := range turn.sending {
		l.keys[k].inflight--
	}
	for k, v := range first {
		w := l.keys[k]
		if w == nil { // pruned while the insert ran
			w = &wakeState{}
			l.keys[k] = w
		}
		if w.first == "" || earlier(k, v, w.first) {
			w.first = v
		}
	}
	l.scheduleLocked()
	l.mu.Unlock()
}

// heldFirsts returns, per held key, the smallest id of the rows that became queued in its
// queue, or the earliest run_at (microseconds) of those that became scheduled.
func heldFirsts(held []string, jobs []*hoppertype.JobRow) map[string]string {
	if len(held) == 0 {
		return nil
	}
	isHeld := make(map[string]bool, len(held))
	for _, k := range held {
		isHeld[k] = true
	}
	first := map[string]string{}
	for _, j := range jobs {
		k, ok := wakeKeyOf(j.Queue, j.State)
		if !ok || !isHeld[k] {
			continue
		}
		v := j.ID
		if k == scheduledKey {
			v = strconv.FormatInt(j.RunAt.UnixMicro(), 10)
		}
		if old, ok := first[k]; !ok || earlier(k, v, old) {
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

// scheduleLocked arms the timer for the earliest time a held key is free, unless it is armed
// for that time or earlier already. A key in flight is rescheduled when its statement
// returns, and looked at again once it has been in flight for wakeStuckAfter.
func (l *wakeLimiter) scheduleLocked() {
	var due time.Time
	now := l.clock.Now()
	for _, w := range l.keys {
		if w.first == "" {
			continue
		}
		at := l.freeAt(w)
		if busy, until := w.busy(now); busy && until.After(at) {
			at = until
		}
		if due.IsZero() || at.Before(due) {
			due = at
		}
	}
	if due.IsZero() {
		return
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
	l.timer = clock.AfterFuncAt(l.clock, due, l.flush)
}

// flush sends, in one statement, the held wake-ups whose keys are free, and rearms for the
// rest.
func (l *wakeLimiter) flush() {
	defer l.flushes.Done()
	l.mu.Lock()
	l.timer = nil
	if l.closed {
		l.mu.Unlock()
		return
	}
	now := l.clock.Now()
	due := map[string]string{}
	for k, w := range l.keys {
		if w.first != "" && l.free(w, now) {
			due[k] = w.first
			w.first = ""
			l.start(w, now)
		}
	}
	l.scheduleLocked()
	l.mu.Unlock()
	if len(due) == 0 {
		return
	}
	l.sendNow(due)
	l.mu.Lock()
	for k := range due {
		l.keys[k].inflight-- // never pruned while in flight
	}
	if !l.closed {
		l.scheduleLocked()
	}
	l.mu.Unlock()
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

// close sends what is held and stops the limiter: inserts after it are not held, and it
// returns once the inserts under way have released their turns and no flush runs, so that the
// store's pool is still open for every send.
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
	l.mu.Unlock()
	l.turns.Wait() // each sends what it held itself, now that the limiter is closed
	l.mu.Lock()
	held := map[string]string{}
	for k, w := range l.keys {
		if w.first != "" {
			held[k] = w.first
		}
	}
	l.mu.Unlock()
	l.sendNow(held)
	l.flushes.Wait()
}

// sendWakes sends wake-ups the limiter held, in a statement of its own.
func (s *Store) sendWakes(ctx context.Context, payloads []string) error {
	_, err := s.pool.Exec(ctx, `SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) AS p`, s.channel, payloads)
	return err
}
