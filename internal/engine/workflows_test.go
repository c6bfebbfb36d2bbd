package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// markSpy is a store of n open workflows w00000…, of which those in ended have ended: each
// batch of WorkflowMarkEnded marks those of its ids (once) and says where the next goes on.
type markSpy struct {
	store.Store
	n      int
	ended  map[int]bool
	calls  []string // the After of each call
	marked map[int]bool
}

func (s *markSpy) WorkflowMarkEnded(_ context.Context, p *store.WorkflowMarkParams) (*store.WorkflowMarkResult, error) {
	s.calls = append(s.calls, p.After)
	res := &store.WorkflowMarkResult{}
	checked := 0
	for i := range s.n {
		id := fmt.Sprintf("w%05d", i)
		if id <= p.After || s.marked[i] {
			continue
		}
		if checked == p.Limit {
			break
		}
		checked++
		if s.ended[i] {
			s.marked[i] = true
			res.Ended = append(res.Ended, &hoppertype.WorkflowRow{ID: id, State: hoppertype.WorkflowCompleted})
		}
		if checked == p.Limit {
			res.Next = id
		}
	}
	return res, nil
}

// A pass walks at most markBatches batches of the open workflows and the next goes on where it
// stopped, so an ended workflow behind more than a pass's worth of running ones is reached;
// the walk starts again from the oldest once it reached the newest. Each marked workflow
// reaches OnWorkflowsEnded.
func TestMarkWorkflowsWalksOn(t *testing.T) {
	t.Parallel()
	n := markBatch*markBatches + markBatch + 10 // more open workflows than one pass checks
	spy := &markSpy{n: n, ended: map[int]bool{3: true, n - 1: true}, marked: map[int]bool{}}
	var got []string
	e, err := New(Config{Store: spy, WorkerID: "node-1", Maintenance: true,
		OnWorkflowsEnded: func(ws []*hoppertype.WorkflowRow) {
			for _, w := range ws {
				got = append(got, w.ID)
			}
		}})
	require.NoError(t, err)
	m := e.maint

	require.NoError(t, m.markWorkflows(t.Context()))
	require.Len(t, spy.calls, markBatches, "a pass is bounded")
	require.Equal(t, "", spy.calls[0], "from the oldest")
	require.Equal(t, []string{"w00003"}, got)

	require.NoError(t, m.markWorkflows(t.Context()))
	require.Len(t, spy.calls, markBatches+2, "the second pass goes on and reaches the newest")
	require.Equal(t, fmt.Sprintf("w%05d", markBatch*markBatches-1), spy.calls[markBatches])
	require.Equal(t, []string{"w00003", fmt.Sprintf("w%05d", n-1)}, got)

	require.NoError(t, m.markWorkflows(t.Context()))
	require.Equal(t, "", spy.calls[markBatches+2], "then from the oldest again")
	require.Len(t, got, 2, "marked once")
}

// markFailStore is a real store whose WorkflowMarkEnded fails while failing is set; it counts
// the marking passes and the sweeps (the duty after the marking). Used by one goroutine.
type markFailStore struct {
	store.Store
	failing       bool
	marks, sweeps int
}

func (s *markFailStore) WorkflowMarkEnded(ctx context.Context, p *store.WorkflowMarkParams) (*store.WorkflowMarkResult, error) {
	s.marks++
	if s.failing {
		return nil, errors.New("mark ended workflows: disk I/O error")
	}
	return s.Store.WorkflowMarkEnded(ctx, p)
}

func (s *markFailStore) JobSweepExpired(ctx context.Context, p *store.SweepParams) (*store.SweepResult, error) {
	s.sweeps++
	return s.Store.JobSweepExpired(ctx, p)
}

// A marking pass that fails is logged once and backed off on its own; it is not an outage of
// the leader's duties: the sweep after it runs, the rescues keep their pace, and the marking
// resumes (and its recovery is logged) once the store marks again.
func TestMarkWorkflowsFailureBacksOffAlone(t *testing.T) {
	t.Parallel()
	clk, sq := fakeClockSQLite(t)
	st := &markFailStore{Store: sq, failing: true}
	logs := &lockedBuffer{}
	e, err := New(Config{Store: st, Clock: clk, WorkerID: "node-1", Maintenance: true,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	e.leader.set(clk.Now().Add(time.Hour), 1)
	m, interval := e.maint, e.cfg.RescueInterval

	now := clk.Now()
	nextRescue, nextSweep, nextPromote := now, now, now
	require.NoError(t, m.duties(t.Context(), now, &nextRescue, &nextSweep, &nextPromote), "the other duties do not fail")
	require.Equal(t, 1, st.marks)
	require.Positive(t, st.sweeps, "the sweep after the marking ran")
	require.Equal(t, now.Add(interval), nextRescue, "the rescues keep their pace")
	require.True(t, m.markAt.After(now.Add(interval)), "the marking backs off: %v", m.markAt.Sub(now))
	require.Equal(t, 1, logs.count("workflow marking failed; retrying with backoff"), "%s", logs.lines(true))
	var failing []string
	for _, l := range e.Failing() {
		failing = append(failing, l.Name)
	}
	require.Equal(t, []string{"workflow marking"}, failing)

	clk.Advance(interval) // the rescues are due, the marking not yet
	now = clk.Now()
	require.NoError(t, m.duties(t.Context(), now, &nextRescue, &nextSweep, &nextPromote))
	require.Equal(t, 1, st.marks, "backed off")

	st.failing = false
	clk.Advance(m.markAt.Sub(now))
	now = clk.Now()
	require.NoError(t, m.duties(t.Context(), now, &nextRescue, &nextSweep, &nextPromote))
	require.Equal(t, 2, st.marks)
	require.Equal(t, now.Add(interval), m.markAt, "its usual pace again")
	require.Empty(t, e.Failing())
	require.Equal(t, 1, logs.count("workflow marking recovered"), "%s", logs.lines(true))
}
