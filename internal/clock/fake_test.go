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
