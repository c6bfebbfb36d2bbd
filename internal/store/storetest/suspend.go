package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testSuspend(t *testing.T, opener Opener) {
	parallel(t, opener, "ResumeCarriesData", suspendResumeCarriesData)
	parallel(t, opener, "ResumeOnlySuspended", suspendResumeOnlySuspended)
	parallel(t, opener, "DeadlineFails", suspendDeadlineFails)
}

func suspendStore(t *testing.T, b *bundle) store.SuspendStore {
	t.Helper()
	return b.store
}

// suspended parks a running job until resumed, with a checkpoint and a deadline.
func (b *bundle) suspended(t *testing.T, deadline time.Time) *hoppertype.JobRow {
	t.Helper()
	job := b.running(t)
	p := finishing(job, hoppertype.StateSuspended)
	p.GiveBack, p.Outcome, p.Checkpoint, p.DeadlineAt = true, hoppertype.OutcomeSuspended, json.RawMessage(`{"page":3}`), deadline
	require.NoError(t, b.finish(t, p))
	got := b.get(t, job.ID)
	require.Equal(t, hoppertype.StateSuspended, got.State)
	return got
}

// Contract 13: a resume moves the job to queued with data for its next attempt, which also
// gets the checkpoint; a new suspension clears the data.
func suspendResumeCarriesData(t *testing.T, b *bundle) {
	job := b.suspended(t, b.clock.Now().Add(time.Hour))
	b.clock.Advance(time.Second)
	resumed, err := suspendStore(t, b).JobResume(t.Context(), &store.ResumeParams{ID: job.ID,
		Data: json.RawMessage(`{"approved":true}`), Actor: hoppertype.ActorAPI, Reason: "approved"})
	require.NoError(t, err)
	require.Equal(t, hoppertype.StateQueued, resumed.State)
	require.JSONEq(t, `{"approved":true}`, string(resumed.ResumeData))
	require.True(t, resumed.DeadlineAt.IsZero(), "the deadline no longer applies")
	require.Equal(t, 0, resumed.Attempt, "the suspension gave its attempt back")

	next := b.claimOne(t, job.Queue)
	require.Equal(t, job.ID, next.ID)
	require.JSONEq(t, `{"page":3}`, string(next.Checkpoint))
	require.JSONEq(t, `{"approved":true}`, string(next.ResumeData))

	events := b.events(t, job.ID)
	last := events[len(events)-2] // the claim follows the resume
	require.Equal(t, hoppertype.StateSuspended, last.From)
	require.Equal(t, hoppertype.StateQueued, last.To)
	require.Equal(t, hoppertype.ActorAPI, last.Actor)
	require.Equal(t, "approved", last.Reason)

	p := finishing(next, hoppertype.StateScheduled) // suspended until a time: a suspension too
	p.GiveBack, p.Outcome, p.RunAt = true, hoppertype.OutcomeSuspended, b.clock.Now().Add(time.Hour)
	require.NoError(t, b.finish(t, p))
	require.Nil(t, b.get(t, job.ID).ResumeData, "a new suspension waits for new data")
}

func suspendResumeOnlySuspended(t *testing.T, b *bundle) {
	queued := b.insert(t)
	_, err := suspendStore(t, b).JobResume(t.Context(), &store.ResumeParams{ID: queued.ID, Actor: hoppertype.ActorAPI})
	require.ErrorIs(t, err, store.ErrInvalidTransition)
	require.Equal(t, hoppertype.StateQueued, b.get(t, queued.ID).State)
	_, err = suspendStore(t, b).JobResume(t.Context(), &store.ResumeParams{ID: newID(t), Actor: hoppertype.ActorAPI})
	require.ErrorIs(t, err, store.ErrNotFound)
}

// A job still suspended at its deadline fails; others are left alone. Past its deadline a job
// no longer resumes, even before the leader has failed it.
func suspendDeadlineFails(t *testing.T, b *bundle) {
	due := b.suspended(t, b.clock.Now().Add(time.Minute))
	later := b.suspended(t, b.clock.Now().Add(time.Hour))
	b.clock.Advance(2 * time.Minute)
	_, err := suspendStore(t, b).JobResume(t.Context(), &store.ResumeParams{ID: due.ID, Actor: hoppertype.ActorAPI})
	require.ErrorIs(t, err, store.ErrInvalidTransition, "too late to resume")
	expires := b.clock.Now().Add(24 * time.Hour)
	ids, err := suspendStore(t, b).JobFailOverdue(t.Context(), &store.OverdueParams{Limit: 10, ExpiresAt: expires})
	require.NoError(t, err)
	require.Equal(t, []string{due.ID}, ids)
	got := b.get(t, due.ID)
	require.Equal(t, hoppertype.StateFailed, got.State)
	require.Equal(t, "still suspended at its deadline", got.LastError)
	sameTime(t, expires, got.ExpiresAt, "expires_at")
	require.Equal(t, hoppertype.StateSuspended, b.get(t, later.ID).State)
	events := b.events(t, due.ID)
	require.Equal(t, hoppertype.ActorLeader, events[len(events)-1].Actor)
}
