package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
)

// completer writes attempt outcomes in batches: while one transaction commits, the next
// outcomes gather, so under load each commit carries many jobs and when idle each outcome is
// written at once (group commit). Fencing is per item: a stale token fails only its own item.
// When the store fails, what failed stays pending and is retried after a backoff
// (WorkPolicy); outcomes added meanwhile wait for that retry instead of each trying at once.
type completer struct {
	e       *Engine
	maxSize int
	retry   *backoff.Tracker

	mu        sync.Mutex
	pending   []*store.FinishParams
	waiters   map[*store.FinishParams]chan error // callers of Finish waiting for their item
	holdUntil time.Time                          // after a failed flush: no flush before then
	kick      chan struct{}
	done      chan struct{}
	stopReq   chan context.Context
	stopErr   chan error
}

func newCompleter(e *Engine) *completer {
	return &completer{e: e, maxSize: 1000, kick: make(chan struct{}, 1), waiters: map[*store.FinishParams]chan error{},
		done: make(chan struct{}), stopReq: make(chan context.Context), stopErr: make(chan error),
		retry: e.newTracker("write job outcomes", backoff.WorkPolicy)}
}

func (c *completer) add(p *store.FinishParams) { c.addWaiting(p, nil) }

// addWaiting queues p; done, when not nil, receives the store's verdict on p once written.
// Free text of an outcome (a handler's error and stack, a release reason) is made storable
// here, the one place every outcome passes: nobody could be told it was refused.
func (c *completer) addWaiting(p *store.FinishParams, done chan error) {
	c.addAll([]*store.FinishParams{p}, []chan error{done})
}

// addAll queues ps together, so the flush they wake writes them all; dones[i], when not nil,
// receives the store's verdict on ps[i].
func (c *completer) addAll(ps []*store.FinishParams, dones []chan error) {
	for _, p := range ps {
		p.Error, p.Stack, p.Reason = field.Clean(p.Error), field.Clean(p.Stack), field.Clean(p.Reason)
	}
	c.mu.Lock()
	c.pending = append(c.pending, ps...)
	for i, done := range dones {
		if done != nil {
			c.waiters[ps[i]] = done
		}
	}
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *completer) start() { go c.run() }

// flushTimeout bounds one routine flush, so a database that stops answering cannot hold Stop.
const flushTimeout = 30 * time.Second

// flushers is how many batches may be written at once: while one waits for its commit to be
// durable, the next is on its way.
const flushers = 2

func (c *completer) run() {
	defer close(c.done)
	var wg sync.WaitGroup
	free := make(chan struct{}, flushers)
	for {
		select {
		case <-c.kick:
			if c.held() {
				continue // the store failed: the retry after the backoff kicks again
			}
			free <- struct{}{} // wait for a free flusher
			wg.Go(func() {
				defer func() { <-free }()
				ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
				defer cancel()
				c.flush(ctx, false)
			})
		case ctx := <-c.stopReq:
			wg.Wait()
			c.stopErr <- c.flush(ctx, true)
			return
		}
	}
}

// flush writes everything pending. It retries store errors with backoff until ctx ends when
// final, or once after the backoff otherwise (what failed stays pending).
func (c *completer) flush(ctx context.Context, final bool) error {
	for {
		batch := c.take()
		if len(batch) == 0 {
			return nil
		}
		errs, err := c.e.store.JobFinishMany(ctx, batch)
		if err != nil && len(batch) > 1 && ctx.Err() == nil && !errors.Is(err, store.ErrUnavailable) {
			var done []*store.FinishParams
			if done, errs, err = c.isolate(ctx, batch); err == nil {
				batch = done
			}
		}
		if err == nil {
			c.retry.Succeed()
			c.report(batch, errs)
			continue
		}
		c.putBack(batch)
		err = fmt.Errorf("write the outcomes of %d jobs: %w", len(batch), err)
		wait := c.retry.Fail(err)
		if !final {
			c.mu.Lock()
			c.holdUntil = c.e.clock.Now().Add(wait)
			c.mu.Unlock()
			go c.retryLater(wait)
			return err
		}
		// Stop's last flush waits in real time: it bounds a shutdown, not job semantics.
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}

// held reports whether a failed flush's backoff is still running.
func (c *completer) held() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.e.clock.Now().Before(c.holdUntil)
}

