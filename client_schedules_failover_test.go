package hopper

import (
	"context"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/stretchr/testify/require"
)

// crashingStore is a node's store that never hands the leader lease back: a node stopped on
// it leaves its lease to expire, as a crashed one would.
type crashingStore struct{ *postgres.Store }

func (crashingStore) LeaderResign(context.Context, string) error { return nil }

// The leader-failover test: two nodes on one PostgreSQL schema fire a per-second
// schedule (catch-up all) in real time; the leader stops hard mid-run and the other takes
// over. Every fire time from the first to the last must have exactly one job: none lost in
// the failover window, none enqueued twice.
//
// "Stops hard" is Stop with a context that is already canceled on a store that does not
// resign the lease. That is a crash as far as the other node can tell: the scheduler and
// elector loops end at once (a fire step in flight is canceled and rolls back), handlers are
// canceled, and the lease stays held until it expires, so the takeover waits out LeaderTTL.
// What differs from a kill -9 is only local: Stop writes back outcomes of running jobs and
// deregisters the node (e2e/cluster SIGKILLs real processes).
//
// The first leader holds a 7 s lease, the second a 1 s one: the takeover then comes 4.7 s or
// more after the stop, so the first fire times of the window are older than the new leader's
// grace (3 ticks, 3 s) when it gets to them, and only catch-up all brings them back.
func TestScheduleLeaderFailover(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	if testing.Short() {
		t.Skip("runs in real time for about 12 s")
	}
	schema := pgtest.FreshSchema(t, "hopper_sched_failover_")
	tick := Schedule{Name: "tick", Cron: "* * * * * *", Kind: "tick", CatchUp: CatchUpAll, Overlap: OverlapAllow}
	open := func(id string, ttl time.Duration) *Client {
		st, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.URL(), Schema: schema, MaxConns: 4})
		require.NoError(t, err)
		c, err := NewClient(Config{Store: crashingStore{st}, WorkerID: id, LeaderTTL: ttl,
			NodeTTL: 10 * time.Second, Schedules: []Schedule{tick}})
		require.NoError(t, err)
		require.NoError(t, c.Start(t.Context()))
		t.Cleanup(func() {
			stoptest.Within(t, c, 10*time.Second)
			st.Close()
		})
		return c
	}
	a := open("node-a", 7*time.Second)
	require.Eventually(t, a.IsLeader, 5*time.Second, 10*time.Millisecond)
	b := open("node-b", time.Second)
	fires := func() []time.Time { return (&scheduleNode{client: b}).fireTimes(t, "tick") }

	require.Eventually(t, func() bool { return len(fires()) >= 3 }, 10*time.Second, 50*time.Millisecond)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	stoppedAt := time.Now()
	require.NoError(t, a.Stop(canceled))
	require.False(t, b.IsLeader())
	require.Eventually(t, b.IsLeader, 10*time.Second, 10*time.Millisecond)
	tookOver := time.Now()
	t.Logf("leader stopped hard; the other node leads %s later", tookOver.Sub(stoppedAt).Round(time.Millisecond))
	require.Eventually(t, func() bool {
		got := fires()
		return len(got) > 0 && got[len(got)-1].After(tookOver.Add(3*time.Second))
	}, 10*time.Second, 50*time.Millisecond)
	stoptest.Within(t, b, 10*time.Second)

	got := fires()
	require.True(t, got[0].Before(stoppedAt), "node-a fired before it stopped")
	for i := 1; i < len(got); i++ {
		require.Equal(t, time.Second, got[i].Sub(got[i-1]), "fire times %s and %s: a gap or a duplicate",
			got[i-1].Format(time.RFC3339Nano), got[i].Format(time.RFC3339Nano))
	}
	require.True(t, got[len(got)-1].After(tookOver), "node-b fired after it took over")
	caughtUp := 0
	for _, f := range got {
		if f.After(stoppedAt) && tookOver.Sub(f) > 3*time.Second {
			caughtUp++
		}
	}
	require.Positive(t, caughtUp, "fire times older than the grace when node-b took over")
	t.Logf("%d fire times from %s to %s, each enqueued once; %d caught up", len(got),
		got[0].Format(time.TimeOnly), got[len(got)-1].Format(time.TimeOnly), caughtUp)
}
