package hopper

import (
	"context"
	"errors"

	"github.com/hopperjobs/hopper/internal/store"
)

// WorkflowStepsParams filters and pages WorkflowSteps. Zero fields don't filter.
type WorkflowStepsParams struct {
	// States keeps the steps in these states.
	States []JobState
	// StepContains keeps the steps whose name contains it (case sensitive, plain text; at
	// most 255 bytes).
	StepContains string
	// Cursor continues from a previous page's NextCursor.
	Cursor string
	// Limit is the page size (default 100, at most 10,000).
	Limit int
}

// WorkflowStepsResult is a workflow and one page of its steps, in the order they were
// enqueued (parents first); NextCursor is empty on the last page.
type WorkflowStepsResult struct {
	Workflow   *WorkflowRow
	Steps      []*StepRow
	NextCursor string
}

// WorkflowSteps returns a workflow (its state and its steps counted by state) and one page of
// its steps, each with the names of the steps it runs after. Unlike Workflow it reads only the
// steps of the page, so it suits a workflow of thousands of steps. It returns an error
// wrapping ErrNotFound for no such workflow, and a *ValidationError naming the field for a bad
// id, state, step_contains, cursor or limit.
func (c *Client) WorkflowSteps(ctx context.Context, id string, p *WorkflowStepsParams) (*WorkflowStepsResult, error) {
	if p == nil {
		p = &WorkflowStepsParams{}
	}
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	if err := checkPageLimit(p.Limit); err != nil {
		return nil, err
	}
	for _, s := range p.States {
		if !s.Valid() {
			return nil, invalid("states", "unknown state %q", s)
		}
	}
	if err := checkLimited("step_contains", p.StepContains, maxNameLen); err != nil {
		return nil, err
	}
	if err := checkLimited("cursor", p.Cursor, maxNameLen); err != nil {
		return nil, err
	}
	res, err := c.store.WorkflowSteps(ctx, &store.WorkflowStepsParams{ID: id, States: p.States,
		StepContains: p.StepContains, Cursor: p.Cursor, Limit: p.Limit})
	if errors.Is(err, store.ErrInvalidCursor) {
		return nil, invalid("cursor", "%q is not a cursor a WorkflowSteps call returned", p.Cursor)
	}
	if err != nil {
		return nil, err
	}
	return &WorkflowStepsResult{Workflow: res.Workflow, Steps: res.Steps, NextCursor: res.NextCursor}, nil
}
