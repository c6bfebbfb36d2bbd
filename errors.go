package hopper

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
)

// Errors callers tell apart with errors.Is.
var (
	// ErrNotFound: no job with that id.
	ErrNotFound = store.ErrNotFound
	// ErrLeaseLost: a stale fencing token; the attempt no longer owns the job.
	ErrLeaseLost = store.ErrLeaseLost
	// ErrDuplicate: the idempotency key names a job with a different payload.
	ErrDuplicate = store.ErrDuplicate
	// ErrInvalidTransition: the state machine refuses the move (e.g. canceling a completed job).
	ErrInvalidTransition = store.ErrInvalidTransition
	// ErrInvalid: bad input. The Client's checks return a *ValidationError naming the field; a
	// value that got past them and that the store cannot keep (a NUL byte in PostgreSQL text)
	// is refused by the store with an error matching ErrInvalid too.
	ErrInvalid = store.ErrInvalid
	// ErrNotInHandler: a handler-context function was called outside a running job.
	ErrNotInHandler = errors.New("not called from a running job's context")
	// ErrUnavailable: the store cannot be reached or cannot take writes right now (database
	// down or restarting, connection lost, out of connections, disk full, file locked): try
	// again later. A call whose connection was lost while it committed may have taken effect,
	// so retry enqueues with an idempotency key.
	ErrUnavailable = store.ErrUnavailable
	// ErrAlreadyReplayed: a replay or a retry in place of a dead letter that was replayed
	// before, without ReplayOpts.Again or RetryOpts.Again; the error is a *ReplayedError.
	ErrAlreadyReplayed = hoppertype.ErrAlreadyReplayed
	// ErrNoResult: ParentResult.Decode found no result (the parent stored none, did not
	// complete, or expired).
	ErrNoResult = hoppertype.ErrNoResult
)

// ReplayedError names the earlier replay of a dead letter whose replay or retry was refused
// (ErrAlreadyReplayed).
type ReplayedError = hoppertype.ReplayedError

// Causes of a handler's canceled context; tell them apart with context.Cause(ctx).
var (
	// ErrJobTimeout: the attempt ran past its execution timeout.
	ErrJobTimeout = attempt.ErrTimeout
	// ErrJobCanceled: the job was canceled while it ran.
	ErrJobCanceled = attempt.ErrJobCanceled
	// ErrShutdown: the process is stopping; the job will be released back to the queue.
	ErrShutdown = attempt.ErrShutdown
	// (ErrLeaseLost above: the lease was lost; another worker may run the job now.)
)

// ValidationError says which input field was wrong and why. errors.Is(err, ErrInvalid) holds.
type ValidationError = hoppertype.ValidationError

func invalid(name, format string, args ...any) error { return field.Invalid(name, format, args...) }

// prefixField puts prefix before the field a *ValidationError names (the path of the value in
// what the caller gave); other errors pass through.
func prefixField(prefix string, err error) error {
	var ve *ValidationError
	if errors.As(err, &ve) {
		return &ValidationError{Field: prefix + ve.Field, Reason: ve.Reason}
	}
	return err
}

// RetryAfter, returned by a handler, retries the job after d instead of the backoff policy's
// delay (attempts are still counted; with none left the job fails).
func RetryAfter(d time.Duration, err error) error {
	return &attempt.RetryAfterError{Delay: d, Err: err}
}

// NoRetry, returned by a handler, fails the job at once: it goes to the dead-letter queue.
func NoRetry(err error) error {
	return &attempt.NoRetryError{Err: err}
}

// BusinessError, returned by a handler (as a value or a pointer, wrapped or not), fails the
// job for good with an error code that is part of its contract (contract 18), as Zeebe's
// "throw error" does: no retry, whatever attempts are left, unless the job's, the kind's
// (Worker.RetryPolicy) or Config's RetryPolicy sets RetryBusinessErrors: then it is retried
// like any error while attempts are left. The code is kept with the attempt and as the job's
// LastErrorCode, lists and dead letters filter by it, and
// hopper_jobs_failed_total counts it. Code must be 1–MaxErrorCodeLen letters, digits, '_',
// '-', '.' or ':'; a handler's BusinessError with another code fails the attempt as a plain
// error (retried as one) whose text says why.
//
//	return hopper.BusinessError{Code: "card_declined", Message: "insufficient funds"}
type BusinessError = attempt.BusinessError

// MaxErrorCodeLen bounds a business error's code, in bytes.
const MaxErrorCodeLen = field.MaxErrorCodeLen

// FailWithCheckpoint, returned by a handler, fails the attempt with err, as err alone would
// (retried while attempts are left; NoRetry, RetryAfter and BusinessError inside err still
// apply), and hands checkpoint to the next attempt as Job.Checkpoint, as Suspend does: a
// worker that did 3 of 10 parts fails with "parts 1–3 done" and the next attempt continues
// from part 4. With no attempt left the failed job keeps the checkpoint, for whoever resolves
// it. checkpoint is stored as JSON (nil keeps the previous checkpoint); one that does not
// encode is dropped and said so in the error.
//
//	return hopper.FailWithCheckpoint(err, progress{Done: 3})
func FailWithCheckpoint(err error, checkpoint any) error {
	if err == nil {
		err = errors.New("failed with a checkpoint")
	}
	if checkpoint == nil {
		return err
	}
	b, jerr := json.Marshal(checkpoint)
	if jerr == nil {
		jerr = checkJSON("checkpoint", b)
	}
	if jerr != nil {
		return fmt.Errorf("%w (checkpoint dropped: %v)", err, jerr)
	}
	return &attempt.CheckpointError{Err: err, Checkpoint: b}
}

// Snooze, returned by a handler, runs the job again after d without consuming an attempt
// (contract 13): "not now" rather than "failed". The attempt is recorded with outcome
// snoozed.
func Snooze(d time.Duration) error {
	return &attempt.SnoozeError{Delay: d}
}

// SuspendOpts says how long a suspended job waits.
type SuspendOpts struct {
	// Until, when set, parks the job as scheduled until then; it then runs again.
	Until time.Time
	// Deadline, for a job parked until resumed (Until zero): if it is still suspended then,
	// the leader fails it.
	Deadline time.Time
}

// Suspend, returned by a handler, parks the job without consuming an attempt (contract 13):
// until opts.Until (state scheduled), or until Client.Resume (state suspended). checkpoint,
// when not nil, is stored as JSON and handed to the next attempt as Job.Checkpoint, which may
// run on another node; nil keeps the previous checkpoint.
//
//	return hopper.Suspend(progress{Page: 7}, hopper.SuspendOpts{}) // wait for Resume
func Suspend(checkpoint any, opts SuspendOpts) error {
	for field, t := range map[string]time.Time{"until": opts.Until, "deadline": opts.Deadline} {
		// A time no store can keep would fail the outcome batch it is written with.
		if !t.IsZero() && (t.Year() < 1970 || t.Year() > 2200) {
			return fmt.Errorf("suspend: %w", invalid(field, "%s is outside the years 1970–2200", t.Format(time.RFC3339)))
		}
	}
	var raw json.RawMessage
	if checkpoint != nil {
		b, err := json.Marshal(checkpoint)
		if err != nil {
			return fmt.Errorf("suspend: encode checkpoint: %w", err)
		}
		if err := checkJSON("checkpoint", b); err != nil {
			return fmt.Errorf("suspend: %w", err)
		}
		raw = b
	}
	return &attempt.SuspendError{Checkpoint: raw, Until: opts.Until, Deadline: opts.Deadline}
}
