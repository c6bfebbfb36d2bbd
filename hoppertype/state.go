// Package hoppertype holds the plain types every layer of Hopper shares: job rows, states,
// attempt records and history events. It has no dependencies beyond the standard library.
package hoppertype

import "fmt"

// JobState is where a job stands in its life cycle (docs/jobs.md, "States").
type JobState string

// The job states.
const (
	// StateScheduled jobs are not visible to workers before their RunAt (delay, backoff, snooze).
	StateScheduled JobState = "scheduled"
	// StateQueued jobs are due and wait for a worker.
	StateQueued JobState = "queued"
	// StateRunning jobs are held by a worker under a lease.
	StateRunning JobState = "running"
	// StateSuspended jobs wait for an external resume.
	StateSuspended JobState = "suspended"
	// StateCompleted jobs finished successfully. Terminal.
	StateCompleted JobState = "completed"
	// StateFailed jobs ran out of attempts or were told not to retry: the dead-letter queue. Terminal.
	StateFailed JobState = "failed"
	// StateCanceled jobs were canceled by an operator or the API, or by a parent's failure
	// (ParentPolicy). Terminal.
	StateCanceled JobState = "canceled"
	// StateWaiting jobs wait for their parents (InsertOpts.After) to end; not claimable. The
	// last parent's ending releases them to queued (or scheduled) in its own transaction.
	StateWaiting JobState = "waiting"
)

// AllStates lists every state in a stable order.
var AllStates = []JobState{
	StateWaiting, StateScheduled, StateQueued, StateRunning, StateSuspended,
	StateCompleted, StateFailed, StateCanceled,
}

// Terminal reports whether s is a final state (completed, failed, canceled).
func (s JobState) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateCanceled
}

// Valid reports whether s is one of the known states.
func (s JobState) Valid() bool {
	for _, k := range AllStates {
		if s == k {
			return true
		}
	}
	return false
}

// ParseState returns the state named by text, or an error naming the accepted values.
func ParseState(text string) (JobState, error) {
	s := JobState(text)
	if !s.Valid() {
		return "", fmt.Errorf("unknown job state %q (want one of %v)", text, AllStates)
	}
	return s, nil
}

// Actor says who caused a transition, for the audit trail.
type Actor string

// The actors recorded in job history.
const (
	ActorAPI      Actor = "api"      // a client call: enqueue, cancel, replay
	ActorWorker   Actor = "worker"   // the worker holding the lease
	ActorLeader   Actor = "leader"   // maintenance: promotion, rescue
	ActorOperator Actor = "operator" // a person through the CLI or dashboard
	ActorServer   Actor = "server"   // hopper serve, for its remote workers: a closed stream's jobs
)

// Valid reports whether a is one of the known actors.
func (a Actor) Valid() bool {
	switch a {
	case ActorAPI, ActorWorker, ActorLeader, ActorOperator, ActorServer:
		return true
	}
	return false
}

// Outcome is how one attempt ended.
type Outcome string

// The attempt outcomes.
const (
	OutcomeOK           Outcome = "ok"
	OutcomeError        Outcome = "error"
	OutcomeTimeout      Outcome = "timeout"
	OutcomePanic        Outcome = "panic"
	OutcomeLeaseExpired Outcome = "lease_expired"
	OutcomeCanceled     Outcome = "canceled"
	// OutcomeSnoozed: the handler asked to run again later; the attempt was given back.
	OutcomeSnoozed Outcome = "snoozed"
	// OutcomeSuspended: the handler parked the job with a checkpoint; the attempt was given back.
	OutcomeSuspended Outcome = "suspended"
	// OutcomeUndeliverable: the job could not be handed to the remote worker that claimed it
	// (a stored value the wire cannot carry); it failed at once, without retry.
	OutcomeUndeliverable Outcome = "undeliverable"
	// OutcomeWorkerLost: the job's worker was lost once more than its MaxRescues allow (it
	// crashed or hung its process each time); the job failed for good.
	OutcomeWorkerLost Outcome = "worker_lost"
)
