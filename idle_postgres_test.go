package hopper

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/stretchr/testify/require"
)

type wakeArgs struct {
	Name string `json:"name"`
}

func (wakeArgs) Kind() string { return "wake" }

// hearingStore is the leader's store: it counts the leader's looks for due jobs and for
// schedules, and notes how many had started when its subscription came up, so that the test
// knows when the looks the subscription made the leader take are over.
type hearingStore struct {
	*postgres.Store
	mu             sync.Mutex
	subscribed     bool
	mark           [2]int // looks started when the subscription came up
	started, ended [2]int // [0] promotions of due jobs, [1] reads of due schedules
}

func (s *hearingStore) Subscribe(ctx context.Context, fn func(store.Notification)) error {
	return s.Store.Subscribe(ctx, func(n store.Notification) {
		if n.Kind == store.Subscribed {
			s.mu.Lock()
			s.subscribed, s.mark = true, s.started
			s.mu.Unlock()
		}
		fn(n)
	})
}

func (s *hearingStore) look(i int) func() {
	s.mu.Lock()
	s.started[i]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.ended[i]++
		s.mu.Unlock()
	}
}

func (s *hearingStore) JobPromoteScheduled(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	defer s.look(0)()
	return s.Store.JobPromoteScheduled(ctx, p)
}

func (s *hearingStore) ScheduleDue(ctx context.Context, now time.Time, limit int) ([]*store.Schedule, time.Time, error) {
	defer s.look(1)()
	return s.Store.ScheduleDue(ctx, now, limit)
}

// heard reports whether the subscription is up and the looks it made the leader take (a
// subscription nudges both loops) are over: they have planned their next looks a minute
// away, counting on the notifications.
func (s *hearingStore) heard() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subscribed && s.lookedSince(0, s.mark[0]) && s.lookedSince(1, s.mark[1])
}

// schedulesRead returns a function that reports whether a read of due schedules started
// since the call, and none is under way.
func (s *hearingStore) schedulesRead() func() bool {
	s.mu.Lock()
	n := s.started[1]
	s.mu.Unlock()
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.lookedSince(1, n)
	}
}

// lookedSince reports whether a look of kind i started after the first n, and none is under
// way. s.mu must be held.
func (s *hearingStore) lookedSince(i, n int) bool {
	return s.started[i] > n && s.ended[i] == s.started[i]
}

// On PostgreSQL an idle leader looks for due jobs and schedules only once a minute while its
// notifications arrive, yet a job that another process scheduled starts when it is due, and a
// schedule another process added fires on time: the triggers announce both (s:<run_at>, S).
// Without the announcements the job would wait for the leader's next look, up to a minute.
// Every process here runs on one fake clock, which the test moves only to the job's run_at and
// the schedule's first fire: a job that starts, starts without the leader's next look.
func TestTheLeaderHearsOfJobsAndSchedulesFromOtherProcesses(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	schema := pgtest.FreshSchema(t, "hopper_wake_")
	clk := clock.NewFake(testStart)
	open := func() *postgres.Store {
		st, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.URL(), Schema: schema, MaxConns: 4, Clock: clk})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	}
	type start struct {
		name string
		at   time.Time
	}
	started := make(chan start, 10)
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[wakeArgs]) error {
		started <- start{job.Args.Name, clk.Now()}
		return nil
	})
	st := &hearingStore{Store: open()}
	leader, err := NewClient(Config{Store: st, Workers: ws, WorkerID: "leader", Clock: clk})
	require.NoError(t, err)
	require.NoError(t, leader.Start(t.Context()))
	t.Cleanup(func() { stoptest.Within(t, leader, 10*time.Second) })
	require.Eventually(t, func() bool { return leader.IsLeader() && st.heard() }, 10*time.Second, time.Millisecond)

	// Another process (an enqueue-only client: no engine of its own runs) schedules a job.
	other, err := NewClient(Config{Store: open(), Clock: clk})
	require.NoError(t, err)
	runAt := clk.Now().Add(2 * time.Second)
	_, err = other.Enqueue(t.Context(), wakeArgs{Name: "later"}, &InsertOpts{RunAt: runAt})
	require.NoError(t, err)
	clk.Advance(2 * time.Second)
	s := recv(t, started)
	require.Equal(t, "later", s.name, "started when due, not at the leader's next look")
	require.False(t, s.at.Before(runAt), "not before its run_at")

	// The other process adds a schedule: the leader fires it at its first fire time. The
	// clock moves once the leader has read the schedule (a read that straddled the move would
	// find it due, and look again only a tick later).
	read := st.schedulesRead()
	_, err = other.AddSchedule(t.Context(), Schedule{Name: "soon", Every: 2 * time.Second, Kind: "wake",
		Args: wakeArgs{Name: "scheduled"}})
	require.NoError(t, err)
	require.Eventually(t, read, 10*time.Second, time.Millisecond, "the leader heard of the schedule")
	clk.Advance(2 * time.Second)
	s = recv(t, started)
	require.Equal(t, "scheduled", s.name, "fired on time, not at the leader's next look")
}
