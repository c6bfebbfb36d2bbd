package server

import (
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/stretchr/testify/require"
)

// A batch the claim loop starts in parts (its credit was short when the claim came back) goes
// to the worker in parts, each at once, each together: a part held back for the rest could
// wait for credit only the held part would free (found by the chaos scenario
// TestKillBatchWorkersWithCapsPerKeySQLite: a queue that never drained). Jobs claimed alone go
// at once; given-back jobs leave their batch.
func TestStreamPushesWhatTheLoopStartsAtOnce(t *testing.T) {
	t.Parallel()
	sj := &streamer{batchOf: map[workerapi.LeaseRef]string{}}
	job := func(id string) *hopper.JobRow { return &hopper.JobRow{ID: id, Token: 1} }
	a1, a2, a3, b1, b2, solo := job("a1"), job("a2"), job("a3"), job("b1"), job("b2"), job("solo")
	sj.claimedBatches([]*hopper.JobRow{a1, a2, a3, b1, b2, solo}, map[string]string{"a1": "A", "a2": "A", "a3": "A", "b1": "B", "b2": "B"})

	require.Equal(t, []pushUnit{{batch: "A", jobs: []*hopper.JobRow{a1, a2}}}, sj.whole([]*hopper.JobRow{a1, a2}),
		"the part of A started goes at once")
	require.Equal(t, []pushUnit{{batch: "A", jobs: []*hopper.JobRow{a3}}, {batch: "B", jobs: []*hopper.JobRow{b1}},
		{jobs: []*hopper.JobRow{solo}}}, sj.whole([]*hopper.JobRow{a3, b1, solo}))
	sj.gaveBack([]*hopper.JobRow{b2})
	require.Empty(t, sj.batchOf)
}
