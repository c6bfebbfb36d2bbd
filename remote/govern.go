package remote

import (
	"context"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/clock"
)

// A remote worker's resource governor (Config.MaxCPU, MaxMemory) stops it taking new jobs
// while its process is too busy. In Poll mode the worker simply does not poll. In Stream
// mode the stream's credit is the server's, so the worker tells the server
// (WorkerService.Hold): the stream stays open, the server claims nothing for it until the
// worker is let go, and the jobs the worker has run on (their leases renewed, their outcomes
// reported, which frees credit the server then does not use). Closing the stream instead
// would race the pushes in flight (a job pushed as the stream closes is never received, and
// waits for its lease to expire), and reopening it would take a full credit on top of the
// jobs still running. Both modes tell the server, which counts held workers for awaiting
// compute (docs/flow-control.md#awaiting-compute) and ends a long poll already waiting.

// holdRefresh is how often a held worker repeats its hold: the server lets a hold lapse 30 s
// after it last heard of it, so a worker that went away (or restarted without a governor)
// is not held back for good.
const holdRefresh = 10 * time.Second

// untilOpen waits while the governor holds; false when the worker's intake ended meanwhile.
func (w *Worker) untilOpen() bool {
	held := w.gov.Hold()
	if held == nil {
		return true
	}
	select {
	case <-held:
		return true
	case <-w.intakeCtx.Done():
		return false
	}
}

// reportHolds tells the server of each change of the governor's state, repeating a hold
// every holdRefresh, until the intake ends. A call that fails is retried with backoff.
func (w *Worker) reportHolds() {
	told := false // what the server last heard: it assumes a worker is not held
	var timer clock.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for w.intakeCtx.Err() == nil {
		holding, changed := w.gov.State()
		wait := time.Duration(-1) // none: wait for a change
		if holding || told {
			if err := w.tellHold(holding); refused(err) {
				w.giveUp(err) // ends the intake, and this loop
			} else if err != nil {
				wait = w.holds.Fail(unavailable(err))
			} else {
				w.holds.Succeed()
				told = holding
				if holding {
					wait = holdRefresh
				}
			}
		}
		var tick <-chan time.Time
		if wait >= 0 {
			timer = w.clock.NewTimer(wait)
			tick = timer.C()
		}
		select {
		case <-w.intakeCtx.Done():
		case <-changed:
		case <-tick:
		}
		if timer != nil {
			timer.Stop()
			timer = nil
		}
	}
}

// tellHold sends the governor's state to the server.
func (w *Worker) tellHold(held bool) error {
	ctx, cancel := context.WithTimeout(w.intakeCtx, reportTimeout)
	defer cancel()
	queue, queues := w.asked()
	_, err := w.api.Hold(ctx, &hopperv1.HoldRequest{Worker: w.cfg.Name, Queue: queue, Queues: queues, Held: held})
	return err
}
