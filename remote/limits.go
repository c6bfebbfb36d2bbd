package remote

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/clock"
)

// NoLimitsError is why a worker stopped taking jobs when its server serves no input limits
// (ServerService.Info without ServerInfo.input_limits, or without a limit the worker clips
// its reports to): such a server predates the limits, or is not a Hopper server. The worker
// takes limits only from its server, so it takes no job from this one (Worker.Err reports it).
type NoLimitsError struct {
	// URL is the server's.
	URL string
	// Limit names the limit the server left out (a field of InputLimits, "max_error_bytes");
	// empty when it serves none.
	Limit string
	// Err is the server's answer to ServerService.Info when it was an error (a server without
	// ServerService answers CodeUnimplemented); nil when it answered without the limits.
	Err error
}

func (e *NoLimitsError) Error() string {
	what := "no input limits"
	if e.Limit != "" {
		what = "no input limit " + e.Limit
	}
	msg := fmt.Sprintf("the server at %s serves %s (ServerService.Info): upgrade it", e.URL, what)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *NoLimitsError) Unwrap() error { return e.Err }

// reportLimits are the limits of the server the worker reaches (ServerService.Info) that
// it clips its reports to, so that none is refused for its length.
type reportLimits struct {
	errorBytes, reasonBytes, progressMessageBytes int
	runAtFuture                                   time.Duration
}

// limitsOf reads the limits the worker needs from what the server served; the name of the
// first one missing (0, unset) when one is.
func limitsOf(l *hopperv1.InputLimits) (*reportLimits, string) {
	if l == nil {
		return nil, ""
	}
	r := &reportLimits{errorBytes: int(l.GetMaxErrorBytes()), reasonBytes: int(l.GetMaxReasonBytes()),
		progressMessageBytes: int(l.GetMaxProgressMessageBytes()), runAtFuture: l.GetMaxRunAtFuture().AsDuration()}
	switch {
	case r.errorBytes <= 0:
		return nil, "max_error_bytes"
	case r.reasonBytes <= 0:
		return nil, "max_reason_bytes"
	case r.progressMessageBytes <= 0:
		return nil, "max_progress_message_bytes"
	case r.runAtFuture <= 0:
		return nil, "max_run_at_future"
	}
	return r, ""
}

// servedLimits are the server's limits once it has said them.
type servedLimits struct {
	info   hopperv1connect.ServerServiceClient
	served atomic.Pointer[reportLimits]
	known  chan struct{} // closed once served is set: the intake waits for it
}

// learnLimits asks the server for its limits, again with backoff while it cannot be reached,
// then ends. The worker takes no job before the server has said them: a server that answers
// without them (or without ServerService) stops the worker with a *NoLimitsError, one that
// refuses its API key stops it as any refused call does.
func (w *Worker) learnLimits() {
	for w.intakeCtx.Err() == nil {
		res, err := w.limits.info.Info(w.intakeCtx, &hopperv1.ServerServiceInfoRequest{})
		if err == nil {
			l, missing := limitsOf(res.GetServer().GetInputLimits())
			if l == nil {
				w.giveUp(&NoLimitsError{URL: w.cfg.URL, Limit: missing})
				return
			}
			w.limitsRetry.Succeed()
			w.limits.served.Store(l)
			close(w.limits.known)
			return
		}
		if w.intakeCtx.Err() != nil {
			return
		}
		if refused(err) {
			w.giveUp(err)
			return
		}
		err = unavailable(err)
		if connect.CodeOf(err) != connect.CodeUnavailable {
			w.giveUp(&NoLimitsError{URL: w.cfg.URL, Err: err})
			return
		}
		clock.Sleep(w.intakeCtx, w.clock, w.limitsRetry.Fail(err))
	}
}

// awaitLimits waits for the server's limits; false when the intake stopped first.
func (w *Worker) awaitLimits() bool {
	select {
	case <-w.limits.known:
		return true
	case <-w.intakeCtx.Done():
		return false
	}
}

// The limits the worker's reports respect. Only jobs the intake took are reported on, and
// the intake starts once the limits are known.
func (w *Worker) maxErrorBytes() int           { return w.limits.served.Load().errorBytes }
func (w *Worker) maxReasonBytes() int          { return w.limits.served.Load().reasonBytes }
func (w *Worker) maxProgressMessageBytes() int { return w.limits.served.Load().progressMessageBytes }

// maxRunAtFuture is how far ahead the server takes a delay or a time.
func (w *Worker) maxRunAtFuture() time.Duration { return w.limits.served.Load().runAtFuture }

// errNoLimits reports whether err is a *NoLimitsError.
func errNoLimits(err error) bool {
	var e *NoLimitsError
	return errors.As(err, &e)
}
