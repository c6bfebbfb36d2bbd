package engine

import (
	"context"
	"errors"

	"github.com/hopperjobs/hopper/internal/store"
)

// listen subscribes to the store's pushed events, when it has them: jobs made available
// anywhere in the cluster wake the local producer of their queue, and a cancel reaches the
// handler running the job here. A subscription that fails or ends is retried with backoff
// (polling covers the gap); one that got its LISTEN in place counts as a success, so the
// next loss starts again at the shortest delay.
func (e *Engine) listen(ctx context.Context, n store.Notifier) {
	for ctx.Err() == nil {
		err := n.Subscribe(ctx, e.onNotification)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("subscription ended")
		}
		e.sleep(ctx, e.listening.Fail(err))
	}
}

func (e *Engine) onNotification(n store.Notification) {
	switch n.Kind {
	case store.JobsAvailable:
		e.Notify(n.Queue)
	case store.JobCanceled:
		e.CancelRunning(n.JobID)
	case store.Subscribed:
		e.listening.Succeed()
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
