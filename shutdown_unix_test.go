//go:build unix

package hopper

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestShutdownContextEndsOnSecondSignal(t *testing.T) {
	// Not parallel: it sends a signal to the whole test process.
	ctx, cancel := ShutdownContext(time.Hour, syscall.SIGUSR1)
	defer cancel()
	require.NoError(t, ctx.Err())
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGUSR1))
	select {
	case <-ctx.Done():
		require.ErrorIs(t, ctx.Err(), context.Canceled, "ended by the signal, not the grace period")
	case <-time.After(10 * time.Second):
		t.Fatal("the signal did not end the shutdown context")
	}
}

func TestShutdownContextEndsAfterGrace(t *testing.T) {
	t.Parallel()
	ctx, cancel := ShutdownContext(time.Millisecond, syscall.SIGUSR2)
	defer cancel()
	<-ctx.Done()
	require.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
}
