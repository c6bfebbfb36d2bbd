package hopperprom_test

import (
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperprom"
)

// BenchmarkObserveStart is the cost of one JobStarted event: a job claimed alone, a job of a
// batch after its first (counted as a start only), and a batch's first job (the batch is
// counted too).
func BenchmarkObserveStart(b *testing.B) {
	for name, batch := range map[string]hopper.BatchInfo{
		"alone":      {},
		"in-batch":   {ID: "a.1", Size: 100, Index: 1},
		"batch-head": {ID: "a.1", Size: 100, Index: 0},
	} {
		b.Run(name, func(b *testing.B) {
			m := hopperprom.New()
			ev := hopper.JobEvent{Type: hopper.JobStarted, Queue: "q", Kind: "k", Batch: batch}
			for b.Loop() {
				m.ObserveJob(b.Context(), ev)
			}
		})
	}
}
