package clock

import (
	"sort"
	"sync"
	"time"
)

// Fake is a manual clock for tests: time moves only when Advance is called, and timers
// due by then fire in order. It is safe for concurrent use.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

// NewFake returns a fake clock set to start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d and fires every timer due by then.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	due := f.popDue()
	f.mu.Unlock()
	for _, t := range due {
		t.fire()
	}
}

// Pending reports how many timers wait to fire.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// AfterFunc schedules f to run, in its own goroutine, once the fake time reaches now+d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	return f.add(d, &fakeTimer{fn: fn})
}

// NewTimer returns a timer whose channel receives once the fake time reaches now+d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	return f.add(d, &fakeTimer{ch: make(chan time.Time, 1)})
}

// NewTimerAt returns a timer whose channel receives once the fake time reaches at (clock.At).
func (f *Fake) NewTimerAt(at time.Time) Timer {
	return f.addAt(func(time.Time) time.Time { return at }, &fakeTimer{ch: make(chan time.Time, 1)})
}

// AfterFuncAt schedules f to run, in its own goroutine, once the fake time reaches at
// (clock.At).
func (f *Fake) AfterFuncAt(at time.Time, fn func()) Timer {
	return f.addAt(func(time.Time) time.Time { return at }, &fakeTimer{fn: fn})
}

func (f *Fake) add(d time.Duration, t *fakeTimer) Timer {
	return f.addAt(func(now time.Time) time.Time { return now.Add(d) }, t)
}

// addAt sets t for the time deadline gives from the fake time, read under the same lock as
// the timer is added: an Advance comes wholly before or after.
func (f *Fake) addAt(deadline func(now time.Time) time.Time, t *fakeTimer) Timer {
	f.mu.Lock()
	t.clock = f
	t.at = deadline(f.now)
	if !t.at.After(f.now) {
		f.mu.Unlock()
		t.fire()
		return t
	}
	f.timers = append(f.timers, t)
	f.mu.Unlock()
	return t
}

// popDue removes and returns the timers due at f.now, earliest first. f.mu must be held.
func (f *Fake) popDue() []*fakeTimer {
	sort.SliceStable(f.timers, func(i, j int) bool { return f.timers[i].at.Before(f.timers[j].at) })
	n := 0
	for n < len(f.timers) && !f.timers[n].at.After(f.now) {
		n++
	}
	due := append([]*fakeTimer(nil), f.timers[:n]...)
	f.timers = f.timers[n:]
	return due
}

func (f *Fake) remove(t *fakeTimer) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.timers {
		if x == t {
			f.timers = append(f.timers[:i], f.timers[i+1:]...)
			return true
		}
	}
	return false
}

type fakeTimer struct {
	clock *Fake
	at    time.Time
	fn    func()
	ch    chan time.Time
}

func (t *fakeTimer) fire() {
	if t.fn != nil {
		go t.fn()
		return
	}
	t.ch <- t.at
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }
func (t *fakeTimer) Stop() bool          { return t.clock.remove(t) }
