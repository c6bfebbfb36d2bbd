package hopperui

import (
	"context"
	"net/http"
	"time"

	"github.com/hopperjobs/hopper"
)

// RemoteSource lists the remote workers and job streams a server knows (hopper serve's
// registry). Implementations are safe for concurrent use.
type RemoteSource interface {
	Remote(ctx context.Context) ([]RemoteWorker, []Stream)
}

// RemoteWorker is a remote worker process as the server last saw it, per queue.
type RemoteWorker struct {
	Name  string
	Queue string
	Kinds []string
	// BatchKinds are the kinds among Kinds it takes in batches (a batch worker's kinds:
	// hopper.AddBatchWorker, or an SDK's), as its last request for jobs named them.
	BatchKinds []string
	LastSeen   time.Time
	Streams    int   // open streams
	Polls      int   // long polls waiting
	Activated  int64 // jobs handed to it
	HeldUntil  time.Time
	// Stale: the worker has no stream or long poll open and has not called the server for a
	// while (hopper serve: 30 s, longer than a polling worker waits between calls); the
	// server's node no longer counts its queue as worked. It is forgotten an hour after its
	// last call.
	Stale bool
}

// Stream is one open job stream: its credit and the jobs in flight to it.
type Stream struct {
	ID, Worker                          string
	Queues, Kinds                       []string
	Credit, InFlight                    int
	Pushed, Completed, Failed, Released int64
	Opened                              time.Time
}

type workersData struct {
	Nodes   []*hopper.Node
	Leader  string
	Self    string
	Remote  bool
	Workers []RemoteWorker
	Streams []Stream
	Running int
}

func (h *Handler) workers(w http.ResponseWriter, r *http.Request, v *view) error {
	h.refreshing(v, "/workers")
	nodes, err := h.client.Nodes(r.Context())
	if err != nil {
		return err
	}
	d := &workersData{Nodes: nodes, Leader: h.client.LeaderID(), Self: h.client.NodeID(), Running: h.client.Running()}
	if h.cfg.Remote != nil {
		d.Remote = true
		d.Workers, d.Streams = h.cfg.Remote.Remote(r.Context())
	}
	v.Title, v.Data = "Workers", d
	h.render(w, r, http.StatusOK, "workers", v)
	return nil
}
