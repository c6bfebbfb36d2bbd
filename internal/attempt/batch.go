package attempt

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// BatchOpts says how the batches of a batch kind are claimed (hopper.BatchOpts).
type BatchOpts struct {
	// MaxJobs bounds the jobs of one batch.
	MaxJobs int
	// MaxWait is the linger: a batch with fewer than MaxJobs jobs waits until its oldest job
	// has been due this long. 0 claims at once whatever is there.
	MaxWait time.Duration
	// Ungrouped batches the kind's jobs without a group key too.
	Ungrouped bool
}

// BatchHandler is a Handler whose kind runs in batches: jobs claimed together, one call of
// the handler for all, one outcome per job. Prepare still prepares each job (a job whose args
// do not decode fails alone); its Unit's Work runs a batch of that one job, for a worker that
// does not batch.
type BatchHandler interface {
	Handler
	// Batching is how the kind's batches are claimed.
	Batching() BatchOpts
	// WorkBatch runs one attempt of each of units, prepared by Prepare, in one call. It
	// returns one BatchResult per unit, in order, or an error that fails them all.
	WorkBatch(ctx context.Context, units []Unit) ([]BatchResult, error)
}

// BatchResult is how one job of a batch ended: Err as a handler's error (nil: success),
// Result what it stores when it succeeds.
type BatchResult struct {
	Err    error
	Result json.RawMessage
}

// RunBatch calls h for units and returns each unit's result: a handler's error for the whole
// batch, a panic (a *PanicError), or results that do not match the units fail every one, each
// as its own attempt.
func RunBatch(ctx context.Context, h BatchHandler, units []Unit) (out []BatchResult) {
	fail := func(err error) []BatchResult {
		all := make([]BatchResult, len(units))
		for i := range all {
			all[i].Err = err
		}
		return all
	}
	defer func() {
		if v := recover(); v != nil {
			out = fail(&PanicError{Value: v, Stack: string(debug.Stack())})
		}
	}()
	res, err := h.WorkBatch(ctx, units)
	switch {
	case err != nil:
		return fail(err)
	case len(res) != len(units):
		return fail(fmt.Errorf("batch worker returned %d results for %d jobs", len(res), len(units)))
	}
	return res
}

// BatchTimeout is the execution limit of a batch: the shortest of its jobs' limits (each
// AttemptTimeout with default def), so that no job runs past its own; 0 when none has one.
func BatchTimeout(rows []*Execution, units []Unit, def time.Duration) time.Duration {
	var d time.Duration
	for i, ex := range rows {
		if t := AttemptTimeout(ex.Row, units[i], def); t > 0 && (d == 0 || t < d) {
			d = t
		}
	}
	return d
}

// Batches returns, by job id, the batch each job of rows was claimed in, as its JobStarted
// event carries it (hoppertype.JobEvent.Batch): batchOf gives each job's batch id (absent or
// "": claimed alone, left out). A batch's Size counts its jobs among rows, Index is a job's
// place among them, Linger is the longest any of them had been due at the claim (StartedAt
// since RunAt; 0 for rows that know neither, as a remote worker's). The engine's claims and
// the server's batch claims for remote workers report through it, and so does a remote
// worker for the batches it runs. nil when batchOf is empty.
func Batches(rows []*hoppertype.JobRow, batchOf map[string]string) map[string]hoppertype.BatchInfo {
	if len(batchOf) == 0 {
		return nil
	}
	batches := map[string]*hoppertype.BatchInfo{}
	for _, r := range rows {
		id := batchOf[r.ID]
		if id == "" {
			continue
		}
		b := batches[id]
		if b == nil {
			b = &hoppertype.BatchInfo{ID: id}
			batches[id] = b
		}
		b.Size++
		b.Linger = max(b.Linger, r.StartedAt.Sub(r.RunAt))
	}
	out := make(map[string]hoppertype.BatchInfo, len(batchOf))
	for _, r := range rows {
		if b := batches[batchOf[r.ID]]; b != nil {
			out[r.ID] = *b
			b.Index++
		}
	}
	return out
}
