package server

import (
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/stretchr/testify/require"
)

// A batch the claim loop hands over in parts (its units were short when the claim came back)
// goes to the worker whole, once its last job starts; if the loop gives the rest back instead,
// the part started goes as it is. Jobs claimed alone go at once.
func TestStreamPushesABatchWholeWhateverTheLoopSplits(t *testing.T) {
	t.Parallel()
	sj := &streamer{batchOf: map[workerapi.LeaseRef]string{}, batchLeft: map[string]int{}, partial: map[string][]*hopper.JobRow{}}
	job := func(id string) *hopper.JobRow { return &hopper.JobRow{ID: id, Token: 1} }
	a1, a2, a3, b1, b2, solo := job("a1"), job("a2"), job("a3"), job("b1"), job("b2"), job("solo")
	sj.claimedBatches([]*hopper.JobRow{a1, a2, a3, b1, b2, solo}, map[string]string{"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B"})

	units := sj.whole([]*hopper.JobRow{a1, a2})
	require.Empty(t, units, "batch A is not whole yet")
	units = sj.whole([]*hopper.JobRow{a3, b1, solo})
	require.Equal(t, []pushUnit{{batch: "A", jobs: []*hopper.JobRow{a1, a2, a3}}, {jobs: []*hopper.JobRow{solo}}}, units)
	require.Empty(t, sj.gaveBack([]*hopper.JobRow{solo}), "a job alone is no batch's")
	require.Equal(t, []pushUnit{{batch: "B", jobs: []*hopper.JobRow{b1}}}, sj.gaveBack([]*hopper.JobRow{b2}),
		"B's rest went back: its first job goes alone")
	require.Empty(t, sj.batchOf)
	require.Empty(t, sj.batchLeft)
	require.Empty(t, sj.partial)
}
