package hopper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// frozen is a worker process's store that can be cut off: from then on the process is hung
// (a poison job deadlocked it, or it was SIGSTOPped) and nothing it does reaches the
// database. It neither renews its leases nor heartbeats nor writes outcomes.
type frozen struct {
	*sqlite.Store
	cut atomic.Bool
}

var errFrozen = errors.New("process hung")

func (f *frozen) JobClaim(ctx context.Context, p *store.ClaimParams) (jobs []*hoppertype.JobRow, hold store.Hold, err error) {
	if f.cut.Load() {
		return nil, store.Hold{}, errFrozen
	}
	return f.Store.JobClaim(ctx, p)
}

func (f *frozen) JobExtendLeases(ctx context.Context, p []*store.ExtendParams) ([]error, error) {
	if f.cut.Load() {
		return nil, errFrozen
	}
	return f.Store.JobExtendLeases(ctx, p)
}

func (f *frozen) JobFinishMany(ctx context.Context, p []*store.FinishParams) ([]error, error) {
	if f.cut.Load() {
		return nil, errFrozen
	}
	return f.Store.JobFinishMany(ctx, p)
}

func (f *frozen) NodeHeartbeat(ctx context.Context, n *hoppertype.Node) error {
	if f.cut.Load() {
		return errFrozen
	}
	return f.Store.NodeHeartbeat(ctx, n)
}

// A poison job hangs every worker process that runs it. Each time, the leader rescues it
// once the lease runs out; after MaxRescues rescues the next loss fails it with outcome
// worker_lost, a dead letter the on-dead-letter hook hears of: it never loops.
func TestPoisonJobEndsInTheDeadLetterQueue(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(testStart)
	path := sqlitetest.Path(t)
	open := func() *sqlite.Store {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clk})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		return st
	}
	// The leader works no jobs; its NodeTTL is long, so the leases' expiry is what rescues.
	dead := make(chan *JobRow, 10)
	leader, err := NewClient(Config{Store: open(), Clock: clk, WorkerID: "leader", NodeTTL: time.Hour,
		OnDeadLetter: func(_ context.Context, job *JobRow) { dead <- job }})
	require.NoError(t, err)
	require.NoError(t, leader.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, leader.Stop(context.Background())) })
	require.Eventually(t, leader.IsLeader, 5*time.Second, time.Millisecond)

	res, err := leader.Enqueue(t.Context(), sendEmail{To: "poison"}, nil)
	require.NoError(t, err)
	id := res.Job.ID

	started := make(chan int64, 1)
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		started <- job.Token
		<-ctx.Done() // hangs until its process is stopped
		return ctx.Err()
	})
	losses := DefaultMaxRescues + 1
	for n := 1; n <= losses; n++ {
		st := &frozen{Store: open()}
		w, err := NewClient(Config{Store: st, Workers: ws, Clock: clk, WorkerID: fmt.Sprintf("worker-%d", n),
			PollInterval: time.Hour, LeaseDuration: 30 * time.Second, DisableMaintenance: true})
		require.NoError(t, err)
		require.NoError(t, w.Start(context.Background()))
		t.Cleanup(func() { // the process comes back and is stopped; its reports are stale
			st.cut.Store(false)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			require.NoError(t, w.Stop(ctx))
		})
		token := recv(t, started)
		st.cut.Store(true)

		want := StateQueued
		if n == losses {
			want = StateFailed
		}
		var job *JobRow
		require.Eventually(t, func() bool {
			clk.Advance(time.Second)
			job, err = leader.Get(context.Background(), id)
			require.NoError(t, err)
			return job.Token == token && job.State != StateRunning
		}, 10*time.Second, time.Millisecond, "loss %d", n)
		require.Equal(t, want, job.State, "loss %d", n)
		require.Equal(t, min(n, DefaultMaxRescues), job.Rescues, "loss %d", n)
	}

	job := recv(t, dead)
	require.Equal(t, id, job.ID)
	require.Equal(t, StateFailed, job.State)
	require.Equal(t, store.WorkerLostError(losses, DefaultMaxRescues, "lease expired before the attempt ended"), job.LastError)
	require.False(t, job.ExpiresAt.IsZero(), "kept for the dead-letter retention")
	attempts, err := leader.Attempts(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, attempts, losses, "run once per worker, never again")
	for i, a := range attempts {
		require.Equal(t, fmt.Sprintf("worker-%d", i+1), a.WorkerID)
		want := OutcomeLeaseExpired
		if i == losses-1 {
			want = OutcomeWorkerLost
		}
		require.Equal(t, want, a.Outcome, "attempt %d", i+1)
	}
	dls, err := leader.DeadLetters(t.Context(), nil)
	require.NoError(t, err)
	require.Equal(t, []string{id}, jobIDs(dls.Jobs()))
	require.Never(t, func() bool { return len(dead) > 0 }, 20*time.Millisecond, time.Millisecond, "the hook hears once")
}

