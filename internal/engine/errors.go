package engine

import (
	"errors"
	"fmt"
	"time"

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
