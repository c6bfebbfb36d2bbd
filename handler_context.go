package hopper

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
)

func execution(ctx context.Context) (*attempt.Execution, error) {
	ex := attempt.ExecutionFrom(ctx)
	if ex == nil {
		return nil, ErrNotInHandler
	}
	return ex, nil
}

// ReportProgress stores the running job's progress (percent clamped to 0–100) and message. It
// counts as a heartbeat. ErrLeaseLost means the attempt no longer owns the job. Bytes of the
// message that are not UTF-8, and NUL bytes, are stored as U+FFFD.
func ReportProgress(ctx context.Context, percent int, message string) error {
	ex, err := execution(ctx)
	if err != nil {
		return err
	}
	return ex.Progress(ctx, percent, message)
}

// Heartbeat records that the running job is alive, separately from its lease, so a stalled
// handler is visible while its lease is still valid.
func Heartbeat(ctx context.Context) error {
	ex, err := execution(ctx)
	if err != nil {
		return err
	}
	return ex.Heartbeat(ctx)
}

// ExtendLease sets the running job's lease to expire d from now; d may be shorter than the
// current lease. The client already extends leases while handlers run; use this for a job
// that knows it needs longer or wants to be rescued sooner if it stops.
func ExtendLease(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return invalid("lease", "duration %s must be positive", d)
	}
	ex, err := execution(ctx)
	if err != nil {
		return err
	}
	return ex.ExtendLease(ctx, d)
}

// SetResult records v (as JSON) to be stored with the job when the attempt succeeds. A
// *ValidationError when its JSON is not valid UTF-8 (a MarshalJSON that returns raw bytes).
func SetResult(ctx context.Context, v any) error {
	ex, err := execution(ctx)
	if err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode job result: %w", err)
	}
	if err := checkJSON("result", b); err != nil {
		return err
	}
	ex.SetResult(b)
	return nil
}

// ParentResult is one parent of the running job, as ParentResults reads it: its id, kind,
// how it ended (Outcome), its state, result, last error and finish time, or, when the
// parent's retention ran out (Expired), only its id and outcome. Decode decodes its result.
type ParentResult = hoppertype.ParentResult

// ParentOutcome is how a parent ended for its children: completed, failed, canceled or
// skipped.
type ParentOutcome = hoppertype.ParentOutcome

// The parent outcomes.
const (
	ParentCompleted = hoppertype.ParentCompleted
	ParentFailed    = hoppertype.ParentFailed
	ParentCanceled  = hoppertype.ParentCanceled
	// ParentSkipped: the parent's own ParentSkip policy canceled it; it counts as succeeded.
	ParentSkipped = hoppertype.ParentSkipped
)

// ParentResults reads the running job's parents (InsertOpts.After), in the order the job named
// them, each with how it ended and what it left: a fan-in step gathers what its fan-out
// produced (docs/workflows.md, "Results passed along"). They are read from the store (or, in
// a remote worker, from the server) when called, not handed over with the job, so call it
// once and keep the answer; a job without parents gets none. A parent whose retention ran out
// before the read (Config.ResultTTL) comes with Expired set and no result: give parents a
// ResultTTL longer than their children wait. ErrLeaseLost means the attempt no longer owns
// the job; ErrNotInHandler, that ctx is not a handler's.
func ParentResults(ctx context.Context) ([]ParentResult, error) {
	ex, err := execution(ctx)
	if err != nil {
		return nil, err
	}
	got, err := ex.ParentResults(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ParentResult, len(got))
	for i, p := range got {
		out[i] = *p
	}
	return out, nil
}
