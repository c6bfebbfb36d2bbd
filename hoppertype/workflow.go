package hoppertype

import (
	"fmt"
	"time"
)

// WorkflowState is where a workflow stands. While it runs it is derived from the states of its
// steps whenever a workflow is read; once they have all ended, the leader marks the workflow
// ended with the state they ended it in (a cancel marks it at once), and reads return that
// (docs/workflows.md, "State").
type WorkflowState string

// The workflow states.
const (
	// WorkflowRunning: some step has not ended (it waits, is scheduled, queued, running or
	// suspended).
	WorkflowRunning WorkflowState = "running"
	// WorkflowCompleted: every step completed.
	WorkflowCompleted WorkflowState = "completed"
	// WorkflowFailed: every step has ended and at least one failed (a dead letter). A
	// failure is never hidden by a cancel: a workflow canceled after one of its steps
	// failed is failed.
	WorkflowFailed WorkflowState = "failed"
	// WorkflowCanceled: every step has ended, none failed, and at least one was canceled (by
	// Client.CancelWorkflow, by a cancel of the step, or because a parent was canceled).
	WorkflowCanceled WorkflowState = "canceled"
)

// WorkflowStates lists the workflow states in a stable order.
var WorkflowStates = []WorkflowState{WorkflowRunning, WorkflowCompleted, WorkflowFailed, WorkflowCanceled}

// Valid reports whether s is one of the known workflow states.
func (s WorkflowState) Valid() bool {
	for _, k := range WorkflowStates {
		if s == k {
			return true
		}
	}
	return false
}

// ParseWorkflowState returns the workflow state named by text, or an error naming the
// accepted values.
func ParseWorkflowState(text string) (WorkflowState, error) {
	s := WorkflowState(text)
	if !s.Valid() {
		return "", fmt.Errorf("unknown workflow state %q (want one of %v)", text, WorkflowStates)
	}
	return s, nil
}

// WorkflowRow is a workflow as stored, with what its steps say of it now. Zero times mean
// "not yet".
type WorkflowRow struct {
	ID   string
	Name string
	// State is derived from the steps, or stored once the workflow was marked ended
	// (WorkflowState).
	State WorkflowState
	// Steps is the number of steps the workflow was enqueued with.
	Steps int
	// StepStates counts the steps by state; a step removed once its result TTL passed is no
	// longer counted.
	StepStates map[JobState]int
	CreatedAt  time.Time
	// StartedAt is when its first step started running; FinishedAt, once it has ended, when its
	// last step ended.
	StartedAt  time.Time
	FinishedAt time.Time
}

// StepRow is one step of a workflow: its job, and the names of the steps it runs after.
type StepRow struct {
	Job   *JobRow
	After []string
}
