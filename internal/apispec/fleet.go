package apispec

import (
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// Queue is a queue's settings and job counts as the API shows them.
func Queue(q *hopper.QueueInfo) *hopperv1.Queue {
	return &hopperv1.Queue{Name: apiview.Text(q.Name), Paused: q.Paused, MaxRunning: apiview.Int32(q.MaxRunning),
		Weight: apiview.Int32(q.Weight), Counts: apiview.Counts(q.Counts), AwaitingCompute: q.AwaitingCompute,
		Computing: q.Computing, HeldByGovernor: q.HeldByGovernor, Disabled: q.Disabled, Rate: apiview.Rate(q.Rate),
		CapPerKey: apiview.Int32(q.CapPerKey), RatePerKey: apiview.Rate(q.RatePerKey), KeyWeights: KeyWeights(q.KeyWeights)}
}

// KeyWeights is a queue's key weights as the API carries them (nil for none).
func KeyWeights(ws map[string]int) map[string]int32 {
	if len(ws) == 0 {
		return nil
	}
	out := make(map[string]int32, len(ws))
	for k, w := range ws {
		out[apiview.Text(k)] = apiview.Int32(w)
	}
	return out
}

// FromKeyWeights reads a queue's key weights (nil for none).
func FromKeyWeights(ws map[string]int32) map[string]int {
	if len(ws) == 0 {
		return nil
	}
	out := make(map[string]int, len(ws))
	for k, w := range ws {
		out[k] = int(w)
	}
	return out
}

// FromQueue reads a queue's settings and job counts.
func FromQueue(q *hopperv1.Queue) *hopper.QueueInfo {
	return &hopper.QueueInfo{Name: q.GetName(), Paused: q.GetPaused(), Weight: int(q.GetWeight()),
		MaxRunning: int(q.GetMaxRunning()), Rate: apiview.FromRate(q.GetRate()), Counts: apiview.FromCounts(q.GetCounts()),
		Computing: q.GetComputing(), AwaitingCompute: q.GetAwaitingCompute(), HeldByGovernor: q.GetHeldByGovernor(),
		Disabled: q.GetDisabled(), CapPerKey: int(q.GetCapPerKey()), RatePerKey: apiview.FromRate(q.GetRatePerKey()),
		KeyWeights: FromKeyWeights(q.GetKeyWeights())}
}

// Kind is a kind's settings and job counts as the API shows them.
func Kind(k *hopper.KindInfo) *hopperv1.Kind {
	return &hopperv1.Kind{Name: apiview.Text(k.Name), Disabled: k.Disabled, MaxRunning: apiview.Int32(k.MaxRunning),
		Counts: apiview.Counts(k.Counts), Rate: apiview.Rate(k.Rate), CompactOver: apiview.Int32(k.Compaction.Over),
		CompactMerge: string(k.Compaction.Merge), CapPerKey: apiview.Int32(k.CapPerKey), RatePerKey: apiview.Rate(k.RatePerKey)}
}

// FromKind reads a kind's settings and job counts.
func FromKind(k *hopperv1.Kind) *hopper.KindInfo {
	return &hopper.KindInfo{Name: k.GetName(), Disabled: k.GetDisabled(), MaxRunning: int(k.GetMaxRunning()),
		Rate: apiview.FromRate(k.GetRate()), Counts: apiview.FromCounts(k.GetCounts()),
		Compaction: hopper.Compaction{Over: int(k.GetCompactOver()), Merge: hopper.MergePolicy(k.GetCompactMerge())},
		CapPerKey:  int(k.GetCapPerKey()), RatePerKey: apiview.FromRate(k.GetRatePerKey())}
}

// Node is a registered node as the API shows it; leader says whether it holds the leader
// lease. The API does not carry the node's queues.
func Node(n *hoppertype.Node, leader bool) *hopperv1.Node {
	return &hopperv1.Node{Id: n.ID, Host: n.Host, Pid: int32(n.PID), StartedAt: apiview.Time(n.StartedAt),
		HeartbeatAt: apiview.Time(n.HeartbeatAt), Leader: leader, Holding: n.Holding, Idle: n.Idle}
}

// FromNode reads a registered node (whether it leads is the message's).
func FromNode(n *hopperv1.Node) *hoppertype.Node {
	return &hoppertype.Node{ID: n.GetId(), Host: n.GetHost(), PID: int(n.GetPid()), StartedAt: apiview.FromTime(n.GetStartedAt()),
		HeartbeatAt: apiview.FromTime(n.GetHeartbeatAt()), Holding: n.GetHolding(), Idle: n.GetIdle()}
}

// Worker is a remote worker a server saw, as the API shows it.
func Worker(w *hoppertype.WorkerInfo) *hopperv1.Worker {
	return &hopperv1.Worker{Name: w.Name, Queue: w.Queue, Kinds: w.Kinds, LastSeenAt: apiview.Time(w.LastSeenAt),
		OpenStreams: apiview.Int32(w.OpenStreams), WaitingPolls: apiview.Int32(w.WaitingPolls), Activated: w.Activated, Held: w.Held,
		BatchKinds: w.BatchKinds}
}

// FromWorker reads a remote worker a server saw.
func FromWorker(w *hopperv1.Worker) *hoppertype.WorkerInfo {
	return &hoppertype.WorkerInfo{Name: w.GetName(), Queue: w.GetQueue(), Kinds: w.GetKinds(),
		LastSeenAt: apiview.FromTime(w.GetLastSeenAt()), OpenStreams: int(w.GetOpenStreams()),
		WaitingPolls: int(w.GetWaitingPolls()), Activated: w.GetActivated(), Held: w.GetHeld(),
		BatchKinds: w.GetBatchKinds()}
}

// Stream is an open job stream as the API shows it: queue is the first of its queues, for
// clients that know of one queue per stream.
func Stream(s *hoppertype.StreamInfo) *hopperv1.Stream {
	out := &hopperv1.Stream{Id: s.ID, Worker: s.Worker, Queues: s.Queues, Kinds: s.Kinds,
		Credit: apiview.Int32(s.Credit), InFlight: apiview.Int32(s.InFlight), Pushed: s.Pushed, Completed: s.Completed,
		Failed: s.Failed, Released: s.Released, OpenedAt: apiview.Time(s.OpenedAt)}
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
		Completed: s.GetCompleted(), Failed: s.GetFailed(), Released: s.GetReleased(), OpenedAt: apiview.FromTime(s.GetOpenedAt())}
}

