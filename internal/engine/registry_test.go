package engine

import (
	"context"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
)

// registryEngine is an engine with only what registering attempts uses: the registry, a clock
// and the elector that a first running job wakes.
func registryEngine() *Engine {
	e := &Engine{running: map[string]*runningJob{}, canceled: map[string]time.Time{}, clock: clock.NewFake(time.Now())}
	e.leader = newElector(e)
	return e
}

// When a job comes back to this process under a new token while its old attempt still runs
// here, the old attempt is canceled as stale and cannot remove or outlive the new one.
func TestRegistryKeepsTheNewestAttempt(t *testing.T) {
	t.Parallel()
	e := registryEngine()
	ctx1, cancel1 := context.WithCancelCause(context.Background())
	ctx2, cancel2 := context.WithCancelCause(context.Background())
	defer cancel1(nil)
	defer cancel2(nil)
	e.register(&runningJob{row: &hoppertype.JobRow{ID: "j", Token: 1}, cancel: cancel1})
	e.register(&runningJob{row: &hoppertype.JobRow{ID: "j", Token: 2}, cancel: cancel2})
	require.ErrorIs(t, context.Cause(ctx1), attempt.ErrLeaseLost, "the superseded attempt is canceled")
	require.NoError(t, ctx2.Err())

	require.False(t, e.unregister("j", 1), "the old attempt's end does not remove the new one")
	require.False(t, e.cancelAttempt("j", 1, attempt.ErrLeaseLost), "a lease loss of the old token spares the new")
	require.NoError(t, ctx2.Err())
	require.True(t, e.cancelAttempt("j", 2, attempt.ErrJobCanceled))
	require.ErrorIs(t, context.Cause(ctx2), attempt.ErrJobCanceled)
	require.True(t, e.unregister("j", 2))
	require.Empty(t, e.running)
}

// A cancel that arrives between the claim and the handler's start still reaches the handler.
func TestCancelBeforeRegisterIsApplied(t *testing.T) {
	t.Parallel()
	e := registryEngine()
	require.False(t, e.CancelRunning("j"), "nothing runs yet")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	e.register(&runningJob{row: &hoppertype.JobRow{ID: "j", Token: 1}, cancel: cancel})
	require.ErrorIs(t, context.Cause(ctx), attempt.ErrJobCanceled)
	require.Empty(t, e.canceled)
}
