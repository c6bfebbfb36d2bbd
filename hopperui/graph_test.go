package hopperui

import (
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/stretchr/testify/require"
)

// The graph puts each step in the column of its depth (one more than its deepest parent),
// each column's steps top to bottom, and draws one edge per parent; the drawing is as large as
// its deepest column and widest row.
func TestGraphLayoutByDepth(t *testing.T) {
	step := func(name string, state hopper.JobState, after ...string) *hopper.StepRow {
		return &hopper.StepRow{Job: &hopper.JobRow{ID: "id-" + name, Step: name, State: state}, After: after}
	}
	g := layout([]*hopper.StepRow{
		step("a", hopper.StateCompleted), step("b", hopper.StateRunning, "a"), step("c", hopper.StateWaiting, "a"),
		step("a-very-long-step-name-indeed", hopper.StateWaiting, "b", "c"), step("late", hopper.StateWaiting, "a", "a-very-long-step-name-indeed"),
	})
	at := map[string]graphNode{}
	for _, n := range g.Nodes {
		at[n.Step] = n
	}
	require.Equal(t, 0, at["a"].Depth)
	require.Equal(t, 1, at["b"].Depth)
	require.Equal(t, 1, at["c"].Depth)
	require.Equal(t, 2, at["a-very-long-step-name-indeed"].Depth)
	require.Equal(t, 3, at["late"].Depth, "one after its deepest parent")
	require.Equal(t, at["b"].X, at["c"].X)
	require.Less(t, at["b"].Y, at["c"].Y)
	require.Equal(t, "a-very-long-step-n…", at["a-very-long-step-name-indeed"].Label)
	require.Len(t, g.Edges, 6)
	require.Equal(t, "edge done", g.Edges[0].Class, "a has ended")
	require.Equal(t, 2*graphPad+4*nodeW+3*colGap, g.Width)
	require.Equal(t, 2*graphPad+2*nodeH+rowGap, g.Height)

}