// APIKey is an API key as the API shows it, without its secret.
func APIKey(k *hoppertype.APIKey) *hopperv1.APIKey {
	return &hopperv1.APIKey{Id: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: apiview.Time(k.CreatedAt),
		LastUsedAt: apiview.Time(k.LastUsedAt), RevokedAt: apiview.Time(k.RevokedAt)}
}

// FromAPIKey reads an API key. Nil reads as nil.
func FromAPIKey(k *hopperv1.APIKey) *hoppertype.APIKey {
	if k == nil {
		return nil
	}
	return &hoppertype.APIKey{ID: k.GetId(), Name: k.GetName(), Scopes: k.GetScopes(), CreatedAt: apiview.FromTime(k.GetCreatedAt()),
		LastUsedAt: apiview.FromTime(k.GetLastUsedAt()), RevokedAt: apiview.FromTime(k.GetRevokedAt())}
}

// ServerInfo is what a server says of itself, as the API shows it.
func ServerInfo(s *hoppertype.ServerInfo) *hopperv1.ServerInfo {
	return &hopperv1.ServerInfo{Version: apiview.Text(s.Version), Commit: apiview.Text(s.Commit),
		CommitTime: apiview.Time(s.CommitTime), Modified: s.Modified, GoVersion: apiview.Text(s.GoVersion),
		Platform: apiview.Text(s.Platform), Store: s.Store, SchemaVersion: apiview.Int32(s.SchemaVersion),
		InputLimits: inputLimits(&s.InputLimits)}
}

