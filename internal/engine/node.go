package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/governor"
	"github.com/hopperjobs/hopper/internal/store"
)

// idleReminder is how long an idle node goes without a heartbeat before it writes its idle
// heartbeat again, unchanged: well within store.IdleNodeTTL, after which the leader removes an
// idle node's row, so a live idle node stays listed however long it idles.
const idleReminder = store.IdleNodeTTL / 2

// heartbeatNode keeps this process registered in the store, so the leader can tell a dead
// node's jobs (rescued at once) from a live node's long-running ones (left alone), and reads
// the queues' stored weights at the same pace. Each heartbeat records the governor's state
// (contract 15); a change of it, or of the remote workers' (Beat), heartbeats at once. A
// failed heartbeat is retried with backoff, never later than the next regular one.
//
// A node that holds no jobs is idle (idleNode): it says so once and then writes nothing while
// nothing changes (but every idleReminder), so an idle process writes nothing to its
// database. The leader does not take an idle node for dead, however old its heartbeat. The
// first job that starts here after an idle heartbeat wakes the loop (register, idleBeat),
// which heartbeats at once, not idle; while the node is busy, jobs starting do not.
func (e *Engine) heartbeatNode(ctx context.Context) {
	node := &hoppertype.Node{ID: e.cfg.WorkerID, Host: e.cfg.Host, PID: e.cfg.PID, StartedAt: e.clock.Now()}
	var last *hoppertype.Node // what the last successful heartbeat recorded; nil before the first
	var lastAt time.Time
	retry := e.newTracker("node heartbeat", backoff.DefaultPolicy)
	for ctx.Err() == nil {
		wait := e.cfg.NodeTTL / 3
		var changed <-chan struct{}
		node.Holding, changed = e.gov.State()
		node.Queues, node.HeldQueues = e.nodeQueues(node.Holding)
		node.Idle = e.idleNode(node)
		var err error
		if now := e.clock.Now(); !stillIdle(node, last) || now.Sub(lastAt) >= idleReminder {
			if err = e.store.NodeHeartbeat(ctx, node); err == nil {
				recorded := *node // its lists are new at each heartbeat, never changed
				last, lastAt = &recorded, now
				e.idleBeat.Store(node.Idle)
				if node.Idle && e.Running() > 0 {
					// A job registered while the idle heartbeat was on its way: it saw no idle
					// heartbeat yet, so it asked for none. Say at once that the node is busy.
					e.Beat()
				}
			}
		}
		if err == nil {
			err = e.RefreshWeights(ctx)
		}
		if err == nil {
			retry.Succeed()
		} else if ctx.Err() == nil {
			wait = min(wait, retry.Fail(err))
		}
		t := e.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-t.C():
		case <-changed:
		case <-e.beat:
		}
		t.Stop()
	}
}

// idleNode reports whether node, this process's node about to heartbeat, is idle: no job runs
// in this process and nothing of it is held back, by its governor or by the governors of the
// remote workers served through it (an idle node counts for its queues as a live one that
// holds nothing back: NodeHeldQueues).
func (e *Engine) idleNode(node *hoppertype.Node) bool {
	return e.Running() == 0 && !node.Holding && len(node.HeldQueues) == 0
}

// stillIdle reports whether node is idle and last, what its last successful heartbeat
// recorded, already says exactly that: the heartbeat may be left out.
func stillIdle(node, last *hoppertype.Node) bool {
	return node.Idle && last != nil && last.Idle && last.Holding == node.Holding &&
		slices.Equal(last.Queues, node.Queues) && slices.Equal(last.HeldQueues, node.HeldQueues)
}

// nodeQueues returns the queues this process's workers work — its producers' when it works
// jobs, and its remote workers' (SetRemoteQueues) — and those of them where every one of its
// workers is held back: by the governor (holding) for its own, by theirs for remote ones.
func (e *Engine) nodeQueues(holding bool) (queues, held []string) {
	holds := governor.Holds{}
	if len(e.kinds) > 0 {
		for q := range e.cfg.Queues {
			holds.Add(q, holding)
		}
	}
	if f := e.remote.Load(); f != nil {
		rq, rh := (*f)()
		for _, q := range rq {
			holds.Add(q, slices.Contains(rh, q))
		}
	}
	return holds.Lists()
}

// SetRemoteQueues tells the engine which queues the remote workers served through this
// process work and which of them are held back by the workers' governors, for its node
// heartbeats. f is called once per heartbeat and must not block.
func (e *Engine) SetRemoteQueues(f func() (queues, held []string)) { e.remote.Store(&f) }

// Beat asks for a node heartbeat now (the remote workers' state changed). It never blocks.
func (e *Engine) Beat() {
	select {
	case e.beat <- struct{}{}:
	default:
	}
}

// NodeTTL is how long a node may go without a heartbeat before it counts as dead.
func (e *Engine) NodeTTL() time.Duration { return e.cfg.NodeTTL }

// Governor returns the engine's governor (nil without limits).
func (e *Engine) Governor() *governor.Governor { return e.gov }

// deregister removes this node from the store once it holds no jobs.
func (e *Engine) deregister(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := e.store.NodeRemove(ctx, e.cfg.WorkerID); err != nil {
		e.log.Warn("deregister node", "err", err)
	}
}

// RefreshWeights reads the queues' stored weights and shares this process's slots by them: a
// queue's stored weight when it has one, else its configured weight (Config.Weights, default
// 1). With a single queue there is nothing to share and nothing is read, unless remote
// workers served through this process ask for several queues (QueueWeights).
func (e *Engine) RefreshWeights(ctx context.Context) error {
	if len(e.cfg.Queues) < 2 && !e.remoteShares.Load() {
		return nil
	}
	settings, err := e.store.QueueList(ctx)
	if err != nil {
		return fmt.Errorf("read queue weights: %w", err)
	}
	stored := make(map[string]int, len(settings))
	for _, q := range settings {
		if q.Weight > 0 {
			stored[q.Name] = q.Weight
		}
	}
	e.stored.Store(&stored)
	if len(e.cfg.Queues) < 2 {
		return nil
	}
	weights := make(map[string]int, len(e.cfg.Queues))
	for q := range e.cfg.Queues {
		weights[q] = e.weightOf(q, stored)
	}
	e.weights.Store(&weights)
	e.producer.loop.SetWeights(weights)
	return nil
}

// weightOf is queue's weight given the stored weights: the stored one, else the configured
// one, else 1.
func (e *Engine) weightOf(queue string, stored map[string]int) int {
	if w := stored[queue]; w > 0 {
		return w
	}
	return max(e.cfg.Weights[queue], 1)
}

// Weights are the weights this process shares its slots by, per queue it works.
func (e *Engine) Weights() map[string]int {
	return maps.Clone(*e.weights.Load())
}

// QueueWeights returns the weights a remote worker's claims on queues are shared by, as this
// process's slots are (RefreshWeights): each queue's stored weight, else its configured one,
// else 1. The first call reads the stored weights, and from then on every node heartbeat
// reads them again; when that first read fails, the configured weights serve until a later
// call or heartbeat reads them (the heartbeat reports its failures).
func (e *Engine) QueueWeights(ctx context.Context, queues []string) map[string]int {
	e.remoteShares.Store(true)
	if e.stored.Load() == nil {
		_ = e.RefreshWeights(ctx) // on failure: the configured weights, as said above
	}
	var stored map[string]int
	if p := e.stored.Load(); p != nil {
		stored = *p
	}
	out := make(map[string]int, len(queues))
	for _, q := range queues {
		out[q] = e.weightOf(q, stored)
	}
	return out
}
