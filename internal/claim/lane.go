package claim

import (
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/fairshare"
)

// lane is the state of one lane (a queue). The Loop's goroutine owns it, but for done and
// woken, which other goroutines set (Lane).
type lane[J any] struct {
	name  string
	retry *backoff.Tracker
	// share is the lane's part of the units: Held = inUse; Wanting while it has jobs waiting
	// or may have work to claim.
	share    fairshare.Queue
	inUse    int // units of started jobs not yet Done
	reserved int // units the lane's claims out asked for (sizing the next claim; not held)
	inflight int // claims out
	waiting  queue[J]
	// more: work may be waiting (a wake-up, or the last claim came back full): claim when no
	// claim is out. full: the last claim came back full, so a second may go out beside one.
	// urgent: claim without waiting for a quarter of the units to be free.
	more, full, urgent bool
	gen                int // counts wake-ups, so a claim made before one cannot undo it
	aheadN             int // jobs the next claim asks for ahead
	holdUntil          time.Time
	lookAt             time.Time // wake the lane then though nothing else does (Result.RetryAt)
	coalesceAt         time.Time // claim then even with few units free

	done  atomic.Int64 // jobs Done since the Loop last looked
	woken atomic.Bool  // Wake since the Loop last looked
}

// max is the most units the lane may hold.
func (l *lane[J]) max() int { return l.share.Max }

// wake records that work may be waiting: claim at once.
func (l *lane[J]) wake() {
	l.more, l.urgent, l.gen = true, true, l.gen+1
}

// canClaim reports whether the lane may start a claim now, units permitting: it may have work
// (or, with long polls, has no claim out).
func (l *lane[J]) canClaim(now time.Time, maxInFlight int, longPoll bool) bool {
	want := l.more || longPoll
	if l.inflight > 0 {
		want = l.full && l.inflight < maxInFlight
	}
	return want && l.waiting.Len() == 0 && !now.Before(l.holdUntil)
}

// claimed is one claim out: what it was asked, and what the lane looked like then.
type claimed struct {
	lane  int
	req   Request
	gen   int
	ended int64
	at    time.Time // when the loop launched it
}

// earliest returns the earlier of a and b, ignoring zero times.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}
