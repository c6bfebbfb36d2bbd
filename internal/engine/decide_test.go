package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/stretchr/testify/require"
)

func TestClassifyAndDecide(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	row := &hoppertype.JobRow{ID: "j", Token: 7, Attempt: 2, MaxAttempts: 3,
		RetryPolicy: &hoppertype.RetryPolicy{Multiplier: 10}}
	def := &hoppertype.RetryPolicy{Base: time.Second, Multiplier: 2, Cap: time.Hour, Jitter: -1}
	kind := &hoppertype.RetryPolicy{Base: time.Minute}
	hour := time.Hour
	for _, tc := range []struct {
		name          string
		err, cause    error
		state         hoppertype.JobState
		outcome       hoppertype.Outcome
		reason        string
		delay         time.Duration
		nilParams     bool
		retriesLeft   *int
		wantMaxAttmps int
	}{
		{name: "success", state: hoppertype.StateCompleted, outcome: hoppertype.OutcomeOK, reason: "success"},
		{name: "lease lost", err: errors.New("x"), cause: attempt.ErrLeaseLost, nilParams: true},
		{name: "canceled, even a success", cause: attempt.ErrJobCanceled, nilParams: true},
		{name: "error: job's multiplier, kind's base", err: errors.New("x"), state: hoppertype.StateScheduled,
			outcome: hoppertype.OutcomeError, reason: "retry", delay: 10 * time.Minute},
		{name: "panic", err: &attempt.PanicError{Value: 1, Stack: "s"}, state: hoppertype.StateScheduled,
			outcome: hoppertype.OutcomePanic, reason: "retry", delay: 10 * time.Minute},
		{name: "timeout", err: context.Canceled, cause: attempt.ErrTimeout, state: hoppertype.StateScheduled,
			outcome: hoppertype.OutcomeTimeout, reason: "retry", delay: 10 * time.Minute},
		{name: "retry after", err: &attempt.RetryAfterError{Delay: hour, Err: errors.New("x")},
			state: hoppertype.StateScheduled, outcome: hoppertype.OutcomeError, reason: "retry", delay: hour},
		{name: "no retry", err: &attempt.NoRetryError{Err: errors.New("x")}, state: hoppertype.StateFailed,
			outcome: hoppertype.OutcomeError, reason: "not retryable"},
		{name: "shutdown", err: context.Canceled, cause: attempt.ErrShutdown, state: hoppertype.StateQueued,
			outcome: hoppertype.OutcomeCanceled, reason: "released on shutdown"},
		{name: "snooze wins over shutdown", err: &attempt.SnoozeError{Delay: hour}, cause: attempt.ErrShutdown,
			state: hoppertype.StateScheduled, outcome: hoppertype.OutcomeSnoozed, reason: "snoozed for 1h0m0s", delay: hour},
		{name: "worker gives no retries", err: errors.New("x"), retriesLeft: new(int),
			state: hoppertype.StateFailed, outcome: hoppertype.OutcomeError, reason: "no retries left (set by the worker)"},
		{name: "business error: final", err: attempt.BusinessError{Code: "card_declined", Message: "x"},
			state: hoppertype.StateFailed, outcome: hoppertype.OutcomeError, reason: "business error card_declined"},
		{name: "business error, a wrapped pointer", err: fmt.Errorf("charge: %w", &attempt.BusinessError{Code: "card_declined"}),
			state: hoppertype.StateFailed, outcome: hoppertype.OutcomeError, reason: "business error card_declined"},
		{name: "business error wins over the worker's retries", err: attempt.BusinessError{Code: "c"},
			retriesLeft: func() *int { n := 5; return &n }(), state: hoppertype.StateFailed,
			outcome: hoppertype.OutcomeError, reason: "business error c"},
		{name: "business error with a bad code is a plain error", err: attempt.BusinessError{Code: "no spaces"},
			state: hoppertype.StateScheduled, outcome: hoppertype.OutcomeError, reason: "retry", delay: 10 * time.Minute},
		{name: "worker gives more", err: errors.New("x"), retriesLeft: func() *int { n := 5; return &n }(),
			state: hoppertype.StateScheduled, outcome: hoppertype.OutcomeError, reason: "retry", delay: 10 * time.Minute,
			wantMaxAttmps: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			end := attempt.Classify(tc.err, tc.cause, time.Second)
			end.KindPolicy, end.RetriesLeft = kind, tc.retriesLeft
			p := Decide(row, end, def, now)
			if tc.nilParams {
				require.Nil(t, p)
				return
			}
			require.Equal(t, tc.state, p.State)
			require.Equal(t, tc.outcome, p.Outcome)
			require.Equal(t, tc.reason, p.Reason)
			require.Equal(t, tc.wantMaxAttmps, p.MaxAttempts)
			if tc.delay > 0 {
				require.Equal(t, now.Add(tc.delay), p.RunAt)
			}
		})
	}
	t.Run("the last attempt fails the job", func(t *testing.T) {
		last := *row
		last.Attempt = 3
		p := Decide(&last, attempt.Classify(errors.New("x"), nil, 0), def, now)
		require.Equal(t, hoppertype.StateFailed, p.State)
		require.Equal(t, "no attempts left (3 of 3)", p.Reason)
	})
}

