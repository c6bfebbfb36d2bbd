package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testCluster(t *testing.T, opener Opener) {
	parallel(t, opener, "QueuePause", clusterQueuePause)
	parallel(t, opener, "QueueWeight", clusterQueueWeight)
	parallel(t, opener, "Nodes", clusterNodes)
	parallel(t, opener, "NodeGovernor", clusterNodeGovernor)
	parallel(t, opener, "LeaderExclusive", clusterLeaderExclusive)
	parallel(t, opener, "LeaderResign", clusterLeaderResign)
	parallel(t, opener, "RescueDeadNodes", clusterRescueDeadNodes)
	parallel(t, opener, "RescueSparesSelf", clusterRescueSparesSelf)
	parallel(t, opener, "IdleNodes", clusterIdleNodes)
	parallel(t, opener, "Ping", clusterPing)
}

// Ping answers nil while the database answers, and an error once the handle is closed; a
// caller's deadline bounds it.
func clusterPing(t *testing.T, b *bundle) {
	require.NoError(t, b.store.Ping(t.Context()))
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	err := b.store.Ping(canceled)
	require.Error(t, err, "a canceled context ends the ping")
	require.NotErrorIs(t, err, store.ErrUnavailable, "the caller gave up: not the database's doing")

	second := b.open()
	require.NoError(t, second.Ping(t.Context()))
	require.NoError(t, second.Close())
	require.ErrorIs(t, second.Ping(t.Context()), store.ErrClosed)
	require.NoError(t, b.store.Ping(t.Context()), "another handle is unaffected")
}

// Contract 14: a paused queue starts nothing new; other queues go on; resume restores it.
func clusterQueuePause(t *testing.T, b *bundle) {
	ctx := t.Context()
	paused := b.insert(t, inQueue("mail"))
	other := b.insert(t, inQueue("other"))
	require.NoError(t, b.store.QueueSetPaused(ctx, "mail", true))
	require.Empty(t, b.claim(t, "mail", 10))
	require.Equal(t, []string{other.ID}, ids(b.claim(t, "other", 10)))

	qs, err := b.store.QueueList(ctx)
	require.NoError(t, err)
	require.Equal(t, []*store.QueueSettings{{Name: "mail", Paused: true}}, qs)

	require.NoError(t, b.store.QueueSetPaused(ctx, "mail", false))
	require.Equal(t, []string{paused.ID}, ids(b.claim(t, "mail", 10)))
	qs, err = b.store.QueueList(ctx)
	require.NoError(t, err)
	require.False(t, qs[0].Paused)
}

// Contract 14: a queue's weight is stored fleet-wide, kept apart from its pause flag, and
// removed with 0; a bad weight is refused and changes nothing.
func clusterQueueWeight(t *testing.T, b *bundle) {
	ctx := t.Context()
	require.NoError(t, b.store.QueueSetWeight(ctx, "mail", 3))
	require.NoError(t, b.store.QueueSetPaused(ctx, "mail", true))
	require.NoError(t, b.store.QueueSetPaused(ctx, "other", true))
	qs, err := b.store.QueueList(ctx)
	require.NoError(t, err)
	require.Equal(t, []*store.QueueSettings{{Name: "mail", Paused: true, Weight: 3}, {Name: "other", Paused: true}}, qs,
		"a weight survives a pause; a queue without one reads 0")

	require.ErrorIs(t, b.store.QueueSetWeight(ctx, "mail", -1), store.ErrInvalid)
	require.NoError(t, b.store.QueueSetWeight(ctx, "mail", 0))
	require.NoError(t, b.store.QueueSetWeight(ctx, "fresh", 2))
	qs, err = b.store.QueueList(ctx)
	require.NoError(t, err)
	require.Equal(t, []*store.QueueSettings{{Name: "fresh", Weight: 2}, {Name: "mail", Paused: true}, {Name: "other", Paused: true}}, qs)
}

