package hopper

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
)

// QueueInfo is a queue's settings and how many of its jobs are in each state.
type QueueInfo struct {
	Name       string
	Paused     bool
	Weight     int  // fleet-wide fair-share weight, 0 for none stored (each process's own, default 1)
	MaxRunning int  // fleet-wide cap, 0 for none
	Rate       Rate // fleet-wide rate limit, zero for none
	// CapPerKey and RatePerKey are the limits per fairness key (SetLimit and SetRateLimit with
	// PerKey), 0 and zero for none.
	CapPerKey  int
	RatePerKey Rate
	Counts     map[JobState]int64
	// Computing is how many of the queue's jobs run now (Counts[StateRunning]).
	Computing int64
	// AwaitingCompute is how many of the queue's jobs are ready and wait for a worker to start
	// them: its queued jobs (Counts[StateQueued]; scheduled jobs are not due yet, suspended
	// ones wait for a resume). The queue's pending work, its queued and running jobs, is
	// Computing + AwaitingCompute. See docs/flow-control.md#awaiting-compute.
	AwaitingCompute int64
	// HeldByGovernor: every live worker of the queue is held by its resource governor
	// (contract 15; processes, and remote workers through the server they use), so its
	// awaiting compute waits for a governor to let go. False for a paused queue (its jobs
	// wait for its resume) and for a queue without live workers.
	HeldByGovernor bool
	// Disabled counts the queued jobs whose kind is disabled (DisableKind): no process starts
	// them until their kind is enabled. They are counted in Counts[StateQueued] too.
	Disabled int64
	// KeyWeights are the weights of the queue's fairness keys that have one stored
	// (SetKeyWeight; every other key has weight 1), nil for none.
	KeyWeights map[string]int
}

// StateCounts returns how many jobs of queue and kind ("" for every queue or every kind) are
// in each state; states without jobs are left out. A queue or kind that is not text is a
// *ValidationError naming the field. Counting scans the jobs table, as Queues does.
func (c *Client) StateCounts(ctx context.Context, queue, kind string) (map[JobState]int64, error) {
	if err := checkLimited("queue", queue, maxNameLen); err != nil {
		return nil, err
	}
	if err := checkLimited("kind", kind, maxNameLen); err != nil {
		return nil, err
	}
	counts, err := c.store.JobCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	out := map[JobState]int64{}
	for _, n := range counts {
		if (queue == "" || n.Queue == queue) && (kind == "" || n.Kind == kind) {
			out[n.State] += n.Count
		}
	}
	return out, nil
}

