package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// jobIn creates a job and drives it into state through the store's own API. A running job is
// held by workerA; it is the only job of its queue.
func (b *bundle) jobIn(t *testing.T, state hoppertype.JobState, opts ...option) *hoppertype.JobRow {
	t.Helper()
	var job *hoppertype.JobRow
	switch state {
	case hoppertype.StateScheduled:
		job = b.insert(t, append(opts, withRunAt(b.clock.Now().Add(time.Hour)))...)
	case hoppertype.StateQueued:
		job = b.insert(t, opts...)
	case hoppertype.StateRunning:
		job = b.running(t, opts...)
	case hoppertype.StateSuspended:
		job = b.running(t, opts...)
		p := finishing(job, hoppertype.StateSuspended)
		p.GiveBack, p.Outcome = true, hoppertype.OutcomeOK
		require.NoError(t, b.finish(t, p))
	case hoppertype.StateCompleted, hoppertype.StateFailed:
		job = b.running(t, opts...)
		require.NoError(t, b.finish(t, finishing(job, state)))
	case hoppertype.StateCanceled:
		job = b.insert(t, opts...)
		_, err := b.store.JobCancel(t.Context(), &store.CancelParams{ID: job.ID, Actor: hoppertype.ActorAPI, Reason: "setup"})
		require.NoError(t, err)
	default:
		t.Fatalf("jobIn: unknown state %q", state)
	}
	got := b.get(t, job.ID)
	require.Equal(t, state, got.State)
	return got
}

// expireAndReclaim lets job's lease expire, rescues it and claims it again for workerB. It
// returns the job under its new lease.
func (b *bundle) expireAndReclaim(t *testing.T, job *hoppertype.JobRow) *hoppertype.JobRow {
	t.Helper()
	b.clock.Advance(defaultLease + time.Second)
	require.Contains(t, b.rescue(t).JobIDs, job.ID)
	b.clock.Advance(time.Second)
	jobs := b.claimAs(t, &store.ClaimParams{Queue: job.Queue, Limit: 1, WorkerID: workerB, LeaseDuration: time.Minute})
	require.Len(t, jobs, 1)
	require.Equal(t, job.ID, jobs[0].ID)
	require.Greater(t, jobs[0].Token, job.Token)
	return jobs[0]
}
