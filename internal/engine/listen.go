package engine

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

// listen subscribes to the store's pushed events, when it has them: jobs made available
// anywhere in the cluster wake the local producer of their queue, and a cancel reaches the
// handler running the job here. A failed subscription is retried with backoff; polling covers
// the gap.
func (e *Engine) listen(ctx context.Context, n store.Notifier) {
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		start := e.clock.Now()
		err := n.Subscribe(ctx, e.onNotification)
		if ctx.Err() != nil {
			return
		}
		if e.clock.Now().Sub(start) > time.Minute {
			delay = 100 * time.Millisecond
		}
		e.log.Warn("notification subscription ended; resubscribing", "err", err, "in", delay)
		t := e.clock.NewTimer(delay)
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
		delay = min(2*delay, 30*time.Second)
	}
}

func (e *Engine) onNotification(n store.Notification) {
	switch n.Kind {
	case store.JobsAvailable:
		e.Notify(n.Queue)
	case store.JobCanceled:
		e.CancelRunning(n.JobID)
	case store.Subscribed:
		// Jobs committed while the subscription was being set up (at start, or after a lost
		// connection) sent notifications nobody heard: look for them now, not at the next poll.
		for q := range e.producers {
			e.Notify(q)
		}
		if hook := e.cfg.OnAvailable; hook != nil {
			hook("")
		}
	}
}
