package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// completer writes attempt outcomes in batches: while one transaction commits, the next
// outcomes gather, so under load each commit carries many jobs and when idle each outcome is
// written at once (group commit). Fencing is per item: a stale token fails only its own item.
type completer struct {
	e       *Engine
	maxSize int

	mu       sync.Mutex
	pending  []*store.FinishParams
	waiters  map[*store.FinishParams]chan error // callers of Finish waiting for their item
	failures atomic.Int64                       // consecutive failed flushes, for the retry backoff
	kick     chan struct{}
	done     chan struct{}
	stopReq  chan context.Context
	stopErr  chan error
}

func newCompleter(e *Engine) *completer {
	return &completer{e: e, maxSize: 1000, kick: make(chan struct{}, 1), waiters: map[*store.FinishParams]chan error{},
		done: make(chan struct{}), stopReq: make(chan context.Context), stopErr: make(chan error)}
}

func (c *completer) add(p *store.FinishParams) { c.addWaiting(p, nil) }

// addWaiting queues p; done, when not nil, receives the store's verdict on p once written.
// Free text of an outcome (a handler's error and stack, a release reason) is made storable
// here, the one place every outcome passes: nobody could be told it was refused.
func (c *completer) addWaiting(p *store.FinishParams, done chan error) {
	p.Error, p.Stack, p.Reason = store.CleanText(p.Error), store.CleanText(p.Stack), store.CleanText(p.Reason)
	c.mu.Lock()
	c.pending = append(c.pending, p)
	if done != nil {
		c.waiters[p] = done
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
			free <- struct{}{} // wait for a free flusher
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-free }()
				ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
				defer cancel()
				c.flush(ctx, false)
			}()
		case ctx := <-c.stopReq:
			wg.Wait()
			c.stopErr <- c.flush(ctx, true)
			return
		}
	}
}

// flush writes everything pending. It retries store errors with backoff until ctx ends when
// final, or once per kick otherwise (what failed stays pending for the next kick).
func (c *completer) flush(ctx context.Context, final bool) error {
	delay := 10 * time.Millisecond
	for {
		batch := c.take()
		if len(batch) == 0 {
			return nil
		}
		errs, err := c.e.store.JobFinishMany(ctx, batch)
		if err != nil && len(batch) > 1 && ctx.Err() == nil {
			errs, err = c.isolate(ctx, batch)
		}
		if err == nil {
			c.failures.Store(0)
			c.report(batch, errs)
			continue
		}
		c.putBack(batch)
		c.e.log.Error("write job outcomes", "jobs", len(batch), "err", err)
		if !final {
			n := c.failures.Add(1)
			go c.retryLater(min(10*time.Millisecond<<min(n, 7), time.Second))
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(delay):
			delay = min(2*delay, time.Second)
		}
	}
}

// isolate writes a failed batch one item at a time, so one item the database refuses (a value
// it cannot store) does not hold back every outcome behind it. When some items succeed, the
// ones that fail are refused for good (reported with their error; their jobs keep their
// leases until they expire). When none succeeds the database itself is failing: the error is
// returned and the batch is retried later.
func (c *completer) isolate(ctx context.Context, batch []*store.FinishParams) ([]error, error) {
	errs := make([]error, len(batch))
	failed := map[int]error{}
	var lastErr error
	for i, p := range batch {
		one, err := c.e.store.JobFinishMany(ctx, []*store.FinishParams{p})
		if err != nil {
			failed[i], lastErr = err, err
			continue
		}
		errs[i] = one[0]
	}
	if len(failed) == len(batch) {
		return nil, lastErr
	}
	for i, err := range failed {
		c.e.log.Error("job outcome refused by the database", "job_id", batch[i].ID, "state", batch[i].State, "err", err)
		errs[i] = fmt.Errorf("write outcome of job %s: %w", batch[i].ID, err)
	}
	return errs, nil
}

func (c *completer) retryLater(d time.Duration) {
	select {
	case <-time.After(d):
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
			c.e.log.Warn("job outcome refused", "job_id", batch[i].ID, "state", batch[i].State, "err", err)
			continue
		}
		if batch[i].State == hoppertype.StateScheduled {
			c.e.maint.nudge(batch[i].RunAt) // a retry due soon is promoted on time
		}
		c.e.log.Debug("job finished", "job_id", batch[i].ID, "state", batch[i].State, "outcome", batch[i].Outcome)
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
