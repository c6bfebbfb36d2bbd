package remote

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
)

// A lost outcome report would leave its job running on the server: transport errors are
// retried until the server answers about the job.
func TestReportsAreRetriedUntilTheServerAnswers(t *testing.T) {
	w := &Worker{log: slog.New(slog.NewTextHandler(io.Discard, nil)), clock: clock.Real{}}
	calls := 0
	err := w.reportWithRetry(t.Context(), func(context.Context) error {
		calls++
		if calls < 3 {
			return connect.NewError(connect.CodeUnavailable, "connection reset")
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 3, calls)

	// A server that crashed while it answered: connect-go reports the cut response as an
	// internal protocol error. It is no verdict on the job: the report is sent again.
	crash := connect.Errorf(connect.CodeInternal, "protocol error: incomplete envelope: %s", io.ErrUnexpectedEOF).
		WithCause(io.ErrUnexpectedEOF)
	calls = 0
	err = w.reportWithRetry(t.Context(), func(context.Context) error {
		calls++
		if calls < 2 {
			return crash
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 2, calls)

	calls = 0
	err = w.reportWithRetry(t.Context(), func(context.Context) error {
		calls++
		return connect.NewError(connect.CodeFailedPrecondition, "lease lost")
	})
	require.NoError(t, err, "a lost lease is a verdict: nothing left to report")
	require.Equal(t, 1, calls)

	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	err = w.reportWithRetry(ctx, func(context.Context) error { return errors.New("network down") })
	require.ErrorIs(t, err, context.DeadlineExceeded, "gives up when its time is up")
}

// A connection that broke reads as UNAVAILABLE; an answer of the server keeps its code.
func TestLostConnectionsAreUnavailable(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		connect.Errorf(connect.CodeInternal, "protocol error: incomplete envelope: %s", io.ErrUnexpectedEOF).WithCause(io.ErrUnexpectedEOF),
		connect.NewError(connect.CodeUnknown, "read: connection reset by peer").WithCause(syscall.ECONNRESET),
		io.EOF,
		connect.NewError(connect.CodeUnavailable, "dial tcp: connection refused"),
	} {
		require.Equal(t, connect.CodeUnavailable, connect.CodeOf(unavailable(err)), "%v", err)
		require.ErrorIs(t, unavailable(err), err, "the cause is kept")
	}
	for _, err := range []error{
		connect.NewError(connect.CodeInternal, "internal error (request id X)"),
		connect.NewError(connect.CodeFailedPrecondition, "lease lost"),
		context.Canceled,
	} {
		require.Equal(t, err, unavailable(err), "%v", err)
	}
}