// isolate writes a failed batch one item at a time, so one item the database refuses (a value
// it cannot store) does not hold back every outcome behind it. When some items succeed, the
// ones that fail are refused for good (reported with their error; their jobs keep their
// leases until they expire). When none succeeds the database itself is failing: the error is
// returned and the batch is retried later. An item that fails with store.ErrUnavailable is
// not refused: it and the items after it (not tried: the database is going away) are put
// back for the next flush. It returns the items it has a verdict on, and their verdicts.
func (c *completer) isolate(ctx context.Context, batch []*store.FinishParams) ([]*store.FinishParams, []error, error) {
	var done, failed, later []*store.FinishParams
	var errs, failedErrs []error
	var lastErr error
	for _, p := range batch {
		if len(later) > 0 {
			later = append(later, p)
			continue
		}
		one, err := c.e.store.JobFinishMany(ctx, []*store.FinishParams{p})
		switch {
		case errors.Is(err, store.ErrUnavailable):
			later, lastErr = append(later, p), err
		case err != nil:
			failed, failedErrs, lastErr = append(failed, p), append(failedErrs, err), err
		default:
			done, errs = append(done, p), append(errs, one[0])
		}
	}
	if len(done) == 0 {
		return nil, nil, lastErr
	}
	for i, p := range failed {
		c.e.log.Error("job outcome refused by the database", append(outcomeAttrs(p), "err", failedErrs[i])...)
		done, errs = append(done, p), append(errs, fmt.Errorf("write outcome of job %s: %w", p.ID, failedErrs[i]))
	}
	c.putBack(later)
	return done, errs, nil
}

func (c *completer) retryLater(d time.Duration) {
	t := c.e.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		select {
		case c.kick <- struct{}{}:
		default:
		}
	case <-c.done:
	}
}

func (c *completer) take() []*store.FinishParams {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := min(len(c.pending), c.maxSize)
	batch := c.pending[:n:n]
	c.pending = c.pending[n:]
	return batch
}

func (c *completer) putBack(batch []*store.FinishParams) {
	c.mu.Lock()
	c.pending = append(batch, c.pending...)
	c.mu.Unlock()
}

// forget drops the waiter of p (its caller gave up waiting); p is still written.
func (c *completer) forget(p *store.FinishParams) {
	c.mu.Lock()
	delete(c.waiters, p)
	c.mu.Unlock()
}

func (c *completer) report(batch []*store.FinishParams, errs []error) {
	var woken []string // the queues woken for released children: once a batch, not once a parent
	for i, err := range errs {
		c.mu.Lock()
		done, waiting := c.waiters[batch[i]]
		delete(c.waiters, batch[i])
		c.mu.Unlock()
		if waiting {
			done <- err // buffered: never blocks
		}
		c.e.written(batch[i].ID)
		if hook := c.e.cfg.OnOutcome; hook != nil {
			hook(batch[i], err)
		}
		if err != nil {
			c.e.log.Warn("job outcome refused", append(outcomeAttrs(batch[i]), "err", err)...)
			continue
		}
		if batch[i].State == hoppertype.StateScheduled {
			c.e.maint.nudge(batch[i].RunAt) // a retry due soon is promoted on time
		}
		for _, q := range batch[i].Released {
			if !slices.Contains(woken, q) {
				woken = append(woken, q)
				c.e.Notify(q) // its children were released there
			}
		}
		if c.e.log.Enabled(context.Background(), slog.LevelDebug) {
			c.e.log.Debug("job finished", outcomeAttrs(batch[i])...)
		}
	}
}

// stop flushes what is pending and ends the loop.
func (c *completer) stop(ctx context.Context) error {
	select {
	case c.stopReq <- ctx:
		return <-c.stopErr
	case <-c.done:
		return nil
	}
}