// Queues returns every queue that has jobs or settings, by name. Counting scans the jobs
// table, so on a store holding millions of jobs it takes a moment.
func (c *Client) Queues(ctx context.Context) ([]*QueueInfo, error) {
	byName := map[string]*QueueInfo{}
	get := func(name string) *QueueInfo {
		q := byName[name]
		if q == nil {
			q = &QueueInfo{Name: name, Counts: map[JobState]int64{}}
			byName[name] = q
		}
		return q
	}
	disabled, err := c.disabledKinds(ctx)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	counts, err := c.store.JobCounts(ctx)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	for _, n := range counts {
		q := get(n.Queue)
		q.Counts[n.State] += n.Count
		if n.State == StateQueued && disabled[n.Kind] {
			q.Disabled += n.Count
		}
	}
	settings, err := c.store.QueueList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	for _, s := range settings {
		q := get(s.Name)
		q.Paused, q.Weight, q.Rate = s.Paused, s.Weight, s.Rate
		q.CapPerKey, q.RatePerKey = s.CapPerKey, s.RatePerKey
	}
	weights, err := c.store.QueueKeyWeights(ctx)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	for _, w := range weights {
		q := get(w.Queue)
		if q.KeyWeights == nil {
			q.KeyWeights = map[string]int{}
		}
		q.KeyWeights[w.Key] = w.Weight
	}
	for _, q := range byName {
		q.Computing, q.AwaitingCompute = q.Counts[StateRunning], q.Counts[StateQueued]
	}
	if err := c.heldByGovernor(ctx, byName); err != nil {
		return nil, err
	}
	limits, err := c.store.LimitList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	for _, l := range limits {
		if l.Scope == store.LimitQueue {
			get(l.Name).MaxRunning = l.MaxRunning
		}
	}
	out := make([]*QueueInfo, 0, len(byName))
	for _, q := range byName {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// heldByGovernor fills in HeldByGovernor: the queues that every live node working them holds
// back (read after the settings).
func (c *Client) heldByGovernor(ctx context.Context, byName map[string]*QueueInfo) error {
	held, err := c.store.NodeHeldQueues(ctx, c.engine.NodeTTL())
	if err != nil {
		return fmt.Errorf("list queues: %w", err)
	}
	for _, name := range held {
		if q := byName[name]; q != nil && !q.Paused {
			q.HeldByGovernor = true
		}
	}
	return nil
}

// disabledKinds returns the set of disabled kinds.
func (c *Client) disabledKinds(ctx context.Context) (map[string]bool, error) {
	kinds, err := c.store.KindList(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, k := range kinds {
		if k.Disabled {
			out[k.Name] = true
		}
	}
	return out, nil
}

// Node is a Hopper process registered in the store.
type Node = hoppertype.Node

// Nodes returns the registered processes, oldest first.
func (c *Client) Nodes(ctx context.Context) ([]*Node, error) {
	ns, err := c.store.NodeList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	return ns, nil
}

// NodeID is the id this process registers as a node (its WorkerID).
func (c *Client) NodeID() string { return c.cfg.WorkerID }

// PauseQueue stops every process from claiming jobs of queue; running jobs finish, and so may
// jobs a process claimed ahead before the pause (docs/workers.md, "Claiming ahead").
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

// MaxQueueWeight bounds a queue's weight.
const MaxQueueWeight = 1000

// SetQueueWeight stores queue's fair-share weight for every process that works it (1 to
// MaxQueueWeight); 0 removes it, and each process goes back to its QueueConfig.Weight. This
// process applies it at once, the others within a third of Config.NodeTTL.
func (c *Client) SetQueueWeight(ctx context.Context, queue string, weight int) error {
	if err := checkQueueName(queue); err != nil {
		return err
	}
	if weight < 0 || weight > MaxQueueWeight {
		return invalid("weight", "%d is outside 1–%d (0 removes it)", weight, MaxQueueWeight)
	}
	if err := c.store.QueueSetWeight(ctx, queue, weight); err != nil {
		return err
	}
	// Stored: if reading them back fails now, the next node heartbeat reads them again (and
	// its tracker logs a failure that lasts).
	_ = c.engine.RefreshWeights(ctx)
	return nil
}

// MaxKeyWeight bounds a fairness key's weight.
const MaxKeyWeight = store.MaxKeyWeight

// SetKeyWeight stores the weight of fairness key key in queue, for every process and remote
// worker that claims it: when several keys have jobs ready, a key of weight W takes W turns
// for each turn of a key of weight 1 (docs/flow-control.md#weights-per-key). The weight is 2 to
// MaxKeyWeight; 0 or 1 removes it (every key without one has weight 1). Claims read it at
// once. A bad queue, key or weight is a *ValidationError naming queue, fairness_key or weight.
func (c *Client) SetKeyWeight(ctx context.Context, queue, key string, weight int) error {
	if err := checkKeyWeight(queue, key, weight); err != nil {
		return err
	}
	return c.store.QueueSetKeyWeight(ctx, queue, key, weight)
}

// checkKeyWeight checks SetKeyWeight's arguments.
func checkKeyWeight(queue, key string, weight int) error {
	if err := checkQueueName(queue); err != nil {
		return err
	}
	return field.KeyWeight(key, weight)
}

// Limit is a fleet-wide cap: at most MaxRunning jobs of Queue, or of Kind, run at once across
// every process sharing the store. Set exactly one of Queue and Kind; MaxRunning 0 removes
// the cap, and it is at most math.MaxInt32. A worker that cannot get a slot leaves the job
// for later.
//
// With PerKey it is a cap per fairness key instead (InsertOpts.FairnessKey): at most
// MaxRunning jobs of each key of Queue, or of Kind (in every queue), run at once. Jobs without
// a fairness key are not bound by it; the queue's and the kind's own caps still bind them. A
// queue or kind may have both caps. See docs/flow-control.md#limits-per-key.
type Limit struct {
	Queue      string
	Kind       string
	MaxRunning int
	PerKey     bool
}

// SetLimit sets or removes a fleet-wide cap (contract 8).
func (c *Client) SetLimit(ctx context.Context, l Limit) error {
	p, err := limitParams(l)
	if err != nil {
		return err
	}
	return c.store.LimitSet(ctx, p)
}

// limitParams checks a cap and names what it applies to.
func limitParams(l Limit) (*store.LimitParams, error) {
	if l.PerKey {
		if err := checkMaxRunningField("cap_per_key", l.MaxRunning); err != nil {
			return nil, err
		}
	} else if err := checkMaxRunning(l.MaxRunning); err != nil {
		return nil, err
	}
	scope, name, err := limitScope("limit", l.Queue, l.Kind)
	return &store.LimitParams{Scope: scope, Name: name, MaxRunning: l.MaxRunning, PerKey: l.PerKey}, err
}

// limitScope checks that exactly one of queue and kind is set, and valid, and says which.
func limitScope(field, queue, kind string) (store.LimitScope, string, error) {
	switch {
	case (queue == "") == (kind == ""):
		return "", "", invalid(field, "set exactly one of queue and kind")
	case queue != "":
		return store.LimitQueue, queue, checkQueueName(queue)
	default:
		return store.LimitKind, kind, checkKind(kind)
	}
}

// Limits returns every fleet-wide cap, queues first, by name, then every cap per key
// (PerKey), queues first, by name.
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
	qs, err := c.store.QueueList(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range qs {
		if q.CapPerKey > 0 {
			out = append(out, Limit{Queue: q.Name, MaxRunning: q.CapPerKey, PerKey: true})
		}
	}
	ks, err := c.store.KindList(ctx)
	if err != nil {
		return nil, err
	}
	for _, k := range ks {
		if k.CapPerKey > 0 {
			out = append(out, Limit{Kind: k.Name, MaxRunning: k.CapPerKey, PerKey: true})
		}
	}
	return out, nil
}

// OldestQueuedAt is when the oldest queued job of queue (by enqueue) became due, its run_at,
// or the zero time when the queue has no queued job: one row read through the claim index.
// The age of this job is what a queue's users wait for; the dashboard and the metrics show it.
func (c *Client) OldestQueuedAt(ctx context.Context, queue string) (time.Time, error) {
	res, err := c.List(ctx, &ListParams{States: []JobState{StateQueued}, Queues: []string{queue}, Limit: 1,
		Ascending: true})
	if err != nil || len(res.Jobs) == 0 {
		return time.Time{}, err
	}
	return res.Jobs[0].RunAt, nil
}
