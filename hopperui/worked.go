package hopperui

import (
	"context"
	"slices"

	"github.com/hopperjobs/hopper"
)

// noWorker is the hint on a queued job of a kind that no worker this process knows of has
// asked for on its queue: it waits until one does.
type noWorker struct {
	Queue, Kind string
	// Remote: the process serves remote workers (hopper serve), so they were looked at too.
	Remote bool
	// OtherNodes are the other nodes that work Queue: they may run Kind, which is not known
	// here (nodes register their queues, not their kinds).
	OtherNodes []string
}

// workerSight is what this process knows of who works which kinds: its own workers (the
// kinds registered in Config.Workers, on Config.Queues), the remote workers its server has
// seen (RemoteSource: each asked for some kinds, or any, of one queue), and the queues the
// other nodes of the cluster work.
type workerSight struct {
	cfg    hopper.Config
	remote bool
	asked  []RemoteWorker
	nodes  []*hopper.Node
	self   string
}

func (h *Handler) workerSight(ctx context.Context) (*workerSight, error) {
	nodes, err := h.client.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	s := &workerSight{cfg: h.client.Config(), nodes: nodes, self: h.client.NodeID()}
	if h.cfg.Remote != nil {
		s.remote = true
		s.asked, _ = h.cfg.Remote.Remote(ctx)
	}
	return s, nil
}

// hint is the hint for a queued job of kind on queue, nil when a worker of this process, or
// a remote worker of its server, has asked for that kind there.
func (s *workerSight) hint(queue, kind string) *noWorker {
	if _, ok := s.cfg.Queues[queue]; ok {
		if _, ok := s.cfg.Workers.Handler(kind); ok {
			return nil
		}
	}
	for _, w := range s.asked {
		if w.Queue == queue && (len(w.Kinds) == 0 || slices.Contains(w.Kinds, kind)) {
			return nil
		}
	}
	n := &noWorker{Queue: queue, Kind: kind, Remote: s.remote}
	for _, node := range s.nodes {
		if node.ID != s.self && slices.Contains(node.Queues, queue) {
			n.OtherNodes = append(n.OtherNodes, node.ID)
		}
	}
	return n
}

// unworked is the hint for a queued job, nil when it has none.
func (h *Handler) unworked(ctx context.Context, job *hopper.JobRow) (*noWorker, error) {
	s, err := h.workerSight(ctx)
	if err != nil {
		return nil, err
	}
	return s.hint(job.Queue, job.Kind), nil
}
