package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testLease(t *testing.T, opener Opener) {
	parallel(t, opener, "RescueExpired", leaseRescueExpired)
	parallel(t, opener, "RescueKeepsRetryBudget", leaseRescueKeepsRetryBudget)
	parallel(t, opener, "UnexpiredNotRescued", leaseUnexpiredNotRescued)
	parallel(t, opener, "RescueLimit", leaseRescueLimit)
	parallel(t, opener, "ExtendFromNowMayShorten", leaseExtendFromNowMayShorten)
	parallel(t, opener, "ExtendPreventsRescue", leaseExtendPreventsRescue)
}

// Contract 3: an expired lease returns the job to queued, gives the attempt back and records
// the attempt as lease_expired.
func leaseRescueExpired(t *testing.T, b *bundle) {
	queued := b.insert(t)
	b.clock.Advance(2 * time.Second)
	claimedAt := b.clock.Now()
	held := b.claimOne(t, defaultQueue)
	b.clock.Advance(defaultLease + time.Second)
	rescuedAt := b.clock.Now()

	res := b.rescue(t)
	require.Equal(t, []string{queued.ID}, res.JobIDs)
	require.Equal(t, []string{defaultQueue}, res.Queues)

	job := b.get(t, queued.ID)
	require.Equal(t, hoppertype.StateQueued, job.State)
	require.Equal(t, queued.Attempt, job.Attempt, "the attempt is given back")
	require.Empty(t, job.WorkerID)
	require.True(t, job.LeaseExpiresAt.IsZero())

	as := b.attempts(t, queued.ID)
	require.Len(t, as, 1)
	require.Equal(t, hoppertype.OutcomeLeaseExpired, as[0].Outcome)
	require.Equal(t, held.Token, as[0].Token)
	require.Equal(t, held.Attempt, as[0].Attempt)
	require.Equal(t, workerA, as[0].WorkerID)
	sameTime(t, claimedAt, as[0].StartedAt, "attempt start")
	sameTime(t, rescuedAt, as[0].EndedAt, "attempt end")

	evs := b.events(t, queued.ID)
	last := evs[len(evs)-1]
	require.Equal(t, hoppertype.StateRunning, last.From)
	require.Equal(t, hoppertype.StateQueued, last.To)
	require.Equal(t, hoppertype.ActorLeader, last.Actor)
	require.NotEmpty(t, last.Reason)
	sameTime(t, rescuedAt, last.At, "rescue event time")
}

// A job with one attempt allowed survives any number of rescues: they consume no retry.
func leaseRescueKeepsRetryBudget(t *testing.T, b *bundle) {
	job := b.running(t, withMaxAttempts(1))
	for range 3 {
		b.clock.Advance(defaultLease + time.Second)
		require.Equal(t, []string{job.ID}, b.rescue(t).JobIDs)
		jobs := b.claim(t, job.Queue, 1)
		require.Len(t, jobs, 1)
		require.Equal(t, 1, jobs[0].Attempt)
		require.Equal(t, 1, jobs[0].MaxAttempts)
	}
}

func leaseUnexpiredNotRescued(t *testing.T, b *bundle) {
	job := b.running(t)
	b.clock.Advance(defaultLease - time.Second)
	require.Empty(t, b.rescue(t).JobIDs)
	got := b.get(t, job.ID)
	require.Equal(t, hoppertype.StateRunning, got.State)
	require.Equal(t, job.Token, got.Token)
	require.Equal(t, workerA, got.WorkerID)
	sameTime(t, job.LeaseExpiresAt, got.LeaseExpiresAt, "lease_expires_at")
	require.Empty(t, b.attempts(t, job.ID))
}

func leaseRescueLimit(t *testing.T, b *bundle) {
	for range 3 {
		b.insert(t)
	}
	require.Len(t, b.claim(t, defaultQueue, 3), 3)
	b.clock.Advance(defaultLease + time.Second)

	res, err := b.store.JobRescueExpired(t.Context(), &store.RescueParams{Limit: 2})
	require.NoError(t, err)
	require.Len(t, res.JobIDs, 2)
	require.Len(t, b.rescue(t).JobIDs, 1)
	require.Len(t, b.claim(t, defaultQueue, 10), 3)
}

func (b *bundle) extend(t *testing.T, job *hoppertype.JobRow, d time.Duration) {
	t.Helper()
	errs, err := b.store.JobExtendLeases(t.Context(), []*store.ExtendParams{{ID: job.ID, Token: job.Token, Duration: d}})
	require.NoError(t, err)
	require.Len(t, errs, 1)
	require.NoError(t, errs[0])
}

// Extending sets the expiry to now + Duration, which may be sooner than before.
func leaseExtendFromNowMayShorten(t *testing.T, b *bundle) {
	job := b.running(t)
	b.clock.Advance(10 * time.Second)
	b.extend(t, job, time.Minute)
	sameTime(t, b.clock.Now().Add(time.Minute), b.get(t, job.ID).LeaseExpiresAt, "extended lease")

	b.clock.Advance(time.Second)
	b.extend(t, job, 5*time.Second)
	sameTime(t, b.clock.Now().Add(5*time.Second), b.get(t, job.ID).LeaseExpiresAt, "shortened lease")

	b.clock.Advance(6 * time.Second) // well inside the original 30 s lease
	require.Equal(t, []string{job.ID}, b.rescue(t).JobIDs)
}

func leaseExtendPreventsRescue(t *testing.T, b *bundle) {
	job := b.running(t)
	b.clock.Advance(20 * time.Second)
	b.extend(t, job, defaultLease)
	b.clock.Advance(20 * time.Second) // past the original expiry
	require.Empty(t, b.rescue(t).JobIDs)
	require.Equal(t, hoppertype.StateRunning, b.get(t, job.ID).State)

	b.clock.Advance(11 * time.Second) // past the extended one
	require.Equal(t, []string{job.ID}, b.rescue(t).JobIDs)
}