// inputLimits is the wire's InputLimits of l.
func inputLimits(l *hoppertype.InputLimits) *hopperv1.InputLimits {
	n, d := apiview.Int32, apiview.Duration
	return &hopperv1.InputLimits{MaxIdLen: n(l.MaxIDLen), MaxKindLen: n(l.MaxKindLen), MaxQueueLen: n(l.MaxQueueLen),
		MaxKeyLen: n(l.MaxKeyLen), MaxNameLen: n(l.MaxNameLen), MaxErrorCodeLen: n(l.MaxErrorCodeLen),
		MaxReasonBytes: n(l.MaxReasonBytes), MaxProgressMessageBytes: n(l.MaxProgressMessageBytes),
		MaxErrorBytes: n(l.MaxErrorBytes), MaxArgsBytes: n(l.MaxArgsBytes), MaxHeaderBytes: n(l.MaxHeaderBytes),
		MaxPriority: n(l.MaxPriority), MaxAttempts: n(l.MaxAttempts), MaxRescues: n(l.MaxRescues), MaxCap: n(l.MaxCap),
		MaxFilterCodes: n(l.MaxFilterCodes), MaxRunAtPast: d(l.MaxRunAtPast), MaxRunAtFuture: d(l.MaxRunAtFuture),
		MaxTimeout: d(l.MaxTimeout), MaxRetention: d(l.MaxRetention), MaxResultTtl: d(l.MaxResultTTL),
		MaxActivateJobs: n(l.MaxActivateJobs), MaxActivateWait: d(l.MaxActivateWait),
		MaxActivateQueues: n(l.MaxActivateQueues), MaxStreamCredit: n(l.MaxStreamCredit),
		MaxStreamKindCaps: n(l.MaxStreamKindCaps), MaxParents: n(l.MaxParents), MaxSpawn: n(l.MaxSpawn),
		MaxWorkflowSteps: n(l.MaxWorkflowSteps)}
}

// fromInputLimits reads the wire's InputLimits; nil (a server that predates them) reads as zero.
func fromInputLimits(l *hopperv1.InputLimits) hoppertype.InputLimits {
	n, d := func(v int32) int { return int(v) }, apiview.FromDuration
	return hoppertype.InputLimits{MaxIDLen: n(l.GetMaxIdLen()), MaxKindLen: n(l.GetMaxKindLen()), MaxQueueLen: n(l.GetMaxQueueLen()),
		MaxKeyLen: n(l.GetMaxKeyLen()), MaxNameLen: n(l.GetMaxNameLen()), MaxErrorCodeLen: n(l.GetMaxErrorCodeLen()),
		MaxReasonBytes: n(l.GetMaxReasonBytes()), MaxProgressMessageBytes: n(l.GetMaxProgressMessageBytes()),
		MaxErrorBytes: n(l.GetMaxErrorBytes()), MaxArgsBytes: n(l.GetMaxArgsBytes()), MaxHeaderBytes: n(l.GetMaxHeaderBytes()),
		MaxPriority: n(l.GetMaxPriority()), MaxAttempts: n(l.GetMaxAttempts()), MaxRescues: n(l.GetMaxRescues()),
		MaxCap: n(l.GetMaxCap()), MaxFilterCodes: n(l.GetMaxFilterCodes()), MaxRunAtPast: d(l.GetMaxRunAtPast()),
		MaxRunAtFuture: d(l.GetMaxRunAtFuture()), MaxTimeout: d(l.GetMaxTimeout()), MaxRetention: d(l.GetMaxRetention()),
		MaxResultTTL: d(l.GetMaxResultTtl()), MaxActivateJobs: n(l.GetMaxActivateJobs()),
		MaxActivateWait: d(l.GetMaxActivateWait()), MaxActivateQueues: n(l.GetMaxActivateQueues()),
		MaxStreamCredit: n(l.GetMaxStreamCredit()), MaxStreamKindCaps: n(l.GetMaxStreamKindCaps()),
		MaxParents: n(l.GetMaxParents()), MaxSpawn: n(l.GetMaxSpawn()), MaxWorkflowSteps: n(l.GetMaxWorkflowSteps())}
}

// FromServerInfo reads what a server says of itself. Nil reads as nil.
func FromServerInfo(s *hopperv1.ServerInfo) *hoppertype.ServerInfo {
	if s == nil {
		return nil
	}
	return &hoppertype.ServerInfo{Version: s.GetVersion(), Commit: s.GetCommit(), CommitTime: apiview.FromTime(s.GetCommitTime()),
		Modified: s.GetModified(), GoVersion: s.GetGoVersion(), Platform: s.GetPlatform(), Store: s.GetStore(),
		SchemaVersion: int(s.GetSchemaVersion()), InputLimits: fromInputLimits(s.GetInputLimits())}
}
