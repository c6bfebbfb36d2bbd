package hopper

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// downStore is a store that goes away for everyone: while down, every call of the engine's
// loops fails with ErrUnavailable, as when the database restarts or the network to it is cut.
// It counts the renewals and heartbeats that fail and that succeed.
type downStore struct {
	*sqlite.Store
	down                     atomic.Bool
	renewFailed, renewed     atomic.Int32
	heartFailed, heartbeated atomic.Int32
}

func (d *downStore) err() error {
	if d.down.Load() {
		return fmt.Errorf("dial tcp: connection refused: %w", store.ErrUnavailable)
	}
	return nil
}

func (d *downStore) JobExtendLeases(ctx context.Context, ps []*store.ExtendParams) ([]error, error) {
	if err := d.err(); err != nil {
		d.renewFailed.Add(1)
		return nil, err
	}
	errs, err := d.Store.JobExtendLeases(ctx, ps)
	if err == nil {
		d.renewed.Add(1)
	}
	return errs, err
}

func (d *downStore) NodeHeartbeat(ctx context.Context, n *hoppertype.Node) error {
	if err := d.err(); err != nil {
		d.heartFailed.Add(1)
		return err
	}
	err := d.Store.NodeHeartbeat(ctx, n)
	if err == nil {
		d.heartbeated.Add(1)
	}
	return err
}

func (d *downStore) LeaderElect(ctx context.Context, p *store.LeaderParams) (*hoppertype.Leadership, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Store.LeaderElect(ctx, p)
}

func (d *downStore) JobRescuePass(ctx context.Context, p *store.RescuePassParams) (*store.RescuePassResult, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Store.JobRescuePass(ctx, p)
}

func (d *downStore) JobPromoteScheduled(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Store.JobPromoteScheduled(ctx, p)
}

func (d *downStore) JobSweepExpired(ctx context.Context, p *store.SweepParams) (*store.SweepResult, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Store.JobSweepExpired(ctx, p)
}

func (d *downStore) JobClaim(ctx context.Context, p *store.ClaimParams) (jobs []*hoppertype.JobRow, hold store.Hold, err error) {
	if err := d.err(); err != nil {
		return nil, store.Hold{}, err
	}
	return d.Store.JobClaim(ctx, p)
}

func (d *downStore) JobFinishMany(ctx context.Context, ps []*store.FinishParams) ([]error, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	return d.Store.JobFinishMany(ctx, ps)
}

// outageNode is one healthy process, leader and worker, on a store that can go away, running
// one long job that honours its context. With another leader, node-0 (no workers) leads
// instead, on its own connection to the same file.
type outageNode struct {
	client      *Client
	store       *downStore
	clock       *clock.Fake
	leader      *Client    // node-0, with another leader
	leaderStore *downStore // node-0's, with another leader
	job         string
	release     func()       // the handler returns
	runs        atomic.Int32 // handler calls
	lost        atomic.Int32 // handler calls whose context was canceled
	leaderTTL   time.Duration
	// alive is a ghost's node (ghost) that step heartbeats while it is set: a live process
	// holding the ghost job. (A ghost named after a node's engine needs it: that engine does
	// not know of the job, so it is idle and does not heartbeat.)
	alive atomic.Pointer[string]
}

// outageConfig is the cluster timing of an outage test; zero fields take short defaults.
type outageConfig struct {
	lease, nodeTTL, leaderTTL time.Duration
	anotherLeader             bool // node-0 leads
}

func newOutageNode(t *testing.T, lease, nodeTTL time.Duration) *outageNode {
	return newOutageCluster(t, outageConfig{lease: lease, nodeTTL: nodeTTL})
}

