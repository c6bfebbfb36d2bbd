package hopperclient

import (
	"context"
	"fmt"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// Queues returns every queue that has jobs or settings, by name, with its job counts per
// state. It needs the read scope.
func (c *Client) Queues(ctx context.Context) ([]*hopper.QueueInfo, error) {
	res, err := c.queues.List(ctx, &hopperv1.QueueServiceListRequest{})
	if err != nil {
		return nil, callErr("list queues", err)
	}
	out := make([]*hopper.QueueInfo, len(res.GetQueues()))
	for i, q := range res.GetQueues() {
		out[i] = apispec.FromQueue(q)
	}
	return out, nil
}

// PauseQueue stops every process and remote worker from starting jobs of queue; running
// jobs finish. It needs the admin scope.
func (c *Client) PauseQueue(ctx context.Context, queue string) error {
	_, err := c.queues.Pause(ctx, &hopperv1.PauseRequest{Queue: queue})
	return callErr("pause queue "+queue, err)
}

// ResumeQueue lets a paused queue's jobs start again. It needs the admin scope.
func (c *Client) ResumeQueue(ctx context.Context, queue string) error {
	_, err := c.queues.Resume(ctx, &hopperv1.ResumeRequest{Queue: queue})
	return callErr("resume queue "+queue, err)
}

// QueueSettings are a queue's fleet-wide settings to change: those not nil. 0 removes a
// weight or a cap, the zero Rate a rate limit.
type QueueSettings struct {
	// Weight is the queue's fair-share weight, 1–1000.
	Weight *int
	// MaxRunning caps the queue's running jobs across the fleet.
	MaxRunning *int
	// Rate limits the queue's job starts across the fleet.
	Rate *hopper.Rate
	// CapPerKey caps the running jobs of each fairness key of the queue, and RatePerKey each
	// key's starts, across the fleet (docs/flow-control.md#limits-per-key).
	CapPerKey  *int
	RatePerKey *hopper.Rate
	// KeyWeights sets the weights of fairness keys in the queue (1–1000; 0 or 1 removes a
	// key's weight), as hopper.Client.SetKeyWeight does; keys left out keep theirs.
	KeyWeights map[string]int
}

// SetQueue changes the settings s gives of queue, all of them or, when one is refused (a
// *hopper.ValidationError naming it), none. Giving none is refused too. It needs the admin
// scope.
func (c *Client) SetQueue(ctx context.Context, queue string, s QueueSettings) error {
	_, err := c.queues.Set(ctx, &hopperv1.QueueServiceSetRequest{Queue: queue, Weight: apiview.OptionalInt(s.Weight),
		MaxRunning: apiview.OptionalInt(s.MaxRunning), Rate: apiview.OptionalRate(s.Rate),
		CapPerKey: apiview.OptionalInt(s.CapPerKey), RatePerKey: apiview.OptionalRate(s.RatePerKey), KeyWeights: apispec.KeyWeights(s.KeyWeights)})
	return callErr("set queue "+queue, err)
}

// SetKeyWeight stores the weight of fairness key key in queue (1–1000; 0 or 1 removes it), as
// hopper.Client.SetKeyWeight does. It needs the admin scope.
func (c *Client) SetKeyWeight(ctx context.Context, queue, key string, weight int) error {
	return c.SetQueue(ctx, queue, QueueSettings{KeyWeights: map[string]int{key: weight}})
}

// SetQueueWeight stores queue's fair-share weight for the whole fleet (1–1000; 0 removes
// it), as hopper.Client.SetQueueWeight does. It needs the admin scope.
func (c *Client) SetQueueWeight(ctx context.Context, queue string, weight int) error {
	return c.SetQueue(ctx, queue, QueueSettings{Weight: &weight})
}

// SetLimit sets or removes (MaxRunning 0) the fleet-wide cap of a queue or a kind, as
// hopper.Client.SetLimit does: set exactly one of l.Queue and l.Kind, else it is a
// *hopper.ValidationError naming limit. It needs the admin scope.
func (c *Client) SetLimit(ctx context.Context, l hopper.Limit) error {
	if (l.Queue == "") == (l.Kind == "") {
		return fmt.Errorf("set limit: %w", &hopper.ValidationError{Field: "limit", Reason: "set exactly one of queue and kind"})
	}
	switch {
	case l.Queue != "" && l.PerKey:
		return c.SetQueue(ctx, l.Queue, QueueSettings{CapPerKey: &l.MaxRunning})
	case l.Queue != "":
		return c.SetQueue(ctx, l.Queue, QueueSettings{MaxRunning: &l.MaxRunning})
	case l.PerKey:
		return c.SetKind(ctx, l.Kind, KindSettings{CapPerKey: &l.MaxRunning})
	}
	return c.SetKind(ctx, l.Kind, KindSettings{MaxRunning: &l.MaxRunning})
}

// SetRateLimit sets, changes or removes (the zero Rate) the fleet-wide rate limit of a queue
// or a kind, as hopper.Client.SetRateLimit does: set exactly one of l.Queue and l.Kind, else
// it is a *hopper.ValidationError naming rate_limit. It needs the admin scope.
func (c *Client) SetRateLimit(ctx context.Context, l hopper.RateLimit) error {
	if (l.Queue == "") == (l.Kind == "") {
		return fmt.Errorf("set rate limit: %w", &hopper.ValidationError{Field: "rate_limit", Reason: "set exactly one of queue and kind"})
	}
	switch {
	case l.Queue != "" && l.PerKey:
		return c.SetQueue(ctx, l.Queue, QueueSettings{RatePerKey: &l.Rate})
	case l.Queue != "":
		return c.SetQueue(ctx, l.Queue, QueueSettings{Rate: &l.Rate})
	case l.PerKey:
		return c.SetKind(ctx, l.Kind, KindSettings{RatePerKey: &l.Rate})
	}
	return c.SetKind(ctx, l.Kind, KindSettings{Rate: &l.Rate})
}

// Nodes returns the nodes registered in the server's store: the servers of its cluster and
// the processes that share its database. It needs the read scope.
func (c *Client) Nodes(ctx context.Context) ([]*hopper.Node, error) {
	res, err := c.admin.ListNodes(ctx, &hopperv1.ListNodesRequest{})
	if err != nil {
		return nil, callErr("list nodes", err)
	}
	out := make([]*hopper.Node, len(res.GetNodes()))
	for i, n := range res.GetNodes() {
		out[i] = apispec.FromNode(n)
	}
	return out, nil
}