func clusterNodes(t *testing.T, b *bundle) {
	ctx := t.Context()
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: "node-a", Host: "h1", PID: 11}))
	b.clock.Advance(time.Second)
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: "node-b", Host: "h2", PID: 22}))
	b.clock.Advance(time.Second)
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: "node-a", Host: "h1", PID: 11}))

	nodes, err := b.store.NodeList(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	require.Equal(t, "node-a", nodes[0].ID, "oldest first")
	require.Equal(t, "h1", nodes[0].Host)
	require.Equal(t, 11, nodes[0].PID)
	sameTime(t, Start, nodes[0].StartedAt, "started_at kept across heartbeats")
	sameTime(t, Start.Add(2*time.Second), nodes[0].HeartbeatAt, "heartbeat refreshed")
	sameTime(t, Start.Add(time.Second), nodes[1].HeartbeatAt, "node-b heartbeat")
	require.False(t, nodes[0].Idle)
	require.False(t, nodes[1].Idle)

	b.clock.Advance(time.Second)
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: "node-b", Host: "h2", PID: 22, Idle: true}))
	nodes, err = b.store.NodeList(ctx)
	require.NoError(t, err)
	require.True(t, nodes[1].Idle, "the heartbeat records that the node is idle")
	sameTime(t, Start.Add(3*time.Second), nodes[1].HeartbeatAt, "when it went idle")
	require.False(t, nodes[0].Idle)

	require.NoError(t, b.store.NodeRemove(ctx, "node-a"))
	require.NoError(t, b.store.NodeRemove(ctx, "no-such-node"))
	nodes, err = b.store.NodeList(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	require.Equal(t, "node-b", nodes[0].ID)
}

// Contract 15: a node's heartbeat records its governor's state, and a queue is held (its
// queued jobs await compute) while every live node that works it holds it back.
func clusterNodeGovernor(t *testing.T, b *bundle) {
	ctx := t.Context()
	const ttl = 30 * time.Second
	beat := func(id string, holding bool, queues, held []string) {
		t.Helper()
		require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: id, Host: "h", PID: 1, Holding: holding,
			Queues: queues, HeldQueues: held}))
	}
	heldQueues := func() []string {
		t.Helper()
		qs, err := b.store.NodeHeldQueues(ctx, ttl)
		require.NoError(t, err)
		return qs
	}
	require.Empty(t, heldQueues(), "no node, nothing held")
	beat("node-a", true, []string{"mail", "other"}, []string{"mail", "other"})
	beat("node-b", false, []string{"other"}, nil)
	beat("node-c", true, []string{"reports"}, []string{"reports"})
	beat("node-d", false, nil, nil) // works no queue (maintenance only)

	nodes, err := b.store.NodeList(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 4)
	require.True(t, nodes[0].Holding)
	require.Equal(t, []string{"mail", "other"}, nodes[0].Queues)
	require.Equal(t, []string{"mail", "other"}, nodes[0].HeldQueues)
	require.False(t, nodes[1].Holding)
	require.Equal(t, []string{"other"}, nodes[1].Queues)
	require.Empty(t, nodes[1].HeldQueues)
	require.Empty(t, nodes[3].Queues)

	require.Equal(t, []string{"mail", "reports"}, heldQueues(), "other is worked by node-b, which is not held")

	b.clock.Advance(ttl)
	beat("node-a", true, []string{"mail", "other"}, []string{"mail", "other"})
	beat("node-b", true, []string{"other"}, []string{"other"})
	require.Equal(t, []string{"mail", "other"}, heldQueues(), "node-c is dead: it holds nothing back")

	beat("node-a", false, []string{"mail", "other"}, nil)
	require.Empty(t, heldQueues(), "node-a takes new jobs again")
	nodes, err = b.store.NodeList(ctx)
	require.NoError(t, err)
	require.False(t, nodes[0].Holding, "the heartbeat updates the state")
	require.Empty(t, nodes[0].HeldQueues)
}

func (b *bundle) elect(t *testing.T, node string, ttl time.Duration) *hoppertype.Leadership {
	t.Helper()
	l, err := b.store.LeaderElect(t.Context(), &store.LeaderParams{NodeID: node, TTL: ttl})
	require.NoError(t, err)
	return l
}

// One leader at a time; the lease passes only when it expires, and the term grows each time
// it changes hands (never on a renewal).
func clusterLeaderExclusive(t *testing.T, b *bundle) {
	const ttl = 10 * time.Second
	l := b.elect(t, "node-a", ttl)
	require.Equal(t, "node-a", l.NodeID)
	require.Equal(t, int64(1), l.Term)
	sameTime(t, Start.Add(ttl), l.ExpiresAt, "expiry")

	require.Equal(t, "node-a", b.elect(t, "node-b", ttl).NodeID, "a live lease is not taken")
	b.clock.Advance(5 * time.Second)
	l = b.elect(t, "node-a", ttl)
	require.Equal(t, int64(1), l.Term, "renewal keeps the term")
	sameTime(t, Start.Add(15*time.Second), l.ExpiresAt, "renewal moves expiry")

	b.clock.Advance(10 * time.Second) // node-a's lease expires exactly now
	l = b.elect(t, "node-b", ttl)
	require.Equal(t, "node-b", l.NodeID, "an expired lease is taken")
	require.Equal(t, int64(2), l.Term)
	l = b.elect(t, "node-a", ttl)
	require.Equal(t, "node-b", l.NodeID, "the old leader cannot take it back while it is live")
	require.Equal(t, int64(2), l.Term)
}

