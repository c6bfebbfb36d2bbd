package hopper

import (
	"context"
	"errors"
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

// twoNodes starts two clients with workers on one SQLite file, sharing a fake clock.
func twoNodes(t *testing.T, ws *Workers) (a, b *Client, st *sqlite.Store, clk *clock.Fake) {
	t.Helper()
	clk = clock.NewFake(testStart)
	path := sqlitetest.Path(t)
	open := func(id string) (*Client, *sqlite.Store) {
		s, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clk})
		require.NoError(t, err)
		c, err := NewClient(Config{Store: s, Workers: ws, Clock: clk, PollInterval: time.Hour, WorkerID: id,
			LeaderTTL: 15 * time.Second, NodeTTL: 30 * time.Second})
		require.NoError(t, err)
		t.Cleanup(func() {
			stoptest.Within(t, c, 10*time.Second)
			require.NoError(t, s.Close())
		})
		return c, s
	}
	a, st = open("node-a")
	b, _ = open("node-b")
	require.NoError(t, a.Start(context.Background()))
	require.Eventually(t, a.IsLeader, 5*time.Second, time.Millisecond)
	require.NoError(t, b.Start(context.Background()))
	return a, b, st, clk
}

func TestOneLeaderAndFailover(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error { return nil })
	a, b, _, clk := twoNodes(t, ws)
	clk.Advance(5 * time.Second) // b's next election: a's lease is live
	require.Never(t, b.IsLeader, 50*time.Millisecond, time.Millisecond)
	require.True(t, a.IsLeader())
	require.Eventually(t, func() bool { return b.LeaderID() == "node-a" }, 5*time.Second, time.Millisecond,
		"b knows who leads")
	require.Equal(t, "node-a", a.LeaderID())

	// A job due in a minute: only a leader promotes it. a stops (resigning); b takes over.
	res, err := b.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Delay: time.Minute})
	require.NoError(t, err)
	stoptest.Within(t, a, 10*time.Second)
	require.False(t, a.IsLeader())
	require.Eventually(t, func() bool {
		clk.Advance(time.Second)
		return b.IsLeader()
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, "node-b", b.LeaderID())
	clk.Advance(time.Minute)
	(&testBundle{client: b, clock: clk}).waitStepping(t, res.Job.ID, time.Second, StateCompleted)
	attempts, err := b.Attempts(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "node-b", attempts[0].WorkerID)
}

// A process that dies holding a job (here: a node that claimed it and then went silent) has its
// job requeued by the leader once the node's heartbeat is NodeTTL old, long before the job's
// lease would expire; a live node's job is never touched.
func TestDeadNodesJobsAreRescued(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	ran := make(chan string, 1)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		ran <- job.ID
		return nil
	})
	a, b, st, clk := twoNodes(t, ws)
	stoptest.Within(t, a, 10*time.Second) // keep the test to one live worker: b

	// Let b's worker run one job, so it is idle (it polls hourly) rather than about to claim.
	warm, err := b.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	require.Equal(t, warm.Job.ID, <-ran)
	(&testBundle{client: b, clock: clk}).waitFor(t, warm.Job.ID, StateCompleted)

	// A third process registers, claims a job under a one-hour lease and dies.
	require.NoError(t, st.NodeHeartbeat(t.Context(), &hoppertype.Node{ID: "node-dead", Host: "h", PID: 1}))
	// Inserted through the store, so b is not woken and (polling hourly) cannot take it first.
	ins, err := st.JobInsertMany(t.Context(), []*store.InsertParams{{ID: "job-of-dead-node", Kind: "send-email",
		Queue: "default", Args: []byte(`{}`), MaxAttempts: 3, Actor: "api"}})
	require.NoError(t, err)
	res := ins[0]
	claimed, _, err := st.JobClaim(t.Context(), &store.ClaimParams{Queue: "default", Limit: 1, WorkerID: "node-dead", LeaseDuration: time.Hour})
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	require.Eventually(t, func() bool {
		clk.Advance(time.Second) // b heartbeats and takes the lead; node-dead stays silent
		select {
		case id := <-ran:
			return id == res.Job.ID
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond)
	require.Less(t, clk.Now().Sub(testStart), time.Hour, "rescued by node death, not lease expiry")
	attempts, err := st.JobAttempts(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, OutcomeLeaseExpired, attempts[0].Outcome)
	require.Equal(t, "node-dead", attempts[0].WorkerID)
}

// electFails is a store whose leader election starts failing on demand (the database is
// unreachable for this node).
type electFails struct {
	*sqlite.Store
	fail atomic.Bool
}

func (s *electFails) LeaderElect(ctx context.Context, p *store.LeaderParams) (*hoppertype.Leadership, error) {
	if s.fail.Load() {
		return nil, errors.New("database unreachable")
	}
	return s.Store.LeaderElect(ctx, p)
}

// A leader that cannot renew its lease stops its duties within one lease period, measured
// from before its last successful renewal, so before any other node could take over.
func TestLeaderThatCannotRenewStopsWithinALease(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(testStart)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	defer st.Close()
	flaky := &electFails{Store: st}
	c, err := NewClient(Config{Store: flaky, Clock: clk, WorkerID: "node-a", LeaderTTL: 15 * time.Second})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	defer stoptest.Within(t, c, 10*time.Second)
	require.Eventually(t, c.IsLeader, 5*time.Second, time.Millisecond)

	flaky.fail.Store(true)
	clk.Advance(14 * time.Second) // renewals fail from now on; the lease is still live
	require.True(t, c.IsLeader())
	clk.Advance(time.Second) // one lease after the last successful renewal
	require.False(t, c.IsLeader(), "duties stop when the lease would have expired")
}