func newOutageCluster(t *testing.T, oc outageConfig) *outageNode {
	t.Helper()
	if oc.leaderTTL == 0 {
		oc.leaderTTL = 3 * time.Second
	}
	n := &outageNode{clock: clock.NewFake(testStart), leaderTTL: oc.leaderTTL}
	path := sqlitetest.Path(t)
	open := func(id string, ws *Workers) (*Client, *downStore) {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: n.clock})
		require.NoError(t, err)
		ds := &downStore{Store: st}
		c, err := NewClient(Config{Store: ds, Workers: ws, Clock: n.clock, WorkerID: id,
			PollInterval: time.Hour, LeaseDuration: oc.lease, NodeTTL: oc.nodeTTL, LeaderTTL: oc.leaderTTL,
			RescueInterval: time.Second})
		require.NoError(t, err)
		require.NoError(t, c.Start(context.Background()))
		t.Cleanup(func() {
			stoptest.Within(t, c, 10*time.Second)
			require.NoError(t, st.Close())
		})
		return c, ds
	}
	if oc.anotherLeader {
		n.leader, n.leaderStore = open("node-0", nil)
		require.Eventually(t, n.leader.IsLeader, 5*time.Second, time.Millisecond)
	}
	release := make(chan struct{})
	n.release = sync.OnceFunc(func() { close(release) })
	started := make(chan struct{}, 10)
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		n.runs.Add(1)
		started <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			n.lost.Add(1)
			return ctx.Err()
		}
	})
	n.client, n.store = open("node-1", ws)
	t.Cleanup(n.release) // before Stop: a failed test leaves no handler waiting
	if !oc.anotherLeader {
		require.Eventually(t, n.client.IsLeader, 5*time.Second, time.Millisecond)
	}
	res, err := n.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	n.job = res.Job.ID
	recv(t, started)
	return n
}

// stepWhileLeading is step for a test that needs leader to keep its lease meanwhile: before
// each second it requires (waiting in real time for the store to show it) that leader has
// renewed the lease before less than half of its length was left, as it would on a real
// clock.
func (n *outageNode) stepWhileLeading(t *testing.T, leader string, d time.Duration) {
	t.Helper()
	for end := n.clock.Now().Add(d); n.clock.Now().Before(end); {
		require.Eventually(t, func() bool {
			due, err := n.store.Store.LeaderDue(t.Context(), &store.DueParams{})
			require.NoError(t, err)
			lease := due.Leader
			return lease != nil && lease.NodeID == leader && lease.ExpiresAt.Sub(n.clock.Now()) > n.leaderTTL/2
		}, 10*time.Second, time.Millisecond, "%s renews its lease", leader)
		n.step(t, time.Second)
	}
}

// step moves the clock forward by d, a second at a time, and heartbeats the ghost's node while
// it is alive. Before each second and after the last it waits until the loops wait on the
// clock again (settle), so that they never lag it: a leader's renewal that lagged the clock
// by tens of seconds would let its lease lapse, and another node take it.
func (n *outageNode) step(t *testing.T, d time.Duration) {
	t.Helper()
	n.stepBy(t, d, time.Second)
}

// stepBy is step in increments of inc. While the store is down a coarser step tests the same
// (no loop's call can succeed, whenever it comes) in fewer settles; once it is back, step's
// second keeps the loops' renewals on time.
func (n *outageNode) stepBy(t *testing.T, d, inc time.Duration) {
	t.Helper()
	for end := n.clock.Now().Add(d); n.clock.Now().Before(end); {
		if id := n.alive.Load(); id != nil {
			_ = n.store.Store.NodeHeartbeat(context.Background(), &hoppertype.Node{ID: *id, Host: "h", PID: 1})
		}
		n.settle(t)
		n.clock.Advance(min(inc, end.Sub(n.clock.Now())))
	}
	n.settle(t)
}

// settle waits until every loop of the cluster waits on the clock: node-1's producer and
// lease keeper, and each node's maintaining loops (maintainerTimers).
func (n *outageNode) settle(t *testing.T) {
	t.Helper()
	requireSettled(t, func() bool {
		want := 2 + maintainerTimers(n.client)
		if n.leader != nil {
			want += maintainerTimers(n.leader)
		}
		return n.clock.Pending() == want
	})
}

// maintainerTimers is how many of a maintaining client's loops wait on the clock between
// looks: its node heartbeat and its elector always, and its maintainer and its scheduler
// while it leads or, once it lost the lead, while they back off from a failing store (they
// look at the lead again only when their backoff is over; otherwise they wait for an
// election, not on the clock).
func maintainerTimers(c *Client) int {
	if c.IsLeader() {
		return 4
	}
	n := 2
	for _, l := range c.FailingLoops() {
		if l.Name == "leader maintenance" || l.Name == "fire schedules" {
			n++
		}
	}
	return n
}

