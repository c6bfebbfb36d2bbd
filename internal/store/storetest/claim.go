package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testClaim(t *testing.T, opener Opener) {
	parallel(t, opener, "Limit", claimLimit)
	parallel(t, opener, "PriorityThenFIFO", claimPriorityThenFIFO)
	parallel(t, opener, "OnlyQueue", claimOnlyQueue)
	parallel(t, opener, "Kinds", claimKinds)
	parallel(t, opener, "SetsLease", claimSetsLease)
	parallel(t, opener, "NewTokenAndAttemptEachClaim", claimNewTokenAndAttempt)
	parallel(t, opener, "NotTwice", claimNotTwice)
	parallel(t, opener, "ScheduledAfterPromotion", claimScheduledAfterPromotion)
	parallel(t, opener, "GroupOneAtATime", claimGroupOneAtATime)
	parallel(t, opener, "GroupInOrderAcrossRetries", claimGroupInOrderAcrossRetries)
}

func claimLimit(t *testing.T, b *bundle) {
	for range 5 {
		b.insert(t)
	}
	require.Len(t, b.claim(t, defaultQueue, 3), 3)
	require.Len(t, b.claim(t, defaultQueue, 3), 2)
	require.Empty(t, b.claim(t, defaultQueue, 3))
}

// Higher priority first; among equals, the oldest (smallest UUIDv7) first.
func claimPriorityThenFIFO(t *testing.T, b *bundle) {
	a := b.insert(t, withPriority(0))
	c := b.insert(t, withPriority(5))
	d := b.insert(t, withPriority(0))
	e := b.insert(t, withPriority(5))
	f := b.insert(t, withPriority(10))

	require.Equal(t, []string{f.ID, c.ID}, ids(b.claim(t, defaultQueue, 2)))
	require.Equal(t, []string{e.ID}, ids(b.claim(t, defaultQueue, 1)))
	require.Equal(t, []string{a.ID, d.ID}, ids(b.claim(t, defaultQueue, 10)))
}

func claimOnlyQueue(t *testing.T, b *bundle) {
	inA := []string{b.insert(t, inQueue("a")).ID, b.insert(t, inQueue("a")).ID}
	inB := b.insert(t, inQueue("b"))

	require.ElementsMatch(t, inA, ids(b.claim(t, "a", 10)))
	require.Empty(t, b.claim(t, "c", 10))
	require.Equal(t, hoppertype.StateQueued, b.get(t, inB.ID).State)
	require.Equal(t, []string{inB.ID}, ids(b.claim(t, "b", 10)))
}

func claimKinds(t *testing.T, b *bundle) {
	x := b.insert(t, withKind("x"))
	y := b.insert(t, withKind("y"))
	z := b.insert(t, withKind("z"))

	claim := func(kinds ...string) []string {
		return ids(b.claimAs(t, &store.ClaimParams{
			Queue: defaultQueue, Kinds: kinds, Limit: 10, WorkerID: workerA, LeaseDuration: defaultLease,
		}))
	}
	require.Empty(t, claim("nope"))
	require.ElementsMatch(t, []string{x.ID, z.ID}, claim("x", "z"))
	require.Equal(t, hoppertype.StateQueued, b.get(t, y.ID).State)
	require.Equal(t, []string{y.ID}, claim())
}

// A claim sets worker, lease expiry (now + LeaseDuration), start and heartbeat times, and the
// first token and attempt.
func claimSetsLease(t *testing.T, b *bundle) {
	job := b.insert(t)
	b.clock.Advance(5 * time.Second)
	now := b.clock.Now()
	jobs := b.claimAs(t, &store.ClaimParams{Queue: defaultQueue, Limit: 1, WorkerID: "w-17", LeaseDuration: 45 * time.Second})
	require.Len(t, jobs, 1)

	for _, got := range []*hoppertype.JobRow{jobs[0], b.get(t, job.ID)} {
		require.Equal(t, job.ID, got.ID)
		require.Equal(t, hoppertype.StateRunning, got.State)
		require.Equal(t, "w-17", got.WorkerID)
		require.Equal(t, job.Token+1, got.Token)
		require.Equal(t, 1, got.Attempt)
		sameTime(t, now.Add(45*time.Second), got.LeaseExpiresAt, "lease_expires_at")
		sameTime(t, now, got.StartedAt, "started_at")
		sameTime(t, now, got.HeartbeatAt, "heartbeat_at")
	}
}

