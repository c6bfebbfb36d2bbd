package jobstate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/jobstate"
	"github.com/stretchr/testify/require"
)

// TestEveryPair walks every (from, to) pair: the allowed ones (written out here independently of
// the table) succeed, every other one returns ErrInvalidTransition.
func TestEveryPair(t *testing.T) {
	t.Parallel()
	const (
		sch = hoppertype.StateScheduled
		que = hoppertype.StateQueued
		run = hoppertype.StateRunning
		sus = hoppertype.StateSuspended
		com = hoppertype.StateCompleted
		fai = hoppertype.StateFailed
		can = hoppertype.StateCanceled
		wai = hoppertype.StateWaiting
	)
	allowed := map[[2]hoppertype.JobState]bool{
		{jobstate.New, que}: true, {jobstate.New, sch}: true, {jobstate.New, wai}: true,
		{wai, que}: true, {wai, sch}: true, {wai, can}: true,
		{sch, que}: true, {sch, can}: true,
		{que, run}: true, {que, can}: true,
		{run, com}: true, {run, fai}: true, {run, sch}: true, {run, que}: true, {run, sus}: true, {run, can}: true,
		{sus, que}: true, {sus, fai}: true, {sus, can}: true,
		{fai, que}: true, {fai, sch}: true,
		{can, que}: true, {can, wai}: true,
	}
	from := append([]hoppertype.JobState{jobstate.New}, hoppertype.AllStates...)
	seen := 0
	for _, f := range from {
		for _, to := range append([]hoppertype.JobState{jobstate.New}, hoppertype.AllStates...) {
			err := jobstate.Check(f, to)
			if allowed[[2]hoppertype.JobState{f, to}] {
				seen++
				require.NoError(t, err, "%q → %q", f, to)
				require.NotEmpty(t, jobstate.Why(f, to))
				continue
			}
			require.ErrorIs(t, err, jobstate.ErrInvalidTransition, "%q → %q", f, to)
			var te *jobstate.TransitionError
			require.True(t, errors.As(err, &te))
			require.Equal(t, f, te.From)
			require.Equal(t, to, te.To)
		}
	}
	require.Equal(t, len(allowed), seen)
}

// A terminal state is left only by a replay or, for a failed job, a retry in place
// (contract 18), and for a canceled one the re-arm that retry makes; a completed job never
// moves.
func TestTerminalStatesOnlyLeaveByReplayOrRetry(t *testing.T) {
	t.Parallel()
	for _, st := range hoppertype.AllStates {
		if !st.Terminal() {
			continue
		}
		for _, to := range hoppertype.AllStates {
			if !jobstate.Allowed(st, to) {
				continue
			}
			why := jobstate.Why(st, to)
			if st == hoppertype.StateFailed {
				require.True(t, strings.HasPrefix(why, jobstate.RetryInPlace), "%s → %s: %s", st, to, why)
				continue
			}
			if st == hoppertype.StateCanceled && to == hoppertype.StateWaiting {
				require.Equal(t, jobstate.Rearmed, why)
				continue
			}
			require.Equal(t, "replay", why, "%s → %s", st, to)
		}
	}
	require.Equal(t, []hoppertype.JobState{hoppertype.StateRunning}, jobstate.Sources(hoppertype.StateCompleted))
	require.True(t, jobstate.Allowed(hoppertype.StateFailed, hoppertype.StateQueued), "an incident is resolved in place")
	require.True(t, jobstate.Allowed(hoppertype.StateFailed, hoppertype.StateScheduled), "for a later time")
}

func TestSources(t *testing.T) {
	t.Parallel()
	require.ElementsMatch(t,
		[]hoppertype.JobState{hoppertype.StateWaiting, hoppertype.StateScheduled, hoppertype.StateQueued,
			hoppertype.StateRunning, hoppertype.StateSuspended},
		jobstate.Sources(hoppertype.StateCanceled))
	require.ElementsMatch(t, []hoppertype.JobState{jobstate.New, hoppertype.StateCanceled}, jobstate.Sources(hoppertype.StateWaiting),
		"an enqueue makes a job wait, and a re-arm makes a canceled child wait again")
}
