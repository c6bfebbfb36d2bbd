package engine

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// outageStore is a real store that can be cut off: while down, every call the engine makes
// fails with store.ErrUnavailable, as a database that went away, and is counted.
type outageStore struct {
	*sqlite.Store
	down      atomic.Bool
	downCalls atomic.Int64
}

func (o *outageStore) cut() error {
	if !o.down.Load() {
		return nil
	}
	o.downCalls.Add(1)
	return fmt.Errorf("dial tcp 127.0.0.1:5432: connect: connection refused: %w", store.ErrUnavailable)
}

func (o *outageStore) JobClaim(ctx context.Context, p *store.ClaimParams) (jobs []*hoppertype.JobRow, hold store.Hold, err error) {
	if err := o.cut(); err != nil {
		return nil, store.Hold{}, err
	}
	return o.Store.JobClaim(ctx, p)
}

func (o *outageStore) JobFinishMany(ctx context.Context, p []*store.FinishParams) ([]error, error) {
	if err := o.cut(); err != nil {
		return nil, err
	}
	return o.Store.JobFinishMany(ctx, p)
}

func (o *outageStore) JobExtendLeases(ctx context.Context, p []*store.ExtendParams) ([]error, error) {
	if err := o.cut(); err != nil {
		return nil, err
	}
	return o.Store.JobExtendLeases(ctx, p)
}

func (o *outageStore) JobPromoteScheduled(ctx context.Context, p *store.PromoteParams) (*store.PromoteResult, error) {
	if err := o.cut(); err != nil {
		return nil, err
	}
	return o.Store.JobPromoteScheduled(ctx, p)
}

func (o *outageStore) JobRescuePass(ctx context.Context, p *store.RescuePassParams) (*store.RescuePassResult, error) {
	if err := o.cut(); err != nil {
		return nil, err
	}
	return o.Store.JobRescuePass(ctx, p)
}

func (o *outageStore) JobFailOverdue(ctx context.Context, p *store.OverdueParams) ([]string, error) {
	if err := o.cut(); err != nil {
		return nil, err
	}
	return o.Store.JobFailOverdue(ctx, p)
}

func (o *outageStore) JobSweepExpired(ctx context.Context, p *store.SweepParams) (*store.SweepResult, error) {
	if err := o.cut(); err != nil {
		return nil, err
	}
	return o.Store.JobSweepExpired(ctx, p)
}

func (o *outageStore) NodeHeartbeat(ctx context.Context, n *hoppertype.Node) error {
	if err := o.cut(); err != nil {
		return err
	}
	return o.Store.NodeHeartbeat(ctx, n)
}

func (o *outageStore) LeaderElect(ctx context.Context, p *store.LeaderParams) (*hoppertype.Leadership, error) {
	if err := o.cut(); err != nil {
		return nil, err
	}
	return o.Store.LeaderElect(ctx, p)
}

func (o *outageStore) ScheduleDue(ctx context.Context, now time.Time, limit int) ([]*store.Schedule, time.Time, error) {
	if err := o.cut(); err != nil {
		return nil, time.Time{}, err
	}
	return o.Store.ScheduleDue(ctx, now, limit)
}

func (o *outageStore) ScheduleFire(ctx context.Context, p *store.ScheduleFireParams) (*store.ScheduleFireResult, error) {
	if err := o.cut(); err != nil {
		return nil, err
	}
	return o.Store.ScheduleFire(ctx, p)
}

// lockedBuffer collects log lines from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the lines logged so far at Warn or above (all when all is set).
func (b *lockedBuffer) lines(all bool) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(b.buf.String()), "\n") {
		if l != "" && (all || strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR")) {
			out = append(out, l)
		}
	}
	return out
}

