package remote

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/stretchr/testify/require"
)

// A lost outcome report would leave its job running on the server: transport errors are
// retried until the server answers about the job.
func TestReportsAreRetriedUntilTheServerAnswers(t *testing.T) {
	w := &Worker{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
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
