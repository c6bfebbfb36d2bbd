package store

import (
	"testing"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/stretchr/testify/require"
)

func TestCompactArgs(t *testing.T) {
	t.Parallel()
	list := func(id, args string) *CompactCandidate {
		return &CompactCandidate{ID: id, Args: []byte(args), Policy: hoppertype.MergeAppend}
	}
	plain := &CompactCandidate{ID: "p", Args: []byte(`{"a":1}`), Policy: hoppertype.MergeKeep}
	lists := []*CompactCandidate{list("a", ` [1, {"b":[2]}] `), list("b", `[]`), list("c", `[ 3 ]`)}

	args, policy, err := CompactArgs(hoppertype.MergeAppend, lists, 0)
	require.NoError(t, err)
	require.Equal(t, `[1, {"b":[2]},3]`, string(args))
	require.Equal(t, hoppertype.MergeAppend, policy)
	args, _, err = CompactArgs(hoppertype.MergeAppend, []*CompactCandidate{list("a", `[]`), list("b", `[ ]`)}, 0)
	require.NoError(t, err)
	require.Equal(t, `[]`, string(args))

	args, policy, err = CompactArgs(hoppertype.MergeKeep, []*CompactCandidate{plain, lists[0]}, 0)
	require.NoError(t, err)
	require.Equal(t, `{"a":1}`, string(args))
	require.Equal(t, hoppertype.MergeKeep, policy)
	args, policy, err = CompactArgs(hoppertype.MergeReplace, []*CompactCandidate{plain, lists[2]}, 0)
	require.NoError(t, err)
	require.Equal(t, `[ 3 ]`, string(args))
	require.Equal(t, hoppertype.MergeAppend, policy, "the newest job's shape goes with its args")

	_, _, err = CompactArgs(hoppertype.MergeAppend, []*CompactCandidate{lists[0], plain}, 0)
	var me *MergeError
	require.ErrorAs(t, err, &me)
	require.ErrorIs(t, err, ErrMergeConflict)
	require.Equal(t, "p", me.JobID)
	_, _, err = CompactArgs(hoppertype.MergeAppend, []*CompactCandidate{lists[0], list("x", `{"not":"a list"}`)}, 0)
	require.ErrorIs(t, err, ErrMergeConflict)

	two := []*CompactCandidate{list("a", `[1]`), list("b", `[2]`)} // joined: [1,2], 5 bytes
	_, _, err = CompactArgs(hoppertype.MergeAppend, two, 5)
	require.NoError(t, err, "at the limit")
	_, _, err = CompactArgs(hoppertype.MergeAppend, two, 4)
	require.ErrorIs(t, err, ErrArgsTooLarge)
	require.ErrorAs(t, err, &me)
	require.Equal(t, "b", me.JobID)
}

func TestCompactGroups(t *testing.T) {
	t.Parallel()
	c := func(id, group string) *CompactCandidate { return &CompactCandidate{ID: id, GroupKey: group} }
	cands := []*CompactCandidate{c("1", "a"), c("2", "b"), c("3", "b"), c("4", "c"), c("5", "c"), c("6", "c")}
	ids := func(groups [][]*CompactCandidate) [][]string {
		var out [][]string
		for _, g := range groups {
			var row []string
			for _, j := range g {
				row = append(row, j.ID)
			}
			out = append(out, row)
		}
		return out
	}
	require.Equal(t, [][]string{{"2", "3"}, {"4", "5", "6"}}, ids(CompactGroups(&CompactParams{}, cands)), "a group of one never")
	require.Equal(t, [][]string{{"2", "3"}, {"4", "5", "6"}}, ids(CompactGroups(&CompactParams{Over: 1}, cands)))
	require.Equal(t, [][]string{{"4", "5", "6"}}, ids(CompactGroups(&CompactParams{Over: 2}, cands)))
	require.Empty(t, CompactGroups(&CompactParams{Over: 3}, cands))
}

// Batches hold whole groups, as many as fit in CompactBatchJobs jobs, at least one: a larger
// group is a batch alone.
func TestCompactBatches(t *testing.T) {
	group := func(n int) []*CompactCandidate { return make([]*CompactCandidate, n) }
	sizes := func(batches [][][]*CompactCandidate) [][]int {
		var out [][]int
		for _, b := range batches {
			var s []int
			for _, g := range b {
				s = append(s, len(g))
			}
			out = append(out, s)
		}
		return out
	}
	half := CompactBatchJobs / 2
	require.Equal(t, [][]int{{half, half}, {half + 1}, {CompactBatchJobs * 3}, {1, 1}},
		sizes(CompactBatches([][]*CompactCandidate{group(half), group(half), group(half + 1), group(CompactBatchJobs * 3), group(1), group(1)})))
	require.Empty(t, CompactBatches(nil))
}
