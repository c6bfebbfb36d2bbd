package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testDue(t *testing.T, opener Opener) {
	parallel(t, opener, "Empty", dueEmpty)
	parallel(t, opener, "Lease", dueLease)
	parallel(t, opener, "Jobs", dueJobs)
	parallel(t, opener, "Expiries", dueExpiries)
	parallel(t, opener, "ExpiriesOfTheHead", dueExpiriesOfTheHead)
	parallel(t, opener, "Schedules", dueSchedules)
}

func (b *bundle) due(t *testing.T, after time.Time) *store.Due {
	t.Helper()
	d, err := b.store.LeaderDue(t.Context(), &store.DueParams{ExpiringAfter: after})
	require.NoError(t, err)
	return d
}

// An empty store has no lease and nothing due.
func dueEmpty(t *testing.T, b *bundle) {
	require.Equal(t, &store.Due{}, b.due(t, time.Time{}))
}

// The lease read is the lease as stored, live or lapsed, and reading it takes nothing.
func dueLease(t *testing.T, b *bundle) {
	ctx := t.Context()
	_, err := b.store.LeaderElect(ctx, &store.LeaderParams{NodeID: "node-a", TTL: 15 * time.Second})
	require.NoError(t, err)
	d := b.due(t, time.Time{})
	require.NotNil(t, d.Leader)
	require.Equal(t, "node-a", d.Leader.NodeID)
	require.EqualValues(t, 1, d.Leader.Term)
	sameTime(t, Start.Add(15*time.Second), d.Leader.ExpiresAt, "lease expiry")

	b.clock.Advance(20 * time.Second)
	d = b.due(t, time.Time{})
	require.Equal(t, "node-a", d.Leader.NodeID, "a lapsed lease is read as stored")
	lead, err := b.store.LeaderElect(ctx, &store.LeaderParams{NodeID: "node-b", TTL: 15 * time.Second})
	require.NoError(t, err)
	require.Equal(t, "node-b", lead.NodeID, "reading the lapsed lease did not renew it")
	require.EqualValues(t, 2, b.due(t, time.Time{}).Leader.Term)
}

// Running jobs, the earliest run_at of a scheduled job and the earliest deadline of a
// suspended one are due; queued and ended jobs are not.
func dueJobs(t *testing.T, b *bundle) {
	b.insert(t) // queued: the workers' business, not the leader's
	b.insert(t, withRunAt(Start.Add(time.Hour)))
	b.insert(t, withRunAt(Start.Add(30*time.Minute)))
	d := b.due(t, time.Time{})
	require.False(t, d.Running)
	sameTime(t, Start.Add(30*time.Minute), d.NextRunAt, "earliest run_at")
	require.True(t, d.NextDeadline.IsZero())

	job := b.running(t)
	require.True(t, b.due(t, time.Time{}).Running)
	p := finishing(job, hoppertype.StateCompleted)
	p.ExpiresAt = Start.Add(2 * time.Hour)
	require.NoError(t, b.finish(t, p))
	require.False(t, b.due(t, time.Time{}).Running, "an ended job is not running")

	b.suspended(t, Start.Add(3*time.Hour))
	b.suspended(t, Start.Add(45*time.Minute))
	d = b.due(t, time.Time{})
	sameTime(t, Start.Add(45*time.Minute), d.NextDeadline, "earliest deadline")
	sameTime(t, Start.Add(30*time.Minute), d.Earliest(), "the earliest of all")
}

