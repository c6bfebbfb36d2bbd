package clock_test

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
)

func TestFakeFiresInOrderOnlyWhenDue(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := clock.NewFake(start)
	fired := make(chan int, 3)
	c.AfterFunc(2*time.Second, func() { fired <- 2 })
	tm := c.NewTimer(time.Second)
	stopped := c.AfterFunc(time.Second, func() { fired <- 99 })
	require.True(t, stopped.Stop())
	require.False(t, stopped.Stop())

	c.Advance(999 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("timer fired early")
	default:
	}
	c.Advance(time.Millisecond)
	require.Equal(t, start.Add(time.Second), <-tm.C())
	require.Equal(t, 1, c.Pending())
	c.Advance(time.Second)
	require.Equal(t, 2, <-fired)
	require.Equal(t, 0, c.Pending())
	require.Equal(t, start.Add(2*time.Second), c.Now())
}

// A timer set for a time fires when the fake clock reaches it, or at once if it has: set
// from a time, not a delay, it cannot start a step late because the clock moved after a loop
// read it (NewTimerAt, AfterFuncAt).
func TestFakeTimersForATime(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := clock.NewFake(start)
	var c clock.Clock = f
	later := clock.NewTimerAt(c, start.Add(time.Second))
	f.Advance(999 * time.Millisecond)
	select {
	case <-later.C():
		t.Fatal("fired before its time")
	default:
	}
	f.Advance(time.Millisecond)
	require.Equal(t, start.Add(time.Second), <-later.C())

	read := f.Now()
	f.Advance(time.Second) // the clock moves after a loop read it, before its timer is set
	due := clock.NewTimerAt(c, read.Add(500*time.Millisecond))
	select {
	case <-due.C():
	default:
		t.Fatal("a timer for a time already passed did not fire at once")
	}
	ran := make(chan struct{})
	clock.AfterFuncAt(c, read, func() { close(ran) })
	<-ran
	require.Zero(t, f.Pending())

	// A clock without timers for a time gets them from the delay.
	r := clock.NewTimerAt(clock.Real{}, time.Now().Add(time.Millisecond))
	<-r.C()
}
