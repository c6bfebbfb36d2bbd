package engine

import (
	"context"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// failOverdue fails the jobs still suspended at their deadline (a leader duty, run with the
// rescue). Each goes to the dead-letter queue like any failed job, and the on-dead-letter
// hook hears of it.
func (m *maintainer) failOverdue(ctx context.Context) error {
	ss := m.e.store
	for ctx.Err() == nil && m.e.leader.leading() {
		ids, err := ss.JobFailOverdue(ctx, &store.OverdueParams{Limit: rescueBatch, ExpiresAt: m.e.deadLetterExpiry()})
		if err != nil {
			return err
		}
		m.failedOverdue(ids)
		if len(ids) < rescueBatch {
			return nil
		}
	}
	return nil
}

// failedOverdue logs and dead-letters the jobs a pass failed at their suspension's deadline.
func (m *maintainer) failedOverdue(ids []string) {
	if len(ids) > 0 {
		m.e.log.Warn("failed jobs still suspended at their deadline", "jobs", len(ids), "job_ids", someIDs(ids))
	}
	m.e.deadLettered(ids, hoppertype.ActorLeader)
}
