package server

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A stream asks every queue but those found drained, until a wake-up names them; a wake-up
// that comes while the claim that found a queue drained was under way keeps it asked.
func TestAskingSkipsDrainedQueuesUntilWoken(t *testing.T) {
	t.Parallel()
	a := newAsking([]string{"reports", "emails", "idle"})
	require.Equal(t, []string{"reports", "emails", "idle"}, a.next())
	first := a.launch()
	a.found(first, []string{"emails", "idle"})
	require.Equal(t, []string{"reports"}, a.next())
	require.True(t, a.anyDrained())

	second := a.launch()
	a.woken([]string{"emails"})
	require.Equal(t, []string{"reports", "emails"}, a.next())
	a.found(second, []string{"emails"}) // it looked before the job that woke emails came
	require.Equal(t, []string{"reports", "emails"}, a.next(), "emails stays asked")
	a.found(a.launch(), []string{"emails"})
	require.Equal(t, []string{"reports"}, a.next(), "a later claim found it drained")

	a.all()
	require.Equal(t, []string{"reports", "emails", "idle"}, a.next(), "the recheck asks every queue")
	require.False(t, a.anyDrained())
}