// requireSettled waits (in real time, up to 10 s) until settled reports that the loops wait
// on the fake clock again.
func requireSettled(t *testing.T, settled func() bool) {
	t.Helper()
	require.Eventually(t, settled, 10*time.Second, 200*time.Microsecond, "the loops wait on the clock again")
}

// renewer names the loop that keeps a live worker's job from a rescue: the lease keeper or the
// node heartbeat, by its counters of failed and successful calls.
type renewer func(*downStore) (failed, ok *atomic.Int32)

func leaseKeeper(d *downStore) (failed, ok *atomic.Int32) { return &d.renewFailed, &d.renewed }
func nodeHeart(d *downStore) (failed, ok *atomic.Int32)   { return &d.heartFailed, &d.heartbeated }

// outage cuts the store off for longer than cut, then brings it back right after a failed
// try of the renewer r, so that its next try is a whole period (a third of its lease or
// NodeTTL) away: the worst case for a live worker. When that try is due it waits, on the real
// clock, until it has landed; then it lets the leader do many rescue passes.
func (n *outageNode) outage(t *testing.T, cut, period time.Duration, r renewer) {
	t.Helper()
	failed, ok := r(n.store)
	renewed := ok.Load()
	n.store.down.Store(true)
	n.stepBy(t, cut, 5*time.Second)
	before := failed.Load()
	for i := 0; failed.Load() == before; i++ {
		require.Less(t, i, 10_000, "the renewer tries during the outage")
		n.clock.Advance(100 * time.Millisecond)
		n.settle(t)
	}
	n.store.down.Store(false) // the renewer plans its next try from now (step settles first)
	n.step(t, period)
	require.Eventually(t, func() bool { return ok.Load() > renewed }, 10*time.Second, time.Millisecond,
		"the live node renews")
	n.step(t, time.Minute) // 60 rescue passes, the grace over
}

// ghost claims a job in the queue "ghosts" (which node-1 does not work) for worker, which
// heartbeats now and then dies (or is dead already), holding the job for lease.
func (n *outageNode) ghost(t *testing.T, worker string, lease time.Duration) string {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, n.store.Store.NodeHeartbeat(ctx, &hoppertype.Node{ID: worker, Host: "h", PID: 1}))
	ins, err := n.store.JobInsertMany(ctx, []*store.InsertParams{{ID: "ghost-job", Kind: "send-email",
		Queue: "ghosts", Args: []byte(`{}`), MaxAttempts: 3, Actor: hoppertype.ActorAPI}})
	require.NoError(t, err)
	claimed, _, err := n.store.Store.JobClaim(ctx, &store.ClaimParams{Queue: "ghosts", Limit: 1, WorkerID: worker,
		LeaseDuration: lease})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	return ins[0].Job.ID
}

func (n *outageNode) requireUntouched(t *testing.T) {
	t.Helper()
	job, err := n.client.Get(t.Context(), n.job)
	require.NoError(t, err)
	require.Equal(t, StateRunning, job.State)
	require.Zero(t, job.Rescues, "a live worker's job is not rescued")
	require.Equal(t, int32(1), n.runs.Load(), "the job runs once")
	require.Zero(t, n.lost.Load(), "its handler is not canceled")
}

