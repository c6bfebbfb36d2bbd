package engine

import (
	"context"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// Bounded rescues (contract 3): the stores return a job whose worker was lost to its queue
// while its rescues are under its bound and fail it with outcome worker_lost after that
// (store.RescueBound). The leader rescues expired leases and the jobs of dead nodes
// (maintainer.rescue); a server rescues the jobs of a remote worker it saw go away
// (RescueLeases). Either way, a job that failed is a dead letter like any other.

// RescueLeases rescues attempts whose worker the caller knows is gone (a remote worker whose
// connection closed under them), recorded as done by actor for reason: each counts a rescue,
// and a job out of rescues fails with outcome worker_lost and reaches OnOutcome as a dead
// letter. Stale tokens are skipped.
func (e *Engine) RescueLeases(ctx context.Context, refs []store.LeaseRef, actor hoppertype.Actor, reason string) (*store.RescueResult, error) {
	if len(refs) == 0 {
		return &store.RescueResult{}, nil
	}
	res, err := e.store.JobRescueLeases(ctx, &store.RescueLeasesParams{Leases: refs, Actor: actor,
		Reason: reason, Error: reason, ExpiresAt: e.deadLetterExpiry()})
	if err != nil {
		return nil, err
	}
	e.rescued(res, "whose worker went away", actor)
	return res, nil
}

// deadLetterExpiry is when a job failed now may be removed.
func (e *Engine) deadLetterExpiry() time.Time { return e.clock.Now().Add(e.cfg.DeadLetterRetention) }

// rescued reports what a rescue did: it wakes the queues that jobs went back to, and logs and
// hands on as dead letters the jobs that ran out of rescues. what says whose jobs they were.
// It logs one line per kind of outcome however many jobs a pass took (up to 1,000): a line
// about one job names it (job_id, kind, queue); a line about many names the first few ids
// and every kind and queue among them.
func (e *Engine) rescued(res *store.RescueResult, what string, actor hoppertype.Actor) {
	var back, failed []store.RescuedJob
	for _, j := range res.Jobs {
		if j.State == hoppertype.StateFailed {
			failed = append(failed, j)
		} else {
			back = append(back, j)
		}
	}
	if len(back) > 0 {
		e.log.Warn("rescued jobs "+what, rescueAttrs(back)...)
		if hook := e.cfg.OnRescued; hook != nil {
			hook(back)
		}
	}
	for _, q := range res.Queues {
		e.Notify(q)
	}
	if len(failed) > 0 {
		e.log.Warn("jobs "+what+" failed with worker_lost: they lost their worker more often than their max_rescues allow",
			rescueAttrs(failed)...)
	}
	if hook := e.cfg.OnOutcome; hook != nil {
		for _, j := range failed {
			hook(&store.FinishParams{ID: j.ID, State: hoppertype.StateFailed, Outcome: hoppertype.OutcomeWorkerLost,
				Actor: actor, Job: &hoppertype.JobRow{ID: j.ID, Kind: j.Kind, Queue: j.Queue}}, nil)
		}
	}
}

// jobAttrs are the log attributes naming one job: its id, kind, queue and attempt.
func jobAttrs(row *hoppertype.JobRow) []any {
	return []any{"job_id", row.ID, "kind", row.Kind, "queue", row.Queue, "attempt", row.Attempt}
}

// outcomeAttrs are the log attributes of an outcome: the job (by id alone when p.Job is nil),
// and the state and outcome it asked for.
func outcomeAttrs(p *store.FinishParams) []any {
	attrs := []any{"job_id", p.ID}
	if p.Job != nil {
		attrs = jobAttrs(p.Job)
	}
	return append(attrs, "state", p.State, "outcome", p.Outcome)
}

// rescueAttrs are the log attributes naming jobs: the job's id, kind and queue for one;
// for many, their count, the first logIDs ids, and their kinds and queues.
func rescueAttrs(jobs []store.RescuedJob) []any {
	if len(jobs) == 1 {
		return []any{"job_id", jobs[0].ID, "kind", jobs[0].Kind, "queue", jobs[0].Queue}
	}
	ids := make([]string, 0, logIDs)
	var kinds, queues []string
	for i, j := range jobs {
		if i < logIDs {
			ids = append(ids, j.ID)
		}
		if !slices.Contains(kinds, j.Kind) {
			kinds = append(kinds, j.Kind)
		}
		if !slices.Contains(queues, j.Queue) {
			queues = append(queues, j.Queue)
		}
	}
	return []any{"jobs", len(jobs), "job_ids", ids, "kinds", someIDs(kinds), "queues", someIDs(queues)}
}

// logIDs is how many job ids (and kinds, and queues) a log line about many jobs names.
const logIDs = 5

// someIDs returns the first logIDs of ids.
func someIDs(ids []string) []string { return ids[:min(len(ids), logIDs)] }

// deadLettered hands jobs that failed outside an attempt's outcome (out of rescues, past a
// suspension's deadline) to OnOutcome, as the completer hands on the failures it writes.
func (e *Engine) deadLettered(ids []string, actor hoppertype.Actor) {
	hook := e.cfg.OnOutcome
	if hook == nil {
		return
	}
	for _, id := range ids {
		hook(&store.FinishParams{ID: id, State: hoppertype.StateFailed, Actor: actor}, nil)
	}
}
