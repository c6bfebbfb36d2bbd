package engine

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// listenWorks is how long a subscription must last before it counts as working: one that is
// accepted and then dropped at once (a proxy or pooler that takes the connection, a database
// that resets it) is still failing, so its retries keep backing off and log nothing new.
const listenWorks = time.Minute

// listen subscribes to the store's pushed events, when it has them: jobs made available
// anywhere in the cluster wake the local producer of their queue, and a cancel reaches the
// handler running the job here. A subscription that fails or ends is retried with backoff
// (polling covers the gap). One that has been listening for listenWorks counts as a success
// (its recovery is logged then), so the next loss starts again at the shortest delay.
func (e *Engine) listen(ctx context.Context, n store.Notifier) {
	for ctx.Err() == nil {
		var works subscriptionTimer
		err := n.Subscribe(ctx, func(note store.Notification) {
			if note.Kind == store.Subscribed {
				works.start(e.clock, e.listening.Succeed)
				e.pushed.Store(true)
			}
			e.onNotification(note)
		})
		works.stop()
		e.pushed.Store(false)
		if ctx.Err() != nil {
			return
		}
		// The producers and the leader's loops may sleep for pollWait, counting on
		// notifications: they look now and plan their waits again without them.
		e.Notify("")
		e.maint.nudge(e.clock.Now())
		e.sched.nudge()
		if err == nil {
			err = errors.New("subscription ended")
		}
		clock.Sleep(ctx, e.clock, e.listening.Fail(err))
	}
}

// subscriptionTimer calls its function once a subscription has lasted listenWorks, unless it
// is stopped first.
type subscriptionTimer struct {
	mu sync.Mutex
	t  clock.Timer
}

func (s *subscriptionTimer) start(c clock.Clock, f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t != nil {
		s.t.Stop()
	}
	s.t = c.AfterFunc(listenWorks, f)
}

func (s *subscriptionTimer) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t != nil {
		s.t.Stop()
	}
}

func (e *Engine) onNotification(n store.Notification) {
	switch n.Kind {
	case store.JobsAvailable:
		e.Notify(n.Queue)
	case store.JobCanceled:
		e.CancelRunning(n.JobID)
	case store.JobsScheduled:
		e.NotifyScheduled(n.At)
	case store.SchedulesChanged:
		e.NotifySchedules()
	case store.Subscribed:
		// Jobs committed while the subscription was being set up (at start, or after a lost
		// connection) sent notifications nobody heard: look for them now, not at the next poll.
		for q := range e.cfg.Queues {
			e.Notify(q)
		}
		e.maint.nudge(e.clock.Now())
		e.sched.nudge()
		if hook := e.cfg.OnAvailable; hook != nil {
			hook("")
		}
	}
}

// pushedPoll is the longest the leader's loops wait between looks at the store while its
// notifications arrive: they nudge the loops for every job scheduled and every schedule
// changed anywhere, so a look only bounds what a lost notification could delay.
const pushedPoll = time.Minute

// pollWait is how long a loop that polls every d waits between looks: d, or pushedPoll while
// the store's notifications arrive (an idle node then costs the database little).
func (e *Engine) pollWait(d time.Duration) time.Duration {
	if e.pushed.Load() {
		return max(d, pushedPoll)
	}
	return d
}