// The store goes away for everyone for longer than the lease (or NodeTTL), then comes back.
// The leader gets its lease back within a second and its duties within their backoff (at most
// 36 s); the node's lease keeper (heartbeat) may retry only a third of the lease (NodeTTL),
// 60 s, later. The leader waits for it: nothing was wrong with the worker, so its job is
// neither rescued nor canceled, and no rescue is counted. The job of a worker that really died
// before the outage is rescued once the grace is over. On the old code the leader rescued the
// live worker's job at its first pass: Rescues 1, handler canceled.
func TestAnOutageDoesNotRescueLiveWorkers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		lease, nodeTTL time.Duration
		renewer        renewer
	}{
		{"lease expired", 3 * time.Minute, time.Hour, leaseKeeper},
		{"node dead", time.Hour, 3 * time.Minute, nodeHeart},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A leader lease of 30 s: renewed every 10 s of fake time, which the steps below
			// (a second each) leave the leader many looks of real time to do, even on a loaded
			// machine. With 3 s, the clock outran the renewals and leadership flapped, each
			// new leadership holding the rescues back again.
			n := newOutageCluster(t, outageConfig{lease: tc.lease, nodeTTL: tc.nodeTTL, leaderTTL: 30 * time.Second})
			ghost := n.ghost(t, "ghost", tc.lease)
			period := min(tc.lease, tc.nodeTTL)
			n.outage(t, period+10*time.Second, period/3, tc.renewer)

			// The dead worker's job is rescued all the same, once the grace is over.
			var job *JobRow
			require.Eventually(t, func() bool {
				n.clock.Advance(time.Second) // the leader's passes may lag the clock; a second a look keeps a loaded machine within the bound
				var err error
				job, err = n.client.Get(t.Context(), ghost)
				require.NoError(t, err)
				if job.State != StateQueued && testing.Verbose() {
					t.Logf("at %s the ghost job is %s; leader: %v", n.clock.Now().Format(time.TimeOnly), job.State, n.client.IsLeader())
				}
				return job.State == StateQueued
			}, 10*time.Second, time.Millisecond, "the dead worker's job is rescued")
			require.Equal(t, 1, job.Rescues)
			n.requireUntouched(t)

			n.release()
			job = (&testBundle{client: n.client, clock: n.clock}).waitFor(t, n.job, StateCompleted)
			require.Equal(t, 1, job.Attempt)
			attempts, err := n.client.Attempts(t.Context(), n.job)
			require.NoError(t, err)
			require.Len(t, attempts, 1)
			require.Equal(t, OutcomeOK, attempts[0].Outcome)
		})
	}
}

// Four outages longer than the lease, and more than the default MaxRescues: a healthy long
// job keeps running and completes. On the old code each outage counted a rescue and the
// fourth made the job a worker_lost dead letter.
func TestRepeatedOutagesDoNotDeadLetterALiveJob(t *testing.T) {
	t.Parallel()
	n := newOutageNode(t, 3*time.Minute, time.Hour)
	for range DefaultMaxRescues + 1 {
		n.outage(t, 3*time.Minute+10*time.Second, time.Minute, leaseKeeper)
	}
	n.requireUntouched(t)
	n.release()
	(&testBundle{client: n.client, clock: n.clock}).waitFor(t, n.job, StateCompleted)
}

// The leader dies during an outage; when the store comes back another node takes over. It
// never led, so its duties never failed, but its elections did: it waits the grace too, and
// does not rescue its own live job. On the old code it rescued it at once.
func TestANewLeaderAfterAnOutageDoesNotRescueLiveWorkers(t *testing.T) {
	t.Parallel()
	// NodeTTL 4 min: node-1 takes over long after its start (3 min outage) by the measure of
	// its grace (a third of 4 min, plus 1 s), so only its failed elections hold its rescues.
	n := newOutageCluster(t, outageConfig{lease: 3 * time.Minute, nodeTTL: 4 * time.Minute, anotherLeader: true})
	require.False(t, n.client.IsLeader())
	n.leaderStore.down.Store(true) // node-0 is gone: its store never comes back
	n.outage(t, 3*time.Minute+10*time.Second, time.Minute, leaseKeeper)
	require.Eventually(t, func() bool {
		n.clock.Advance(100 * time.Millisecond) // its elections may lag the fast clock
		return n.client.IsLeader()
	}, 5*time.Second, time.Millisecond, "node-1 took over")
	n.requireUntouched(t)
}

