package apiview

import (
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
)

// Queue is a queue's settings and job counts as the API shows them.
func Queue(q *hopper.QueueInfo) *hopperv1.Queue {
	return &hopperv1.Queue{Name: Text(q.Name), Paused: q.Paused, MaxRunning: Int32(q.MaxRunning),
		Weight: Int32(q.Weight), Counts: Counts(q.Counts), AwaitingCompute: q.AwaitingCompute,
		Disabled: q.Disabled, Rate: Rate(q.Rate)}
}

// FromQueue reads a queue's settings and job counts.
func FromQueue(q *hopperv1.Queue) *hopper.QueueInfo {
	return &hopper.QueueInfo{Name: q.GetName(), Paused: q.GetPaused(), Weight: int(q.GetWeight()),
		MaxRunning: int(q.GetMaxRunning()), Rate: FromRate(q.GetRate()), Counts: FromCounts(q.GetCounts()),
		AwaitingCompute: q.GetAwaitingCompute(), Disabled: q.GetDisabled()}
}

// Kind is a kind's settings and job counts as the API shows them.
func Kind(k *hopper.KindInfo) *hopperv1.Kind {
	return &hopperv1.Kind{Name: Text(k.Name), Disabled: k.Disabled, MaxRunning: Int32(k.MaxRunning),
		Counts: Counts(k.Counts), Rate: Rate(k.Rate)}
}

// FromKind reads a kind's settings and job counts.
func FromKind(k *hopperv1.Kind) *hopper.KindInfo {
	return &hopper.KindInfo{Name: k.GetName(), Disabled: k.GetDisabled(), MaxRunning: int(k.GetMaxRunning()),
		Rate: FromRate(k.GetRate()), Counts: FromCounts(k.GetCounts())}
}

// Node is a registered node as the API shows it; leader says whether it holds the leader
// lease. The API does not carry the node's queues.
func Node(n *hoppertype.Node, leader bool) *hopperv1.Node {
	return &hopperv1.Node{Id: n.ID, Host: n.Host, Pid: int32(n.PID), StartedAt: Time(n.StartedAt),
		HeartbeatAt: Time(n.HeartbeatAt), Leader: leader, Holding: n.Holding, Idle: n.Idle}
}

// FromNode reads a registered node (whether it leads is the message's).
func FromNode(n *hopperv1.Node) *hoppertype.Node {
	return &hoppertype.Node{ID: n.GetId(), Host: n.GetHost(), PID: int(n.GetPid()), StartedAt: FromTime(n.GetStartedAt()),
		HeartbeatAt: FromTime(n.GetHeartbeatAt()), Holding: n.GetHolding(), Idle: n.GetIdle()}
}

// Worker is a remote worker a server saw, as the API shows it.
func Worker(w *hoppertype.WorkerInfo) *hopperv1.Worker {
	return &hopperv1.Worker{Name: w.Name, Queue: w.Queue, Kinds: w.Kinds, LastSeenAt: Time(w.LastSeenAt),
		OpenStreams: Int32(w.OpenStreams), WaitingPolls: Int32(w.WaitingPolls), Activated: w.Activated, Held: w.Held}
}

// FromWorker reads a remote worker a server saw.
func FromWorker(w *hopperv1.Worker) *hoppertype.WorkerInfo {
	return &hoppertype.WorkerInfo{Name: w.GetName(), Queue: w.GetQueue(), Kinds: w.GetKinds(),
		LastSeenAt: FromTime(w.GetLastSeenAt()), OpenStreams: int(w.GetOpenStreams()),
		WaitingPolls: int(w.GetWaitingPolls()), Activated: w.GetActivated(), Held: w.GetHeld()}
}

// Stream is an open job stream as the API shows it: queue is the first of its queues, for
// clients that know of one queue per stream.
func Stream(s *hoppertype.StreamInfo) *hopperv1.Stream {
	out := &hopperv1.Stream{Id: s.ID, Worker: s.Worker, Queues: s.Queues, Kinds: s.Kinds,
		Credit: Int32(s.Credit), InFlight: Int32(s.InFlight), Pushed: s.Pushed, Completed: s.Completed,
		Failed: s.Failed, Released: s.Released, OpenedAt: Time(s.OpenedAt)}
	if len(s.Queues) > 0 {
		out.Queue = s.Queues[0]
	}
	return out
}

// FromStream reads an open job stream. A server that knows of one queue per stream sends
// only queue: it is then the stream's one queue.
func FromStream(s *hopperv1.Stream) *hoppertype.StreamInfo {
	queues := s.GetQueues()
	if len(queues) == 0 && s.GetQueue() != "" {
		queues = []string{s.GetQueue()}
	}
	return &hoppertype.StreamInfo{ID: s.GetId(), Worker: s.GetWorker(), Queues: queues, Kinds: s.GetKinds(),
		Credit: int(s.GetCredit()), InFlight: int(s.GetInFlight()), Pushed: s.GetPushed(),
		Completed: s.GetCompleted(), Failed: s.GetFailed(), Released: s.GetReleased(), OpenedAt: FromTime(s.GetOpenedAt())}
}

// APIKey is an API key as the API shows it, without its secret.
func APIKey(k *hoppertype.APIKey) *hopperv1.APIKey {
	return &hopperv1.APIKey{Id: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: Time(k.CreatedAt),
		LastUsedAt: Time(k.LastUsedAt), RevokedAt: Time(k.RevokedAt)}
}

// FromAPIKey reads an API key. Nil reads as nil.
func FromAPIKey(k *hopperv1.APIKey) *hoppertype.APIKey {
	if k == nil {
		return nil
	}
	return &hoppertype.APIKey{ID: k.GetId(), Name: k.GetName(), Scopes: k.GetScopes(), CreatedAt: FromTime(k.GetCreatedAt()),
		LastUsedAt: FromTime(k.GetLastUsedAt()), RevokedAt: FromTime(k.GetRevokedAt())}
}
