package remote

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
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

// observeStart reports that the handler of row's attempt starts. Its Wait is 0: a worker is
// not told when its job became due (the server's observers measure the wait).
func (w *Worker) observeStart(row *hoppertype.JobRow) {
	if len(w.cfg.Observers) == 0 {
		return
	}
	w.observe(hoppertype.JobEvent{Type: hoppertype.JobStarted, JobID: row.ID, Kind: row.Kind, Queue: row.Queue,
		Attempt: row.Attempt, State: hoppertype.StateRunning, Remote: true})
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
