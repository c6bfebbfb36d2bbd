package engine

import (
	"context"
	"fmt"
	"testing"

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