// Every claim issues a new, larger token; a claim after a failed attempt counts a new attempt.
func claimNewTokenAndAttempt(t *testing.T, b *bundle) {
	first := b.running(t)
	p := finishing(first, hoppertype.StateScheduled)
	p.RunAt = b.clock.Now().Add(time.Second)
	require.NoError(t, b.finish(t, p))
	b.clock.Advance(time.Second)
	require.Equal(t, 1, b.promote(t).Promoted)

	jobs := b.claimAs(t, &store.ClaimParams{Queue: first.Queue, Limit: 1, WorkerID: workerB, LeaseDuration: defaultLease})
	require.Len(t, jobs, 1)
	second := jobs[0]
	require.Greater(t, second.Token, first.Token)
	require.Equal(t, first.Attempt+1, second.Attempt)
	require.Equal(t, workerB, second.WorkerID)
	sameTime(t, b.clock.Now(), second.StartedAt, "started_at of the second attempt")
}

func claimNotTwice(t *testing.T, b *bundle) {
	b.insert(t)
	b.insert(t)
	held := b.claim(t, defaultQueue, 10)
	require.Len(t, held, 2)
	require.Empty(t, b.claimAs(t, &store.ClaimParams{Queue: defaultQueue, Limit: 10, WorkerID: workerB, LeaseDuration: defaultLease}))
	for _, job := range held {
		got := b.get(t, job.ID)
		require.Equal(t, workerA, got.WorkerID)
		require.Equal(t, job.Token, got.Token)
	}
}

// A scheduled job is invisible to claims until a promotion pass after its run_at.
func claimScheduledAfterPromotion(t *testing.T, b *bundle) {
	start := b.clock.Now()
	soon := b.insert(t, withRunAt(start.Add(time.Minute)))
	later := b.insert(t, inQueue("other"), withRunAt(start.Add(5*time.Minute)))
	require.Equal(t, hoppertype.StateScheduled, soon.State)

	res := b.promote(t)
	require.Zero(t, res.Promoted)
	sameTime(t, start.Add(time.Minute), res.NextRunAt, "next run_at before any is due")
	require.Empty(t, b.claim(t, defaultQueue, 10))

	b.clock.Advance(time.Minute - time.Second)
	require.Zero(t, b.promote(t).Promoted)
	require.Empty(t, b.claim(t, defaultQueue, 10))

	b.clock.Advance(time.Second)
	res = b.promote(t)
	require.Equal(t, 1, res.Promoted)
	require.Equal(t, []string{defaultQueue}, res.Queues)
	sameTime(t, start.Add(5*time.Minute), res.NextRunAt, "next run_at after the first promotion")
	require.Equal(t, []string{soon.ID}, ids(b.claim(t, defaultQueue, 10)))

	b.clock.Advance(10 * time.Minute)
	res = b.promote(t)
	require.Equal(t, 1, res.Promoted)
	require.Equal(t, []string{"other"}, res.Queues)
	require.True(t, res.NextRunAt.IsZero(), "nothing is scheduled any more")
	require.Equal(t, []string{later.ID}, ids(b.claim(t, "other", 10)))
}

// Contract 9: jobs sharing a group key run one at a time, oldest first.
func claimGroupOneAtATime(t *testing.T, b *bundle) {
	older := b.insert(t, withGroup("customer-1"))
	younger := b.insert(t, withGroup("customer-1"))
	free := b.insert(t)

	require.ElementsMatch(t, []string{older.ID, free.ID}, ids(b.claim(t, defaultQueue, 10)))
	require.Empty(t, b.claim(t, defaultQueue, 10), "the group is busy")

	running := b.get(t, older.ID)
	require.NoError(t, b.finish(t, finishing(running, hoppertype.StateCompleted)))
	require.Equal(t, []string{younger.ID}, ids(b.claim(t, defaultQueue, 10)))
}

// Contract 9, in order: while the older job of a group waits for its retry, the younger one
// does not overtake it.
func claimGroupInOrderAcrossRetries(t *testing.T, b *bundle) {
	older := b.insert(t, withGroup("customer-2"))
	younger := b.insert(t, withGroup("customer-2"))
	require.Equal(t, []string{older.ID}, ids(b.claim(t, defaultQueue, 10)))

	retry := finishing(b.get(t, older.ID), hoppertype.StateScheduled)
	retry.RunAt = b.clock.Now().Add(time.Minute)
	require.NoError(t, b.finish(t, retry))
	require.Empty(t, b.claim(t, defaultQueue, 10), "the younger job waits for the older one's retry")

	b.clock.Advance(time.Minute)
	_, err := b.store.JobPromoteScheduled(t.Context(), &store.PromoteParams{})
	require.NoError(t, err)
	require.Equal(t, []string{older.ID}, ids(b.claim(t, defaultQueue, 10)))
	require.NoError(t, b.finish(t, finishing(b.get(t, older.ID), hoppertype.StateCompleted)))
	require.Equal(t, []string{younger.ID}, ids(b.claim(t, defaultQueue, 10)))
}
