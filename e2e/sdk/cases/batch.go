package cases

import (
	"context"
	"errors"

	"github.com/hopperjobs/hopper"
)

// BatchKind is the batch kind every driver handles in batches (BatchOpts{MaxJobs: BatchMaxJobs}).
const BatchKind = "conformance-batch"

// BatchMaxJobs bounds the drivers' batches of BatchKind.
const BatchMaxJobs = 10

// BatchArgs are a batch conformance job's arguments: what its batch's handler does with it.
type BatchArgs struct {
	// Case is "ok" (completes, no result), "result" (completes with "item result"), "fail"
	// (fails alone with "bad item") or "boom" (the handler returns "boom": every job of its
	// batch fails).
	Case string `json:"case"`
}

func (BatchArgs) Kind() string { return BatchKind }

// BatchHandler runs the batch cases. Begin, when set, hears each call with its jobs' ids in
// order (the driver prints them, for the harness to see how the jobs were gathered).
type BatchHandler struct {
	hopper.WorkerDefaults[BatchArgs]
	Begin func(ids []string)
}

// WorkBatch runs one call of the batch cases.
func (h BatchHandler) WorkBatch(_ context.Context, b *hopper.Batch[BatchArgs]) error {
	ids := make([]string, len(b.Jobs))
	for i, job := range b.Jobs {
		ids[i] = job.ID
	}
	if h.Begin != nil {
		h.Begin(ids)
	}
	for _, job := range b.Jobs {
		if job.Args.Case == "boom" {
			return errors.New("boom")
		}
	}
	for i, job := range b.Jobs {
		switch job.Args.Case {
		case "result":
			if err := b.SetResult(i, "item result"); err != nil {
				return err
			}
		case "fail":
			b.Fail(i, errors.New("bad item"))
		}
	}
	return nil
}

// BatchOpts are the drivers' batching of BatchKind.
var BatchOpts = hopper.BatchOpts{MaxJobs: BatchMaxJobs}