// A leader dies while the store is fine. The node that takes over has seen no failure, so it
// owes no grace: it rescues the dead leader's jobs as soon as it leads (their node being dead
// by then), not a grace later.
func TestAFailoverWithoutAnOutageRescuesAtOnce(t *testing.T) {
	t.Parallel()
	n := newOutageCluster(t, outageConfig{lease: 30 * time.Second, nodeTTL: 15 * time.Second,
		leaderTTL: 30 * time.Second, anotherLeader: true})
	ghost := n.ghost(t, "node-0", time.Hour) // node-0 holds a job
	node0 := "node-0"
	n.alive.Store(&node0)
	n.stepWhileLeading(t, "node-0", time.Minute) // node-1 has long been up
	require.False(t, n.client.IsLeader(), "node-0 still leads")
	n.leaderStore.down.Store(true) // node-0 dies: it neither heartbeats nor renews its lease
	n.alive.Store(nil)
	// Its leader lease lapses 20–30 s later, by then its node is dead (15 s).
	var tookOver time.Time
	for i := 0; !n.client.IsLeader(); i++ {
		require.Less(t, i, 10_000, "node-1 takes over")
		n.clock.Advance(100 * time.Millisecond)
		n.settle(t)
	}
	tookOver = n.clock.Now()
	var job *JobRow
	for i := 0; ; i++ {
		var err error
		job, err = n.client.Get(t.Context(), ghost)
		require.NoError(t, err)
		if job.State == StateQueued {
			break
		}
		require.Less(t, i, 10_000, "node-1 rescues node-0's job")
		n.clock.Advance(100 * time.Millisecond)
		n.settle(t)
	}
	require.Less(t, n.clock.Now().Sub(tookOver), 3*time.Second,
		"rescued at once, not a grace (NodeTTL/3 + RescueInterval = 6 s) later")
	require.Equal(t, 1, job.Rescues)
}

// A process that starts (a server restarted, say) cannot tell whether the workers it finds
// could renew their leases just before: its remote workers could not while it was down. So
// its first rescue waits the grace, and a worker that renews meanwhile keeps its job; one that
// stops renewing loses it as usual. On the old code the expired lease was rescued at once.
func TestANewProcessGivesWorkersTimeToRenew(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(testStart)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	ctx := t.Context()
	_, err = st.JobInsertMany(ctx, []*store.InsertParams{{ID: "remote-job", Kind: "send-email", Queue: "default",
		Args: []byte(`{}`), MaxAttempts: 3, Actor: hoppertype.ActorAPI}})
	require.NoError(t, err)
	claimed, _, err := st.JobClaim(ctx, &store.ClaimParams{Queue: "default", Limit: 1, WorkerID: "remote-1",
		LeaseDuration: 3 * time.Second})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	clk.Advance(10 * time.Second) // the server was down: the remote worker could not renew

	// Default lease (30 s), RescueInterval 1 s: the grace is 11 s.
	c, err := NewClient(Config{Store: st, Clock: clk, WorkerID: "server", RescueInterval: time.Second})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { stoptest.Within(t, c, 10*time.Second) })
	require.Eventually(t, c.IsLeader, 5*time.Second, time.Millisecond)
	// Its node heartbeat, its elector and, while it leads, its maintainer and scheduler wait
	// on the clock between looks.
	settle := func() {
		t.Helper()
		requireSettled(t, func() bool { return clk.Pending() == maintainerTimers(c) })
	}

	state := func() JobState {
		job, err := c.Get(ctx, "remote-job")
		require.NoError(t, err)
		return job.State
	}
	renew := func() {
		errs, err := st.JobExtendLeases(ctx, []*store.ExtendParams{{ID: "remote-job", Token: claimed[0].Token,
			Duration: 3 * time.Second}})
		require.NoError(t, err)
		require.NoError(t, errs[0])
	}
	for range 5 { // the worker reconnects after 5 s, then renews every second
		settle()
		clk.Advance(time.Second)
	}
	settle()
	require.Equal(t, StateRunning, state(), "not rescued before the worker could renew")
	for range 30 {
		renew()
		settle()
		clk.Advance(time.Second)
	}
	settle()
	require.Equal(t, StateRunning, state(), "a worker that renews keeps its job")
	require.Eventually(t, func() bool { // it stops renewing
		clk.Advance(100 * time.Millisecond)
		return state() == StateQueued
	}, 10*time.Second, time.Millisecond)
}
