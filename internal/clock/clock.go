// Package clock gives Hopper an injectable notion of time, so leases, backoff, timeouts and
// cron are tested by moving a fake clock instead of sleeping.
package clock

import (
	"context"
	"time"
)

// Clock tells the time and runs functions after a delay.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d, unless the returned Timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTimer returns a timer whose channel receives once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is a pending call or channel send.
type Timer interface {
	// C is the channel of a NewTimer timer; nil for AfterFunc timers.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it stopped a pending timer.
	Stop() bool
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (Real) AfterFunc(d time.Duration, f func()) Timer { return realTimer{t: time.AfterFunc(d, f)} }

// NewTimer wraps time.NewTimer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{t: time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }

// At is a clock that sets timers for a time rather than after a delay, at once: the clock
// cannot move between the reading a delay would be computed from and the timer's start. The
// fake clock is one: a test that advances it while a loop sets its timer would otherwise have
// the timer set a step late (a lease renewal due by then coming after the lease it was for).
type At interface {
	NewTimerAt(at time.Time) Timer
	AfterFuncAt(at time.Time, f func()) Timer
}

// NewTimerAt returns a timer of c whose channel receives once c reaches at (at once if it has).
func NewTimerAt(c Clock, at time.Time) Timer {
	if a, ok := c.(At); ok {
		return a.NewTimerAt(at)
	}
	return c.NewTimer(at.Sub(c.Now()))
}

// AfterFuncAt calls f in its own goroutine once c reaches at, unless the returned Timer is
// stopped first.
func AfterFuncAt(c Clock, at time.Time, f func()) Timer {
	if a, ok := c.(At); ok {
		return a.AfterFuncAt(at, f)
	}
	return c.AfterFunc(at.Sub(c.Now()), f)
}

// OrReal returns c, or the real clock when c is nil.
func OrReal(c Clock) Clock {
	if c == nil {
		return Real{}
	}
	return c
}

// Sleep waits d on c, or until ctx ends; it reports whether the whole wait passed.
func Sleep(ctx context.Context, c Clock, d time.Duration) bool {
	t := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}
