package engine

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

// Marking ended workflows (store.WorkflowMarkEnded): every RescueInterval while this process
// leads, the maintainer walks the open workflows, oldest first, markBatch at a time and at most
// markBatches batches a pass, and marks those whose steps have all ended. The walk goes on
// where the last pass stopped, so that every open workflow is checked within
// (open workflows / (markBatch·markBatches)) passes whatever the number of running ones
// before it, and starts again from the oldest when it reaches the newest. A process that
// becomes leader starts from the oldest (or where its own walk was): the walk is only where to
// look, the marking itself happens once in the store.
const (
	markBatch   = 500
	markBatches = 4
)

// markPass runs one pass of the walk (markWorkflows) and returns when the next is due:
// RescueInterval on or, when it failed, that plus the marking's own backoff (markRetry, which
// logs the failure, rate-limited). A failure here is not an outage of the other duties: they
// go on, and the rescues keep their pace (no grace after it).
func (m *maintainer) markPass(ctx context.Context, now time.Time) time.Time {
	next := now.Add(m.e.cfg.RescueInterval)
	err := m.markWorkflows(ctx)
	switch {
	case ctx.Err() != nil:
		return next // stopping: not a failure
	case err != nil:
		return next.Add(m.markRetry.Fail(err)) // the store says what failed
	}
	m.markRetry.Succeed()
	return next
}

// markWorkflows runs one pass of the walk and hands what it marked to OnWorkflowsEnded.
func (m *maintainer) markWorkflows(ctx context.Context) error {
	e := m.e
	for range markBatches {
		res, err := e.store.WorkflowMarkEnded(ctx, &store.WorkflowMarkParams{After: m.marking, Limit: markBatch})
		if err != nil {
			return err
		}
		m.marking = res.Next
		if len(res.Ended) > 0 {
			e.log.Debug("hopper: workflows ended", "workflows", len(res.Ended))
			if hook := e.cfg.OnWorkflowsEnded; hook != nil {
				hook(res.Ended)
			}
		}
		if res.Next == "" {
			return nil
		}
	}
	return nil
}