func clusterLeaderResign(t *testing.T, b *bundle) {
	const ttl = time.Minute
	b.elect(t, "node-a", ttl)
	require.NoError(t, b.store.LeaderResign(t.Context(), "node-b"), "resigning a lease one does not hold is a no-op")
	require.Equal(t, "node-a", b.elect(t, "node-b", ttl).NodeID)
	require.NoError(t, b.store.LeaderResign(t.Context(), "node-a"))
	l := b.elect(t, "node-b", ttl)
	require.Equal(t, "node-b", l.NodeID, "a resigned lease is free at once")
	require.Equal(t, int64(2), l.Term)
}

// The running jobs of a node that stopped heartbeating go back to the queue without using an
// attempt; a live node's long-running job is left alone.
func clusterRescueDeadNodes(t *testing.T, b *bundle) {
	ctx := t.Context()
	const nodeTTL = 30 * time.Second
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: workerA, Host: "h", PID: 1}))
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: workerB, Host: "h", PID: 2}))
	dead := b.running(t) // claimed by workerA
	queue := "q-" + newID(t)
	b.insert(t, inQueue(queue))
	alive := b.claimAs(t, &store.ClaimParams{Queue: queue, Limit: 1, WorkerID: workerB, LeaseDuration: time.Hour})[0]

	b.clock.Advance(nodeTTL)
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: workerB, Host: "h", PID: 2}))
	b.clock.Advance(time.Second)
	res, err := b.store.JobRescueDeadNodes(ctx, &store.RescueDeadParams{NodeTTL: nodeTTL})
	require.NoError(t, err)
	require.Equal(t, []string{dead.ID}, res.JobIDs)
	require.Equal(t, []string{dead.Queue}, res.Queues)

	job := b.get(t, dead.ID)
	require.Equal(t, hoppertype.StateQueued, job.State)
	require.Equal(t, dead.Attempt-1, job.Attempt, "the attempt is given back")
	as := b.attempts(t, dead.ID)
	require.Len(t, as, 1)
	require.Equal(t, hoppertype.OutcomeLeaseExpired, as[0].Outcome)
	require.Equal(t, workerA, as[0].WorkerID)
	require.Contains(t, as[0].Error, workerA)
	evs := b.events(t, dead.ID)
	require.Equal(t, hoppertype.ActorLeader, evs[len(evs)-1].Actor)
	require.ErrorIs(t, b.finish(t, finishing(dead, hoppertype.StateCompleted)), store.ErrLeaseLost)

	require.Equal(t, hoppertype.StateRunning, b.get(t, alive.ID).State, "a live node's job is left alone")
	nodes, err := b.store.NodeList(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 1, "the dead node is deregistered")
	require.Equal(t, workerB, nodes[0].ID)
}

// The process that runs the rescue is alive whatever its heartbeat says (it was paused, or its
// clock jumped, and rescues before its next heartbeat): its running jobs stay with it and its
// registration stays, through JobRescueDeadNodes and through the leader's JobRescuePass; another
// node as stale is dead.
func clusterRescueSparesSelf(t *testing.T, b *bundle) {
	ctx := t.Context()
	const nodeTTL = 30 * time.Second
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: workerA, Host: "h", PID: 1}))
	require.NoError(t, b.store.NodeHeartbeat(ctx, &hoppertype.Node{ID: workerB, Host: "h", PID: 2}))
	mine := b.running(t) // claimed by workerA
	queue := "q-" + newID(t)
	b.insert(t, inQueue(queue))
	other := b.claimAs(t, &store.ClaimParams{Queue: queue, Limit: 1, WorkerID: workerB, LeaseDuration: time.Hour})[0]
	queue2 := "q-" + newID(t)
	b.insert(t, inQueue(queue2))
	mine2 := b.claimAs(t, &store.ClaimParams{Queue: queue2, Limit: 1, WorkerID: workerA, LeaseDuration: time.Hour})[0]

	b.clock.Advance(2 * nodeTTL)
	res, err := b.store.JobRescueDeadNodes(ctx, &store.RescueDeadParams{NodeTTL: nodeTTL, Self: workerA})
	require.NoError(t, err)
	require.Equal(t, []string{other.ID}, res.JobIDs, "the other stale node is dead")
	pass, err := b.store.JobRescuePass(ctx, &store.RescuePassParams{Dead: &store.RescueDeadParams{NodeTTL: nodeTTL, Self: workerA}})
	require.NoError(t, err)
	require.Empty(t, pass.Dead.JobIDs)
	for _, j := range []*hoppertype.JobRow{mine, mine2} {
		got := b.get(t, j.ID)
		require.Equal(t, hoppertype.StateRunning, got.State, "the caller's own job is left to its lease")
		require.Equal(t, j.Token, got.Token)
	}
	nodes, err := b.store.NodeList(ctx)
	require.NoError(t, err)
	require.Len(t, nodes, 1, "the other node is deregistered, the caller's stays")
	require.Equal(t, workerA, nodes[0].ID)
	require.NoError(t, b.finish(t, finishing(mine2, hoppertype.StateCompleted)), "its attempt still ends normally")

	res, err = b.store.JobRescueDeadNodes(ctx, &store.RescueDeadParams{NodeTTL: nodeTTL})
	require.NoError(t, err)
	require.Equal(t, []string{mine.ID}, res.JobIDs, "rescued by any other process")
}

