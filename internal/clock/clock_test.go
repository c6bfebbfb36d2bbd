package clock

import (
	"context"
	"testing"
	"time"
)

func TestSleepWaitsOrStopsWithItsContext(t *testing.T) {
	t.Parallel()
	c := NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	done := make(chan bool, 1)
	go func() { done <- Sleep(t.Context(), c, time.Minute) }()
	for c.Pending() == 0 {
		time.Sleep(time.Millisecond)
	}
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
