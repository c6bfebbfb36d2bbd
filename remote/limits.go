package remote

import (
	"sync/atomic"
	"time"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/field"
)

// servedLimits are the input limits of the server the worker reaches (ServerService.Info),
// which it clips its reports to, so that none is refused for its length. Until the worker has
// heard them, and from a server that predates them (a field it leaves 0), the limits this
// package was built with apply.
type servedLimits struct {
	info   hopperv1connect.ServerServiceClient
	served atomic.Pointer[hopperv1.InputLimits]
	tried  chan struct{} // closed after the first ask, answered or not: the intake waits for it
}

// learnLimits asks the server for its limits, again with backoff while it cannot be reached,
// then ends; any other answer (a server without ServerService, something else at the URL)
// leaves the built-in limits. The worker takes no job before the first ask has ended, so
// that a server that answers at once has its limits applied to every report.
func (w *Worker) learnLimits() {
	defer w.limitsTried()
	for w.intakeCtx.Err() == nil {
		res, err := w.limits.info.Info(w.intakeCtx, &hopperv1.ServerServiceInfoRequest{})
		if err == nil {
			w.limits.served.Store(res.GetServer().GetInputLimits())
			return
		}
		w.limitsTried()
		err = unavailable(err)
		if connect.CodeOf(err) != connect.CodeUnavailable || w.intakeCtx.Err() != nil {
			return
		}
		clock.Sleep(w.intakeCtx, w.clock, w.limitsRetry.Fail(err))
	}
}

// limitsTried says the first ask for the limits has ended.
func (w *Worker) limitsTried() {
	select {
	case <-w.limits.tried:
	default:
		close(w.limits.tried)
	}
}

// awaitLimits waits for the first ask for the limits to end, or the intake to stop.
func (w *Worker) awaitLimits() {
	select {
	case <-w.limits.tried:
	case <-w.intakeCtx.Done():
	}
}

// limit is the served value of a limit, or def while none is known.
func (w *Worker) limit(served func(*hopperv1.InputLimits) int32, def int) int {
	if l := w.limits.served.Load(); l != nil {
		if n := served(l); n > 0 {
			return int(n)
		}
	}
	return def
}

// The limits the worker's reports respect.
func (w *Worker) maxErrorBytes() int {
	return w.limit((*hopperv1.InputLimits).GetMaxErrorBytes, field.MaxErrorBytes)
}

func (w *Worker) maxReasonBytes() int {
	return w.limit((*hopperv1.InputLimits).GetMaxReasonBytes, field.MaxReasonBytes)
}

func (w *Worker) maxProgressMessageBytes() int {
	return w.limit((*hopperv1.InputLimits).GetMaxProgressMessageBytes, field.MaxProgressMessageBytes)
}

// maxRunAtFuture is how far ahead the server takes a delay or a time.
func (w *Worker) maxRunAtFuture() time.Duration {
	if l := w.limits.served.Load(); l != nil && l.GetMaxRunAtFuture().AsDuration() > 0 {
		return l.GetMaxRunAtFuture().AsDuration()
	}
	return field.MaxRunAtFuture
}