// NextExpiry is the earliest expiry of a job or an idempotency key after ExpiringAfter.
func dueExpiries(t *testing.T, b *bundle) {
	for _, at := range []time.Duration{time.Hour, 2 * time.Hour} {
		job := b.running(t)
		p := finishing(job, hoppertype.StateCompleted)
		p.ExpiresAt = Start.Add(at)
		require.NoError(t, b.finish(t, p))
	}
	sameTime(t, Start.Add(time.Hour), b.due(t, time.Time{}).NextExpiry, "every expiry counts")
	sameTime(t, Start.Add(2*time.Hour), b.due(t, Start.Add(time.Hour)).NextExpiry, "only those after ExpiringAfter")
	require.True(t, b.due(t, Start.Add(2*time.Hour)).NextExpiry.IsZero(), "none after the last")

	// The lease row keeps the latest walk any election brought, never an earlier one; reads
	// count expiries after the later of it and their own.
	elect := func(node string, swept time.Time) {
		_, err := b.store.LeaderElect(t.Context(), &store.LeaderParams{NodeID: node, TTL: time.Minute, SweptBefore: swept})
		require.NoError(t, err)
	}
	elect("node-a", Start.Add(time.Hour))
	sameTime(t, Start.Add(2*time.Hour), b.due(t, time.Time{}).NextExpiry, "after the walk the lease row keeps")
	elect("node-a", time.Time{})
	elect("node-b", Start.Add(time.Minute)) // does not take the lease, nor lower the walk
	sameTime(t, Start.Add(2*time.Hour), b.due(t, Start).NextExpiry, "the row's walk is later than the read's")
	require.True(t, b.due(t, Start.Add(2*time.Hour)).NextExpiry.IsZero(), "the read's walk is later than the row's")

	// A job kept by its idempotency key past its own expiry goes when the key does.
	b.insert(t, withKey("invoice-7", 90*time.Minute))
	sameTime(t, Start.Add(90*time.Minute), b.due(t, Start.Add(time.Hour)).NextExpiry, "a key's expiry counts")
}

// Only the expiries of the oldest DueParams.Head() jobs (store.DueHeadJobs for the leader)
// count: the read is an index range whatever the table holds. A newer job with a shorter
// retention does not make the store look due before them. (A head of a few jobs here: the
// bound is the same statement's parameter, and filling 5,000 took half a minute under -race.)
func dueExpiriesOfTheHead(t *testing.T, b *bundle) {
	const headJobs = 20
	head := make([]*store.InsertParams, headJobs)
	for i := range head {
		head[i] = params(t)
	}
	b.insertMany(t, head...)
	jobs := b.claim(t, defaultQueue, headJobs)
	require.Len(t, jobs, headJobs)
	ends := make([]*store.FinishParams, len(jobs))
	for i, j := range jobs {
		ends[i] = finishing(j, hoppertype.StateCompleted)
		ends[i].ExpiresAt = Start.Add(3 * time.Hour)
	}
	errs, err := b.store.JobFinishMany(t.Context(), ends)
	require.NoError(t, err)
	for _, err := range errs {
		require.NoError(t, err)
	}
	newer := b.running(t)
	p := finishing(newer, hoppertype.StateCompleted)
	p.ExpiresAt = Start.Add(time.Hour)
	require.NoError(t, b.finish(t, p))
	due := func(head int) time.Time {
		d, err := b.store.LeaderDue(t.Context(), &store.DueParams{HeadJobs: head})
		require.NoError(t, err)
		return d.NextExpiry
	}
	sameTime(t, Start.Add(3*time.Hour), due(headJobs), "the oldest jobs' expiry")
	sameTime(t, Start.Add(time.Hour), due(headJobs+1), "a head that reaches the newer job counts its expiry")
	sameTime(t, Start.Add(time.Hour), due(0), "the leader's head, store.DueHeadJobs, holds every job here")
}

// NextFire is the earliest next fire time of a schedule that is not paused.
func dueSchedules(t *testing.T, b *bundle) {
	b.upsertSchedule(t, newSchedule("every-minute", Start))
	later := newSchedule("hourly", Start)
	later.Spec, later.NextFireAt = "0 * * * *", Start.Add(time.Hour)
	b.upsertSchedule(t, later)
	sameTime(t, Start.Add(time.Minute), b.due(t, time.Time{}).NextFire, "the earliest fire")
	_, err := b.scheduleStore(t).ScheduleSetPaused(t.Context(), "every-minute", true)
	require.NoError(t, err)
	sameTime(t, Start.Add(time.Hour), b.due(t, time.Time{}).NextFire, "a paused schedule is not due")
}
