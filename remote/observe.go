package remote

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
)

// observe tells the worker's observers (Config.Observers) of ev; a panic in one is logged.
func (w *Worker) observe(ev hoppertype.JobEvent) {
	for _, o := range w.cfg.Observers {
		w.observeOne(o, ev)
	}
}

func (w *Worker) observeOne(o hoppertype.Observer, ev hoppertype.JobEvent) {
	defer func() {
		if v := recover(); v != nil {
			w.log.Error("job observer panicked", "event", ev.Type, "job_id", ev.JobID, "panic", v)
		}
	}()
	o.ObserveJob(context.Background(), ev)
}

// observeStart reports that the handler of row's attempt starts, claimed in batch (its zero
// value: alone). Its Wait is 0, and a batch's Linger: a worker is not told when its jobs
// became due (the server's observers measure both).
func (w *Worker) observeStart(row *hoppertype.JobRow, batch hoppertype.BatchInfo) {
	if len(w.cfg.Observers) == 0 {
		return
	}
	w.observe(hoppertype.JobEvent{Type: hoppertype.JobStarted, JobID: row.ID, Kind: row.Kind, Queue: row.Queue,
		Attempt: row.Attempt, State: hoppertype.StateRunning, Remote: true, Batch: batch})
}

// observeBatchStart reports that the handler of a batch's attempts starts, each with the
// batch as the server sent it (one call of the handler: a batch a stream pushed in parts is
// a batch per part), built as the engine builds its own (attempt.Batches).
func (w *Worker) observeBatchStart(all []*prepared) {
	if len(w.cfg.Observers) == 0 {
		return
	}
	rows := make([]*hoppertype.JobRow, len(all))
	batchOf := make(map[string]string, len(all))
	for i, a := range all {
		rows[i] = a.row
		batchOf[a.row.ID] = a.job.GetBatchId()
	}
	batches := attempt.Batches(rows, batchOf)
	for _, r := range rows {
		w.observeStart(r, batches[r.ID])
	}
}

// observeEnd reports that the handler of row's attempt returned with outcome after run; gone:
// the job was no longer the attempt's (its lease lost).
func (w *Worker) observeEnd(row *hoppertype.JobRow, outcome hoppertype.Outcome, gone bool, run time.Duration) {
	if len(w.cfg.Observers) == 0 {
		return
	}
	var state hoppertype.JobState
	if !gone {
		state = decidedBy(outcome)
	}
	w.observe(hoppertype.JobEvent{Type: hoppertype.JobEnded, JobID: row.ID, Kind: row.Kind, Queue: row.Queue,
		Attempt: row.Attempt, State: state, Outcome: outcome, Run: run, Remote: true})
}

// decidedBy is the state an outcome alone puts its job in; "" where the server decides (a
// failed attempt is retried or fails for good by the job's policy).
func decidedBy(o hoppertype.Outcome) hoppertype.JobState {
	switch o {
	case hoppertype.OutcomeOK:
		return hoppertype.StateCompleted
	case hoppertype.OutcomeSnoozed:
		return hoppertype.StateScheduled
	case hoppertype.OutcomeSuspended:
		return hoppertype.StateSuspended
	case hoppertype.OutcomeCanceled:
		return hoppertype.StateQueued // released
	}
	return ""
}
