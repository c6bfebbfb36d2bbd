package hopper

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// WorkflowSteps pages a workflow's steps, filtered, with the workflow's counts; ParentsUpTo
// and Children read a job's first parents and a page of its children, counted. Bad input is a
// *ValidationError naming the field; an unknown workflow is ErrNotFound.
func TestWorkflowStepsAndRelativesAreBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	res, err := b.client.EnqueueWorkflow(ctx, Workflow{Name: "fan", Steps: []WorkflowStep{
		emailStep("root"), emailStep("b", "root"), emailStep("c", "root"), emailStep("d", "root"),
		emailStep("sink", "b", "c", "d")}})
	require.NoError(t, err)
	id := res.Workflow.ID

	page, err := b.client.WorkflowSteps(ctx, id, &WorkflowStepsParams{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, 5, page.Workflow.Steps)
	require.Equal(t, map[JobState]int{StateQueued: 1, StateWaiting: 4}, page.Workflow.StepStates)
	require.Equal(t, []string{"root", "b"}, stepNames(page.Steps))
	require.Equal(t, []string{"root"}, page.Steps[1].After)
	next, err := b.client.WorkflowSteps(ctx, id, &WorkflowStepsParams{Limit: 2, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Equal(t, []string{"c", "d"}, stepNames(next.Steps))
	waiting, err := b.client.WorkflowSteps(ctx, id, &WorkflowStepsParams{States: []JobState{StateWaiting}, StepContains: "n"})
	require.NoError(t, err)
	require.Equal(t, []string{"sink"}, stepNames(waiting.Steps))
	require.Empty(t, waiting.NextCursor)

	parents, total, err := b.client.ParentsUpTo(ctx, res.Job("sink").ID, 2)
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Equal(t, res.Job("b").ID, parents[0].ID)
	require.Len(t, parents, 2)
	children, err := b.client.Children(ctx, res.Job("root").ID, &ChildrenParams{Limit: 2})
	require.NoError(t, err)
	require.Equal(t, 3, children.Total)
	require.Equal(t, []string{"b", "c"}, stepNames(stepRows(children.Jobs)))
	require.NotEmpty(t, children.NextCursor)

	_, err = b.client.WorkflowSteps(ctx, uuid.NewString(), nil)
	require.ErrorIs(t, err, ErrNotFound)
	for f, call := range map[string]func() error{
		"states": func() error {
			_, err := b.client.WorkflowSteps(ctx, id, &WorkflowStepsParams{States: []JobState{"bogus"}})
			return err
		},
		"limit": func() error { _, err := b.client.WorkflowSteps(ctx, id, &WorkflowStepsParams{Limit: -1}); return err },
		"cursor": func() error {
			_, err := b.client.WorkflowSteps(ctx, id, &WorkflowStepsParams{Cursor: "nope"})
			return err
		},
		"id": func() error { _, err := b.client.WorkflowSteps(ctx, "", nil); return err },
		"step_contains": func() error {
			_, err := b.client.WorkflowSteps(ctx, id, &WorkflowStepsParams{StepContains: strings.Repeat("x", 300)})
			return err
		},
	} {
		var verr *ValidationError
		require.ErrorAs(t, call(), &verr, f)
		require.Equal(t, f, verr.Field)
	}
	_, err = b.client.Children(ctx, res.Job("root").ID, &ChildrenParams{Cursor: "nope"})
	requireField(t, err, "cursor")
	_, _, err = b.client.ParentsUpTo(ctx, res.Job("sink").ID, -1)
	requireField(t, err, "limit")
}

func stepNames(steps []*StepRow) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Job.Step)
	}
	return out
}

func stepRows(jobs []*JobRow) []*StepRow {
	var out []*StepRow
	for _, j := range jobs {
		out = append(out, &StepRow{Job: j})
	}
	return out
}

func requireField(t *testing.T, err error, field string) {
	t.Helper()
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, field, verr.Field)
}

// Every listing refuses a page size outside 0–10000 alike, naming the field limit, and
// takes 10000.
func TestListingsCheckTheirPageLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	res, err := b.client.EnqueueWorkflow(ctx, Workflow{Name: "one", Steps: []WorkflowStep{emailStep("root")}})
	require.NoError(t, err)
	id := res.Workflow.ID
	for name, list := range map[string]func(limit int) error{
		"List": func(n int) error { _, err := b.client.List(ctx, &ListParams{Limit: n}); return err },
		"Children": func(n int) error {
			_, err := b.client.Children(ctx, res.Job("root").ID, &ChildrenParams{Limit: n})
			return err
		},
		"ListWorkflows": func(n int) error { _, err := b.client.ListWorkflows(ctx, &WorkflowListParams{Limit: n}); return err },
		"WorkflowSteps": func(n int) error {
			_, err := b.client.WorkflowSteps(ctx, id, &WorkflowStepsParams{Limit: n})
			return err
		},
		"DeadLetters": func(n int) error { _, err := b.client.DeadLetters(ctx, &DeadLetterParams{Limit: n}); return err },
	} {
		require.NoError(t, list(10000), name)
		for _, n := range []int{-1, 10001} {
			var verr *ValidationError
			require.ErrorAs(t, list(n), &verr, name)
			require.Equal(t, "limit", verr.Field, name)
			require.Equal(t, fmt.Sprintf("%d is outside 0–10000", n), verr.Reason, name)
		}
	}
}