// An idle node holds no jobs and does not heartbeat until it does: the dead-node rescue leaves
// it alone however old its heartbeat, even with a job it claimed after its idle heartbeat
// (that job's lease expires instead), while a node that is not idle is dead after NodeTTL. An
// idle node counts as live for the held queues. After store.IdleNodeTTL it is removed.
func clusterIdleNodes(t *testing.T, b *bundle) {
	ctx := t.Context()
	const nodeTTL = 30 * time.Second
	beat := func(n *hoppertype.Node) {
		t.Helper()
		require.NoError(t, b.store.NodeHeartbeat(ctx, n))
	}
	rescueDead := func() *store.RescueResult {
		t.Helper()
		res, err := b.store.JobRescueDeadNodes(ctx, &store.RescueDeadParams{NodeTTL: nodeTTL})
		require.NoError(t, err)
		return res
	}
	nodeIDs := func() []string {
		t.Helper()
		nodes, err := b.store.NodeList(ctx)
		require.NoError(t, err)
		var out []string
		for _, n := range nodes {
			out = append(out, n.ID)
		}
		return out
	}
	beat(&hoppertype.Node{ID: workerA, Host: "h", PID: 1, Idle: true, Queues: []string{"mail"}})
	beat(&hoppertype.Node{ID: workerB, Host: "h", PID: 2})
	claimedIdle := b.running(t) // by workerA, after its idle heartbeat: it crashes before the next
	queue := "q-" + newID(t)
	b.insert(t, inQueue(queue))
	dead := b.claimAs(t, &store.ClaimParams{Queue: queue, Limit: 1, WorkerID: workerB, LeaseDuration: time.Hour})[0]

	b.clock.Advance(nodeTTL + time.Second)
	beat(&hoppertype.Node{ID: "node-c", Host: "h", PID: 3, Holding: true, Queues: []string{"mail"}, HeldQueues: []string{"mail"}})
	held, err := b.store.NodeHeldQueues(ctx, nodeTTL)
	require.NoError(t, err)
	require.Empty(t, held, "the idle node, its heartbeat older than NodeTTL, is live and works mail without holding it")

	res := rescueDead()
	require.Equal(t, []string{dead.ID}, res.JobIDs, "the node that is not idle is dead; the idle one is not")
	require.Equal(t, hoppertype.StateQueued, b.get(t, dead.ID).State)
	got := b.get(t, claimedIdle.ID)
	require.Equal(t, hoppertype.StateRunning, got.State, "the idle node's job is left to its lease")
	require.Equal(t, workerA, got.WorkerID)
	require.Equal(t, []string{workerA, "node-c"}, nodeIDs(), "the dead node is removed, the idle one stays")

	expired, err := b.store.JobRescueExpired(ctx, &store.RescueParams{})
	require.NoError(t, err)
	require.Equal(t, []string{claimedIdle.ID}, expired.JobIDs, "its lease expired: rescued as any other")

	b.clock.Advance(store.IdleNodeTTL - nodeTTL - 2*time.Second) // the idle heartbeat is a second short of IdleNodeTTL old
	beat(&hoppertype.Node{ID: "node-c", Host: "h", PID: 3})
	rescueDead()
	require.Equal(t, []string{workerA, "node-c"}, nodeIDs(), "an idle node stays for IdleNodeTTL")

	b.clock.Advance(time.Second)
	pass, err := b.store.JobRescuePass(ctx, &store.RescuePassParams{Dead: &store.RescueDeadParams{NodeTTL: nodeTTL}})
	require.NoError(t, err)
	require.Empty(t, pass.Dead.JobIDs)
	require.Equal(t, []string{"node-c"}, nodeIDs(), "an idle node gone quiet for IdleNodeTTL is removed")
}
