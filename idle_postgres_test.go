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

type wakeArgs struct {
	Name string `json:"name"`
}

func (wakeArgs) Kind() string { return "wake" }

// On PostgreSQL an idle leader looks for due jobs and schedules only once a minute while its
// notifications arrive, yet a job that another process scheduled starts when it is due, and a
// schedule another process added fires on time: the triggers announce both (s:<run_at>, S).
// Without the announcements the job would wait for the leader's next look, up to a minute.
func TestTheLeaderHearsOfJobsAndSchedulesFromOtherProcesses(t *testing.T) {
	t.Parallel()
	pgtest.Require(t)
	if testing.Short() {
		t.Skip("runs in real time for a few seconds")
	}
	schema := pgtest.FreshSchema(t, "hopper_wake_")
	open := func() *postgres.Store {
		st, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.URL(), Schema: schema, MaxConns: 4})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	}
	started := make(chan string, 10)
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[wakeArgs]) error {
		started <- job.Args.Name
		return nil
	})
	leader, err := NewClient(Config{Store: open(), Workers: ws, WorkerID: "leader"})
	require.NoError(t, err)
	require.NoError(t, leader.Start(t.Context()))
	t.Cleanup(func() { stoptest.Within(t, leader, 10*time.Second) })
	require.Eventually(t, leader.IsLeader, 10*time.Second, 10*time.Millisecond)
	time.Sleep(time.Second) // its subscription is up: it now looks once a minute

	// Another process (an enqueue-only client: no engine of its own runs) schedules a job.
	other, err := NewClient(Config{Store: open()})
	require.NoError(t, err)
	runAt := time.Now().Add(2 * time.Second)
	_, err = other.Enqueue(t.Context(), wakeArgs{Name: "later"}, &InsertOpts{RunAt: runAt})
	require.NoError(t, err)
	select {
	case name := <-started:
		require.Equal(t, "later", name)
		require.False(t, time.Now().Before(runAt), "not before its run_at")
		require.Less(t, time.Since(runAt), 20*time.Second, "started when due, not at the leader's next look")
	case <-time.After(30 * time.Second):
		t.Fatal("the job scheduled elsewhere did not start within 30 s")
	}

	// The other process adds a schedule: the leader fires it at its first fire time.
	added := time.Now()
	_, err = other.AddSchedule(t.Context(), Schedule{Name: "soon", Every: 2 * time.Second, Kind: "wake",
		Args: wakeArgs{Name: "scheduled"}})
	require.NoError(t, err)
	select {
	case name := <-started:
		require.Equal(t, "scheduled", name)
		require.Less(t, time.Since(added), 20*time.Second, "fired on time, not at the leader's next look")
	case <-time.After(30 * time.Second):
		t.Fatal("the schedule added elsewhere did not fire within 30 s")
	}
}
