package hoppertype

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ParentOutcome is how a parent ended, as its children see it (docs/workflows.md).
type ParentOutcome string

// The parent outcomes. Skipped is a parent canceled by its own ParentSkip policy: it counts
// as succeeded for its children.
const (
	ParentCompleted ParentOutcome = "completed"
	ParentFailed    ParentOutcome = "failed"
	ParentCanceled  ParentOutcome = "canceled"
	ParentSkipped   ParentOutcome = "skipped"
)

// Failed reports whether children treat the outcome as a failure (their policy applies).
func (o ParentOutcome) Failed() bool { return o == ParentFailed || o == ParentCanceled }

// State is the terminal state (and skip mark) of a parent that ended with the outcome.
func (o ParentOutcome) State() (state JobState, skipped bool) {
	switch o {
	case ParentFailed:
		return StateFailed, false
	case ParentCanceled:
		return StateCanceled, false
	case ParentSkipped:
		return StateCanceled, true
	}
	return StateCompleted, false
}

// ErrNoResult: a parent left no result to decode (it stored none, or its retention ran out).
var ErrNoResult = errors.New("no result")

// ParentResult is one parent of a job as the job's handler reads it (hopper.ParentResults,
// docs/workflows.md "Results passed along"): how it ended and what it left. It is read from
// the parent's own row when asked for, never copied into the child.
type ParentResult struct {
	// ID is the parent's job id.
	ID string
	// Kind is the parent's kind; empty when Expired.
	Kind string
	// Step is the parent's step name when it is a step of a workflow (Workflow.Steps), so a
	// fan-in step can tell its parents apart by name; empty for a job outside a workflow, and
	// when Expired.
	Step string
	// Outcome is how the parent ended for its children: completed, failed, canceled or
	// skipped. Empty for a parent that has not ended (only a job that is not running, read
	// outside its handler, can have one).
	Outcome ParentOutcome
	// State is the parent's state now: the final state of its Outcome, unless it was retried
	// in place since (contract 18); empty when Expired.
	State JobState
	// Result is the JSON value the parent completed with; nil when it stored none, did not
	// complete, or Expired.
	Result json.RawMessage
	// Error is the parent's last error (LastError), if any.
	Error string
	// FinishedAt is when the parent ended; zero when Expired.
	FinishedAt time.Time
	// Expired: the parent's retention ran out (its ExpiresAt passed, whether or not the sweep
	// has deleted it yet, contract 12): only ID and Outcome are known.
	Expired bool
}

// Decode decodes the parent's result into v, as json.Unmarshal does. It returns an error
// wrapping ErrNoResult when the parent has none (it stored none, did not complete, or
// Expired).
func (p ParentResult) Decode(v any) error {
	if len(p.Result) == 0 {
		why := "stored none"
		if p.Expired {
			why = "expired"
		}
		return fmt.Errorf("parent %s: %w (%s)", p.ID, ErrNoResult, why)
	}
	if err := json.Unmarshal(p.Result, v); err != nil {
		return fmt.Errorf("decode the result of parent %s: %w", p.ID, err)
	}
	return nil
}
