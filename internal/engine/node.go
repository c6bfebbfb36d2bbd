package engine

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// heartbeatNode keeps this process registered in the store, so the leader can tell a dead
// node's jobs (rescued at once) from a live node's long-running ones (left alone).
func (e *Engine) heartbeatNode(ctx context.Context) {
	node := &hoppertype.Node{ID: e.cfg.WorkerID, Host: e.cfg.Host, PID: e.cfg.PID, StartedAt: e.clock.Now()}
	for ctx.Err() == nil {
		if err := e.store.NodeHeartbeat(ctx, node); err != nil && ctx.Err() == nil {
			e.log.Error("node heartbeat", "err", err)
		}
		t := e.clock.NewTimer(e.cfg.NodeTTL / 3)
		select {
		case <-ctx.Done():
		case <-t.C():
		}
		t.Stop()
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
