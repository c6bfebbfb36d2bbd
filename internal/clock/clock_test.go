package clock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSleepWaitsOrStopsWithItsContext(t *testing.T) {
	t.Parallel()
	c := NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	done := make(chan bool, 1)
	go func() { done <- Sleep(t.Context(), c, time.Minute) }()
	require.Eventually(t, func() bool { return c.Pending() == 1 }, 5*time.Second, time.Millisecond, "Sleep waits on the clock")
	c.Advance(time.Minute)
	if !<-done {
		t.Fatal("a wait that passed reports false")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if Sleep(ctx, c, time.Hour) {
		t.Fatal("a wait whose context ended reports true")
	}
}
