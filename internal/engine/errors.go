package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// Causes with which the engine cancels a handler's context; context.Cause(ctx) tells them apart.
var (
	// ErrTimeout: the attempt ran past its execution timeout.
	ErrTimeout = errors.New("job execution timeout")
	// ErrJobCanceled: the job was canceled while it ran.
	ErrJobCanceled = errors.New("job canceled")
	// ErrShutdown: the worker process is shutting down; the job goes back to the queue.
	ErrShutdown = errors.New("worker shutting down")
	// ErrLeaseLost: the lease could not be kept; another worker may hold the job now. It is
	// the store's sentinel, so callers test one error for both.
	ErrLeaseLost = store.ErrLeaseLost
)

// RetryAfterError asks for the next attempt after Delay instead of the backoff policy's delay.
type RetryAfterError struct {
	Delay time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("retry after %s: %v", e.Delay, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// NoRetryError fails the job at once, whatever attempts are left.
type NoRetryError struct{ Err error }

func (e *NoRetryError) Error() string { return fmt.Sprintf("not retryable: %v", e.Err) }

func (e *NoRetryError) Unwrap() error { return e.Err }

// PanicError is a recovered panic of a handler.
type PanicError struct {
	Value any
	Stack string
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// SnoozeError runs the job again after Delay without consuming an attempt.
type SnoozeError struct{ Delay time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %s", e.Delay) }

// SuspendError parks the job without consuming an attempt: until Until (state scheduled) or,
// with Until zero, until resumed (state suspended), failing at Deadline if that is set and
// it is still suspended then. Checkpoint, when not nil, replaces the job's checkpoint.
type SuspendError struct {
	Checkpoint json.RawMessage
	Until      time.Time
	Deadline   time.Time
}

func (e *SuspendError) Error() string {
	if !e.Until.IsZero() {
		return "suspended until " + e.Until.UTC().Format(time.RFC3339)
	}
	return "suspended until resumed"
}

// ParkParams is the outcome of an attempt of job id under token that ended with a snooze or
// a suspension, or nil for other errors.
func ParkParams(id string, token int64, err error, now time.Time) *store.FinishParams {
	var sn *SnoozeError
	var su *SuspendError
	switch {
	case errors.As(err, &sn):
		return &store.FinishParams{ID: id, Token: token, State: hoppertype.StateScheduled,
			RunAt: now.Add(max(sn.Delay, 0)), GiveBack: true, Outcome: hoppertype.OutcomeSnoozed,
			Actor: hoppertype.ActorWorker, Reason: sn.Error()}
	case errors.As(err, &su):
		p := &store.FinishParams{ID: id, Token: token, GiveBack: true, Checkpoint: su.Checkpoint,
			Outcome: hoppertype.OutcomeSuspended, Actor: hoppertype.ActorWorker, Reason: su.Error()}
		if su.Until.IsZero() {
			p.State, p.DeadlineAt = hoppertype.StateSuspended, su.Deadline
		} else {
			p.State, p.RunAt = hoppertype.StateScheduled, su.Until
		}
		return p
	}
	return nil
}