// A job whose worker node dies (it stops heartbeating, its lease still long) more often than
// its MaxRescues allow fails with outcome worker_lost, and the on-dead-letter hook hears of it
// as of any dead letter.
func TestDeadNodesJobOutOfRescuesReachesTheDeadLetterHook(t *testing.T) {
	t.Parallel()
	clk := clock.NewFake(testStart)
	path := sqlitetest.Path(t)
	open := func() *sqlite.Store {
		st, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, Clock: clk})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, st.Close()) })
		return st
	}
	dead := make(chan *JobRow, 10)
	leader, err := NewClient(Config{Store: open(), Clock: clk, WorkerID: "leader", NodeTTL: 30 * time.Second,
		OnDeadLetter: func(_ context.Context, job *JobRow) { dead <- job }})
	require.NoError(t, err)
	require.NoError(t, leader.Start(context.Background()))
	t.Cleanup(func() { require.NoError(t, leader.Stop(context.Background())) })
	require.Eventually(t, leader.IsLeader, 5*time.Second, time.Millisecond)
	res, err := leader.Enqueue(t.Context(), sendEmail{To: "poison"}, &InsertOpts{MaxRescues: 1})
	require.NoError(t, err)
	id := res.Job.ID

	started := make(chan int64, 1)
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		started <- job.Token
		<-ctx.Done()
		return ctx.Err()
	})
	const losses = 2 // one rescue, then the loss that fails the job
	for n := 1; n <= losses; n++ {
		node := fmt.Sprintf("worker-%d", n)
		st := &frozen{Store: open()}
		w, err := NewClient(Config{Store: st, Workers: ws, Clock: clk, WorkerID: node, PollInterval: time.Hour,
			LeaseDuration: time.Hour, NodeTTL: 30 * time.Second, DisableMaintenance: true})
		require.NoError(t, err)
		require.NoError(t, w.Start(context.Background()))
		t.Cleanup(func() {
			st.cut.Store(false)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			require.NoError(t, w.Stop(ctx))
		})
		token := recv(t, started)
		require.Eventually(t, func() bool { // its heartbeat says it holds a job: it can be taken for dead
			ns, err := leader.Nodes(context.Background())
			require.NoError(t, err)
			return slices.ContainsFunc(ns, func(x *Node) bool { return x.ID == node && !x.Idle })
		}, 5*time.Second, time.Millisecond)
		st.cut.Store(true)

		var job *JobRow
		require.Eventually(t, func() bool {
			clk.Advance(time.Second)
			job, err = leader.Get(context.Background(), id)
			require.NoError(t, err)
			return job.Token == token && job.State != StateRunning
		}, 10*time.Second, time.Millisecond, "loss %d", n)
		require.Less(t, clk.Now().Sub(testStart), time.Hour, "rescued as its node died, not as its lease ran out")
		want := StateQueued
		if n == losses {
			want = StateFailed
		}
		require.Equal(t, want, job.State, "loss %d", n)
		require.Equal(t, 1, job.Rescues, "loss %d", n)
	}

	var job *JobRow
	select {
	case job = <-dead:
	case <-time.After(10 * time.Second):
		t.Fatal("the on-dead-letter hook never heard of the job its dead nodes lost")
	}
	require.Equal(t, id, job.ID)
	require.Equal(t, StateFailed, job.State)
	require.Equal(t, store.WorkerLostError(losses, 1, "node worker-2 stopped heartbeating"), job.LastError)
	attempts, err := leader.Attempts(t.Context(), id)
	require.NoError(t, err)
	require.Len(t, attempts, losses)
	require.Equal(t, OutcomeLeaseExpired, attempts[0].Outcome, "the first loss was rescued")
	require.Equal(t, OutcomeWorkerLost, attempts[1].Outcome)
}

type rescueArgs struct{}

func (rescueArgs) Kind() string { return "fragile" }
func (rescueArgs) InsertOpts() InsertOpts {
	return InsertOpts{MaxRescues: 5}
}

// A job's bound comes from its options, then its kind's, then the client's (default 3);
// UnlimitedRescues lifts it; anything else outside 1–1000 is refused naming max_rescues.
func TestMaxRescuesPerJobKindAndClient(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, func(c *Config) { c.MaxRescues = 7 })
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		args JobArgs
		opts *InsertOpts
		want int
	}{
		{"client default", sendEmail{}, nil, 7},
		{"per job", sendEmail{}, &InsertOpts{MaxRescues: 2}, 2},
		{"per kind", rescueArgs{}, nil, 5},
		{"job over kind", rescueArgs{}, &InsertOpts{MaxRescues: 1}, 1},
		{"unbounded", sendEmail{}, &InsertOpts{MaxRescues: UnlimitedRescues}, -1},
	} {
		res, err := b.client.Enqueue(ctx, tc.args, tc.opts)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, res.Job.MaxRescues, tc.name)
		job, err := b.client.Get(ctx, res.Job.ID)
		require.NoError(t, err)
		require.Equal(t, tc.want, job.MaxRescues, tc.name)
	}
	for _, n := range []int{-2, 1001} {
		_, err := b.client.Enqueue(ctx, sendEmail{}, &InsertOpts{MaxRescues: n})
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "max_rescues %d", n)
		require.Equal(t, "max_rescues", ve.Field)
	}

	def := setup(t, nil, nil)
	res, err := def.client.Enqueue(ctx, sendEmail{}, nil)
	require.NoError(t, err)
	require.Equal(t, DefaultMaxRescues, res.Job.MaxRescues)
	for _, n := range []int{-2, 1001} {
		_, err := NewClient(Config{Store: def.store, MaxRescues: n})
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, "Config.MaxRescues %d", n)
		require.Equal(t, "Config.MaxRescues", ve.Field)
	}
}

// A schedule's jobs take the client's bound: schedules have none of their own.
func TestScheduledJobsTakeTheClientsMaxRescues(t *testing.T) {
	t.Parallel()
	n := openNode(t, t.TempDir()+"/hopper.db", clock.NewFake(testStart), nil, func(c *Config) { c.MaxRescues = 6 })
	_, err := n.client.AddSchedule(t.Context(), Schedule{Name: "minutely", Cron: "* * * * *", Args: digest{}})
	require.NoError(t, err)
	n.advanceTo(t, "minutely", testStart.Add(time.Minute))
	res, err := n.client.List(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, res.Jobs, 1)
	require.Equal(t, "minutely", res.Jobs[0].ScheduleID)
	require.Equal(t, 6, res.Jobs[0].MaxRescues)
}