// A failed attempt's checkpoint and business error code reach the store's outcome, retried or
// final; a bad code is not kept, and the error text says why.
func TestDecideCarriesCheckpointAndErrorCode(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	row := &hoppertype.JobRow{ID: "j", Token: 7, Attempt: 1, MaxAttempts: 3}
	cp := json.RawMessage(`{"done":3}`)

	p := Decide(row, attempt.Classify(&attempt.CheckpointError{Err: errors.New("part 4"), Checkpoint: cp}, nil, 0), nil, now)
	require.Equal(t, hoppertype.StateScheduled, p.State)
	require.JSONEq(t, `{"done":3}`, string(p.Checkpoint))
	require.Equal(t, "part 4", p.Error)
	require.Empty(t, p.ErrorCode)

	wrapped := &attempt.CheckpointError{Err: attempt.BusinessError{Code: "out_of_stock", Message: "sku 9"}, Checkpoint: cp}
	p = Decide(row, attempt.Classify(wrapped, nil, 0), nil, now)
	require.Equal(t, hoppertype.StateFailed, p.State)
	require.Equal(t, "out_of_stock", p.ErrorCode)
	require.Equal(t, "out_of_stock: sku 9", p.Error)
	require.JSONEq(t, `{"done":3}`, string(p.Checkpoint), "kept for whoever resolves the failed job")

	end := attempt.Classify(attempt.BusinessError{Code: strings.Repeat("x", 129)}, nil, 0)
	require.Empty(t, end.ErrorCode)
	require.Contains(t, end.Error, "(not a business error: invalid error_code: ")
	require.Nil(t, Decide(row, attempt.Classify(errors.New("x"), nil, 0), nil, now).Checkpoint, "nil keeps the job's")
}

// A business error fails the job at once, unless the job's, the kind's or the decider's policy
// retries business errors: then it is retried as any error while attempts are left, keeping
// its code, and fails with it when they run out. NoRetry stays final.
func TestDecideRetriesBusinessErrors(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	retry := &hoppertype.RetryPolicy{RetryBusinessErrors: true}
	base := &hoppertype.RetryPolicy{Base: time.Second, Multiplier: 2, Jitter: -1}
	bizErr := attempt.BusinessError{Code: "card_declined", Message: "x"}
	for _, tc := range []struct {
		name           string
		job, kind, def *hoppertype.RetryPolicy
		err            error
		attempt        int
		state          hoppertype.JobState
		reason         string
	}{
		{name: "final by default", def: base, err: bizErr, attempt: 1,
			state: hoppertype.StateFailed, reason: "business error card_declined"},
		{name: "the job's policy retries", job: retry, def: base, err: bizErr, attempt: 1,
			state: hoppertype.StateScheduled, reason: "retry"},
		{name: "the kind's policy retries", kind: retry, def: base, err: bizErr, attempt: 1,
			state: hoppertype.StateScheduled, reason: "retry"},
		{name: "the decider's policy retries", def: &hoppertype.RetryPolicy{Base: time.Second, Jitter: -1, RetryBusinessErrors: true},
			err: bizErr, attempt: 1, state: hoppertype.StateScheduled, reason: "retry"},
		{name: "false in the job's policy does not undo the kind's true", job: base, kind: retry, err: bizErr, attempt: 1,
			state: hoppertype.StateScheduled, reason: "retry"},
		{name: "attempts run out", kind: retry, def: base, err: bizErr, attempt: 3,
			state: hoppertype.StateFailed, reason: "business error card_declined"},
		{name: "no retry stays final", kind: retry, def: base, err: &attempt.NoRetryError{Err: bizErr}, attempt: 1,
			state: hoppertype.StateFailed, reason: "business error card_declined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			row := &hoppertype.JobRow{ID: "j", Token: 7, Attempt: tc.attempt, MaxAttempts: 3, RetryPolicy: tc.job}
			end := attempt.Classify(tc.err, nil, 0)
			end.KindPolicy = tc.kind
			p := Decide(row, end, tc.def, now)
			require.Equal(t, tc.state, p.State)
			require.Equal(t, tc.reason, p.Reason)
			require.Equal(t, "card_declined", p.ErrorCode, "the code is kept, retried or final")
			require.Equal(t, hoppertype.OutcomeError, p.Outcome)
			if tc.state == hoppertype.StateScheduled {
				require.Equal(t, now.Add(time.Second), p.RunAt, "the usual backoff")
			}
		})
	}
}
