package hopper

import (
	"context"

	"github.com/hopperjobs/hopper/internal/store"
)

// PauseQueue stops every process from starting jobs of queue; running jobs finish.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	if err := checkQueueName(queue); err != nil {
		return err
	}
	return c.store.QueueSetPaused(ctx, queue, true)
}

// ResumeQueue lets jobs of a paused queue start again.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	if err := checkQueueName(queue); err != nil {
		return err
	}
	if err := c.store.QueueSetPaused(ctx, queue, false); err != nil {
		return err
	}
	c.engine.Notify(queue)
	return nil
}

// Limit is a fleet-wide cap: at most MaxRunning jobs of Queue, or of Kind, run at once across
// every process sharing the store. Set exactly one of Queue and Kind; MaxRunning 0 removes
// the cap. A worker that cannot get a slot leaves the job for later.
type Limit struct {
	Queue      string
	Kind       string
	MaxRunning int
}

// SetLimit sets or removes a fleet-wide cap (contract 8).
func (c *Client) SetLimit(ctx context.Context, l Limit) error {
	p := &store.LimitParams{MaxRunning: l.MaxRunning}
	switch {
	case l.MaxRunning < 0:
		return invalid("max_running", "%d is negative", l.MaxRunning)
	case (l.Queue == "") == (l.Kind == ""):
		return invalid("limit", "set exactly one of queue and kind")
	case l.Queue != "":
		if err := checkQueueName(l.Queue); err != nil {
			return err
		}
		p.Scope, p.Name = store.LimitQueue, l.Queue
	default:
		if err := checkKind(l.Kind); err != nil {
			return err
		}
		p.Scope, p.Name = store.LimitKind, l.Kind
	}
	return c.store.LimitSet(ctx, p)
}

// Limits returns every fleet-wide cap.
func (c *Client) Limits(ctx context.Context) ([]Limit, error) {
	ls, err := c.store.LimitList(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Limit, len(ls))
	for i, l := range ls {
		out[i].MaxRunning = l.MaxRunning
		if l.Scope == store.LimitQueue {
			out[i].Queue = l.Name
		} else {
			out[i].Kind = l.Name
		}
	}
	return out, nil
}
