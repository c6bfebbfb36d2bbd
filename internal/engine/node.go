package engine

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
)

// heartbeatNode keeps this process registered in the store, so the leader can tell a dead
// node's jobs (rescued at once) from a live node's long-running ones (left alone). A failed
// heartbeat is retried with backoff, never later than the next regular one.
func (e *Engine) heartbeatNode(ctx context.Context) {
	node := &hoppertype.Node{ID: e.cfg.WorkerID, Host: e.cfg.Host, PID: e.cfg.PID, StartedAt: e.clock.Now()}
	retry := e.newTracker("node heartbeat", backoff.DefaultPolicy)
	for ctx.Err() == nil {
		wait := e.cfg.NodeTTL / 3
		if err := e.store.NodeHeartbeat(ctx, node); err == nil {
			retry.Succeed()
		} else if ctx.Err() == nil {
			wait = min(wait, retry.Fail(err))
		}
		clock.Sleep(ctx, e.clock, wait)
	}
}

// deregister removes this node from the store once it holds no jobs.
func (e *Engine) deregister(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := e.store.NodeRemove(ctx, e.cfg.WorkerID); err != nil {
		e.log.Warn("deregister node", "err", err)
	}
}
