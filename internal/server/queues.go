package server

import (
	"context"
	"fmt"
	"sort"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/hopperjobs/hopper/internal/field"
)

// queueService implements hopper.v1.QueueService.
type queueService struct{ s *Server }

func (q *queueService) List(ctx context.Context, _ *hopperv1.QueueServiceListRequest) (*hopperv1.QueueServiceListResponse, error) {
	qs, err := q.s.client.Queues(ctx)
	if err != nil {
		return nil, rpcError("list queues", err)
	}
	out := &hopperv1.QueueServiceListResponse{Queues: make([]*hopperv1.Queue, len(qs))}
	for i, info := range qs {
		out.Queues[i] = apispec.Queue(info)
	}
	return out, nil
}

func (q *queueService) Pause(ctx context.Context, req *hopperv1.PauseRequest) (*hopperv1.PauseResponse, error) {
	if err := q.s.client.PauseQueue(ctx, req.GetQueue()); err != nil {
		return nil, rpcError("pause queue", err)
	}
	return &hopperv1.PauseResponse{}, nil
}

func (q *queueService) Resume(ctx context.Context, req *hopperv1.ResumeRequest) (*hopperv1.ResumeResponse, error) {
	if err := q.s.client.ResumeQueue(ctx, req.GetQueue()); err != nil {
		return nil, rpcError("resume queue", err)
	}
	return &hopperv1.ResumeResponse{}, nil
}

// Set applies the settings the request carries, once all of them are known to be valid.
func (q *queueService) Set(ctx context.Context, req *hopperv1.QueueServiceSetRequest) (*hopperv1.QueueServiceSetResponse, error) {
	if req.Weight == nil && req.MaxRunning == nil && req.Rate == nil && req.CapPerKey == nil && req.RatePerKey == nil && len(req.GetKeyWeights()) == 0 {
		return nil, invalidArg("weight", "set at least one of weight, max_running, rate, cap_per_key, rate_per_key and key_weights")
	}
	keys := make([]string, 0, len(req.GetKeyWeights()))
	for k, w := range req.GetKeyWeights() {
		if err := field.KeyWeight(k, int(w)); err != nil {
			return nil, rpcError("set key weight", err)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if req.GetMaxRunning() < 0 { // checked first: a refused request changes nothing
		return nil, invalidArg("max_running", fmt.Sprintf("%d is negative", req.GetMaxRunning()))
	}
	if req.GetCapPerKey() < 0 {
		return nil, invalidArg("cap_per_key", fmt.Sprintf("%d is negative", req.GetCapPerKey()))
	}
	rate, err := apiview.FromOptionalRate(req.Rate)
	if err != nil {
		return nil, rpcError("set queue rate limit", err)
	}
	ratePerKey, err := apiview.FromOptionalRateField("rate_per_key", req.RatePerKey)
	if err != nil {
		return nil, rpcError("set queue rate limit per key", err)
	}
	if req.Weight != nil {
		if err := q.s.client.SetQueueWeight(ctx, req.GetQueue(), int(req.GetWeight())); err != nil {
			return nil, rpcError("set queue weight", err)
		}
	}
	if req.MaxRunning != nil {
		if err := q.s.client.SetLimit(ctx, hopper.Limit{Queue: req.GetQueue(), MaxRunning: int(req.GetMaxRunning())}); err != nil {
			return nil, rpcError("set queue cap", err)
		}
	}
	if rate != nil {
		if err := q.s.client.SetRateLimit(ctx, hopper.RateLimit{Queue: req.GetQueue(), Rate: *rate}); err != nil {
			return nil, rpcError("set queue rate limit", err)
		}
	}
	if req.CapPerKey != nil {
		l := hopper.Limit{Queue: req.GetQueue(), MaxRunning: int(req.GetCapPerKey()), PerKey: true}
		if err := q.s.client.SetLimit(ctx, l); err != nil {
			return nil, rpcError("set queue cap per key", err)
		}
	}
	if ratePerKey != nil {
		if err := q.s.client.SetRateLimit(ctx, hopper.RateLimit{Queue: req.GetQueue(), Rate: *ratePerKey, PerKey: true}); err != nil {
			return nil, rpcError("set queue rate limit per key", err)
		}
	}
	for _, k := range keys {
		if err := q.s.client.SetKeyWeight(ctx, req.GetQueue(), k, int(req.GetKeyWeights()[k])); err != nil {
			return nil, rpcError("set key weight", err)
		}
	}
	return &hopperv1.QueueServiceSetResponse{}, nil
}

// adminService implements hopper.v1.AdminService.
type adminService struct{ s *Server }

func (a *adminService) ListNodes(ctx context.Context, _ *hopperv1.ListNodesRequest) (*hopperv1.ListNodesResponse, error) {
	nodes, err := a.s.client.Nodes(ctx)
	if err != nil {
		return nil, rpcError("list nodes", err)
	}
	out := &hopperv1.ListNodesResponse{Nodes: make([]*hopperv1.Node, len(nodes))}
	for i, n := range nodes {
		out.Nodes[i] = apispec.Node(n, n.ID == a.s.client.NodeID() && a.s.client.IsLeader())
	}
	return out, nil
}

func (a *adminService) ListWorkers(context.Context, *hopperv1.ListWorkersRequest) (*hopperv1.ListWorkersResponse, error) {
	now := a.s.clock.Now()
	_, workers := a.s.reg.snapshot(now)
	out := &hopperv1.ListWorkersResponse{Workers: make([]*hopperv1.Worker, len(workers))}
	for i, w := range workers {
		out.Workers[i] = apispec.Worker(&hoppertype.WorkerInfo{Name: w.name, Queue: w.queue, Kinds: w.kinds,
			LastSeenAt: w.lastSeen, OpenStreams: w.streams, WaitingPolls: w.polls, Activated: w.activated, Held: w.heldAt(now),
			BatchKinds: w.batchKinds})
	}
	return out, nil
}

func (a *adminService) ListStreams(context.Context, *hopperv1.ListStreamsRequest) (*hopperv1.ListStreamsResponse, error) {
	streams, _ := a.s.reg.snapshot(a.s.clock.Now())
	out := &hopperv1.ListStreamsResponse{Streams: make([]*hopperv1.Stream, len(streams))}
	for i, st := range streams {
		out.Streams[i] = apispec.Stream(&hoppertype.StreamInfo{ID: st.id, Worker: st.worker, Queues: st.queues,
			Kinds: st.kinds, Credit: st.credit, InFlight: st.inFlight, Pushed: st.pushed, Completed: st.completed,
			Failed: st.failed, Released: st.released, OpenedAt: st.opened})
	}
	return out, nil
}