func (b *lockedBuffer) count(substr string) int {
	n := 0
	for _, l := range b.lines(true) {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}

type okHandler struct{ ran chan string }

func (h okHandler) Prepare(row *hoppertype.JobRow) (attempt.Unit, error) {
	return okUnit{h, row.ID}, nil
}

type okUnit struct {
	h  okHandler
	id string
}

func (u okUnit) Work(context.Context) error         { u.h.ran <- u.id; return nil }
func (okUnit) Timeout() time.Duration               { return 0 }
func (okUnit) RetryPolicy() *hoppertype.RetryPolicy { return nil }

// With due scheduled jobs, a due schedule and a worker, the store goes away for 20 s (on the
// fake clock) while wake-ups keep coming. The leader's loops, the elector, the node heartbeat
// and the producer back off: a bounded number of store calls and one log line per loop, not
// a spin. The leader lease lapses and says so; when the store returns every loop logs its
// recovery, leadership comes back and the due job runs.
func TestAStoreOutageCostsFewCallsAndLogLines(t *testing.T) {
	t.Parallel()
	clk, base := fakeClockSQLite(t)
	st := &outageStore{Store: base}
	logs := &lockedBuffer{}
	h := okHandler{ran: make(chan string, 10)}
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1", Maintenance: true,
		Logger:  slog.New(slog.NewTextHandler(logs, nil)),
		Workers: workersOf("k", h), Queues: map[string]int{"default": 2},
		LeaderTTL: 3 * time.Second, NodeTTL: 6 * time.Second})
	require.NoError(t, err)

	ctx := t.Context()
	now := clk.Now()
	_, err = base.ScheduleUpsert(ctx, &store.Schedule{Name: "every-second", Spec: "@every 1s", Mode: "cron",
		Kind: "other", Queue: "other", Args: []byte(`{}`), MaxAttempts: 1, CatchUp: "skip", Overlap: "allow",
		Source: store.SourceAPI, LastFireAt: now, NextFireAt: now.Add(time.Second)})
	require.NoError(t, err)
	due, err := base.JobInsertMany(ctx, []*store.InsertParams{{ID: "due-job", Kind: "k", Queue: "default",
		Args: []byte(`{}`), MaxAttempts: 3, RunAt: now.Add(2 * time.Second), Actor: hoppertype.ActorOperator}})
	require.NoError(t, err)
	require.Equal(t, hoppertype.StateScheduled, due[0].Job.State)

	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.Stop(stopCtx))
	})
	require.Eventually(t, func() bool { return e.IsLeader() && logs.count("leadership acquired") == 1 },
		5*time.Second, time.Millisecond)
	before := len(logs.lines(false))

	// 20 s without a store, in steps of 50 ms, with a wake-up of the producer at each step.
	// Each step waits until the loops wait on the clock again (waitingLoops), so that they
	// never lag it however slow the machine.
	st.down.Store(true)
	settled := func() bool { return clk.Pending() == waitingLoops(e) }
	for range 400 {
		requireSettled(t, settled)
		clk.Advance(50 * time.Millisecond)
		e.Notify("default")
	}
	requireSettled(t, settled)
	require.Eventually(t, func() bool { return logs.count("leadership lost: could not renew the leader lease") == 1 },
		5*time.Second, time.Millisecond, "the lapsed lease is logged:\n%s", strings.Join(logs.lines(true), "\n"))
	require.False(t, e.IsLeader())
	calls := st.downCalls.Load()
	outageLines := logs.lines(false)[before:]
	t.Logf("during the outage: %d store calls, %d log lines:\n%s", calls, len(outageLines), strings.Join(outageLines, "\n"))
	require.Less(t, calls, int64(150), "store calls during a 20 s outage")
	require.LessOrEqual(t, len(outageLines), 8, "log lines at Warn and above during the outage")
	for _, l := range outageLines {
		require.Contains(t, l, "connection refused", "every line says why: %s", l)
	}
	// Failing names the loops that failed, but the leader's duties: no longer leading, they
	// stopped trying.
	var failing []string
	for _, st := range e.Failing() {
		failing = append(failing, st.Name)
	}
	require.ElementsMatch(t, withoutLeaderDuties(outageLoops(outageLines)), failing)

	// The store comes back: everything recovers, and the due job runs.
	st.down.Store(false)
	require.Eventually(t, func() bool {
		clk.Advance(100 * time.Millisecond)
		return e.IsLeader() && len(e.Failing()) == 0
	}, 10*time.Second, time.Millisecond, "recovery:\n%s", strings.Join(logs.lines(true), "\n"))
	require.Eventually(t, func() bool { return logs.count("leadership acquired") == 2 }, 5*time.Second, time.Millisecond)
	for _, loop := range withoutLeaderDuties(outageLoops(outageLines)) {
		require.Eventually(t, func() bool { return logs.count(loop+" recovered") == 1 }, 5*time.Second, time.Millisecond,
			"%s logs its recovery once", loop)
	}
	var ran string
	require.Eventually(t, func() bool {
		clk.Advance(100 * time.Millisecond)
		select {
		case ran = <-h.ran:
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, "due-job", ran)
}

// waitingLoops is how many loops of e, a maintaining engine with a worker, wait on the clock
// between looks: its producer, its lease keeper, its node heartbeat and its elector always,
// and its maintainer and its scheduler while it leads or, once it lost the lead, while they
// back off from a failing store (otherwise they wait for an election, not on the clock).
func waitingLoops(e *Engine) int {
	if e.IsLeader() {
		return 6
	}
	n := 4
	for _, l := range e.Failing() {
		if l.Name == "leader maintenance" || l.Name == "fire schedules" {
			n++
		}
	}
	return n
}

// outageLoops returns the names of the loops whose first failure is among lines.
func outageLoops(lines []string) []string {
	var out []string
	for _, l := range lines {
		if _, msg, ok := strings.Cut(l, `msg="`); ok {
			if name, ok := strings.CutSuffix(strings.SplitN(msg, `"`, 2)[0], " failed; retrying with backoff"); ok {
				out = append(out, name)
			}
		}
	}
	return out
}

func withoutLeaderDuties(loops []string) []string {
	var out []string
	for _, l := range loops {
		if l != "leader maintenance" && l != "fire schedules" {
			out = append(out, l)
		}
	}
	return out
}
