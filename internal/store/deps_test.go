package store

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A child counts each of its parents in the round once; a failed parent of smallest id names
// its cancel, the parent of largest id its release; children come in the order first seen,
// and a pair naming a job outside the round is not counted.
func TestCountChildren(t *testing.T) {
	a := &Ending{ID: "a", Outcome: ParentCompleted}
	b := &Ending{ID: "b", Outcome: ParentFailed}
	c := &Ending{ID: "c", Outcome: ParentCanceled}
	d := &Ending{ID: "d", Outcome: ParentSkipped}
	round := []*Ending{d, c, b, a}
	got := CountChildren(round, [][2]string{
		{"y", "a"}, {"x", "d"}, {"x", "a"}, {"y", "c"}, {"x", "c"}, {"x", "b"}, {"z", "d"}, {"z", "elsewhere"},
	})
	require.Equal(t, []*ChildCount{
		{ChildID: "y", N: 2, Failed: c, Last: c},
		{ChildID: "x", N: 4, Failed: b, Last: d},
		{ChildID: "z", N: 1, Last: d},
	}, got)
	require.Empty(t, CountChildren(round, nil))
}
