package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testInsert(t *testing.T, opener Opener) {
	parallel(t, opener, "StateFromRunAt", insertStateFromRunAt)
	parallel(t, opener, "RoundTrip", insertRoundTrip)
	parallel(t, opener, "ManyInOrder", insertManyInOrder)
	parallel(t, opener, "ManyFairnessKeys", insertManyFairnessKeys)
	parallel(t, opener, "ManyAtomicDuplicateID", insertManyAtomicDuplicateID)
	parallel(t, opener, "ManyAtomicIdempotencyConflict", insertManyAtomicIdempotencyConflict)
	parallel(t, opener, "GetUnknown", insertGetUnknown)
}

// A job is queued when its run_at is zero or past, scheduled when it is in the future.
func insertStateFromRunAt(t *testing.T, b *bundle) {
	now := b.clock.Now()
	cases := []struct {
		name      string
		runAt     time.Time
		wantState hoppertype.JobState
	}{
		{"zero", time.Time{}, hoppertype.StateQueued},
		{"past", now.Add(-time.Hour), hoppertype.StateQueued},
		{"now", now, hoppertype.StateQueued},
		{"future", now.Add(time.Minute), hoppertype.StateScheduled},
	}
	for _, c := range cases {
		job := b.insert(t, withRunAt(c.runAt))
		require.Equal(t, c.wantState, job.State, c.name)
		got := b.get(t, job.ID)
		require.Equal(t, c.wantState, got.State, c.name)
		if c.wantState == hoppertype.StateScheduled {
			sameTime(t, c.runAt, got.RunAt, c.name+" run_at")
		} else {
			require.False(t, got.RunAt.After(now), "%s: a queued job's run_at is not in the future", c.name)
		}
	}
}

// Every field an insert sets comes back from JobGet.
func insertRoundTrip(t *testing.T, b *bundle) {
	p := params(t, inQueue("billing"), withKind("charge-card"), withPriority(7), withArgs(`{"amount":1250,"currency":"EUR"}`))
	p.Headers = map[string]string{"traceparent": "00-abc-def-01", "x-tenant": "acme"}
	p.MaxAttempts = 9
	p.Timeout = 90 * time.Second
	p.RetryPolicy = &hoppertype.RetryPolicy{Base: time.Second, Multiplier: 2.5, Cap: time.Hour, Jitter: 0.1, RetryBusinessErrors: true}
	p.GroupKey, p.MergeKey, p.ScheduleID = "customer-42", "recalc-42", "nightly"
	p.FairnessKey = "tenant-42"
	b.clock.Advance(3 * time.Second)
	now := b.clock.Now()

	res := b.insertMany(t, p)
	require.False(t, res[0].Existing)
	for _, job := range []*hoppertype.JobRow{res[0].Job, b.get(t, p.ID)} {
		require.Equal(t, p.ID, job.ID)
		require.Equal(t, "charge-card", job.Kind)
		require.Equal(t, "billing", job.Queue)
		require.Equal(t, 7, job.Priority)
		require.JSONEq(t, string(p.Args), string(job.Args))
		require.Equal(t, p.Headers, job.Headers)
		require.Equal(t, hoppertype.StateQueued, job.State)
		require.Equal(t, 0, job.Attempt)
		require.Equal(t, 9, job.MaxAttempts)
		require.Equal(t, 90*time.Second, job.Timeout)
		require.Equal(t, p.RetryPolicy, job.RetryPolicy)
		require.Equal(t, "customer-42", job.GroupKey)
		require.Equal(t, "tenant-42", job.FairnessKey)
		require.Equal(t, "recalc-42", job.MergeKey)
		require.Equal(t, "nightly", job.ScheduleID)
		require.Empty(t, job.WorkerID)
		require.True(t, job.LeaseExpiresAt.IsZero())
		require.True(t, job.FinishedAt.IsZero())
		sameTime(t, now, job.CreatedAt, "created_at")
		sameTime(t, now, job.UpdatedAt, "updated_at")
	}
}

// JobInsertMany returns one result per item, in order.
func insertManyInOrder(t *testing.T, b *bundle) {
	ps := []*store.InsertParams{params(t, withKind("a")), params(t, withKind("b")), params(t, withKind("c"))}
	res := b.insertMany(t, ps...)
	for i, r := range res {
		require.False(t, r.Existing)
		require.Equal(t, ps[i].ID, r.Job.ID)
		require.Equal(t, ps[i].Kind, b.get(t, ps[i].ID).Kind)
	}
}

// A batch whose later item repeats a primary key inserts nothing, not even the idempotency key
// of an earlier item.
func insertManyAtomicDuplicateID(t *testing.T, b *bundle) {
	stored := b.insert(t, withArgs(`{"stored":true}`))
	first := params(t, withKey("batch-key", time.Hour))
	second := params(t)
	dup := params(t, withArgs(`{"stored":false}`))
	dup.ID = stored.ID

	_, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{first, second, dup})
	require.Error(t, err)
	for _, id := range []string{first.ID, second.ID} {
		_, err := b.store.JobGet(t.Context(), id)
		require.ErrorIs(t, err, store.ErrNotFound)
	}
	require.Equal(t, stored, b.get(t, stored.ID))

	// The failed batch did not reserve its idempotency key.
	again := params(t, withKey("batch-key", time.Hour), withArgs(`{"other":1}`))
	res := b.insertMany(t, again)
	require.False(t, res[0].Existing)
	require.Equal(t, again.ID, res[0].Job.ID)
}

// A batch whose later item conflicts with a live idempotency key inserts nothing.
func insertManyAtomicIdempotencyConflict(t *testing.T, b *bundle) {
	keyed := b.insert(t, withKey("k", time.Hour), withArgs(`{"n":1}`))
	fresh := params(t)
	conflict := params(t, withKey("k", time.Hour), withArgs(`{"n":2}`))

	_, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{fresh, conflict})
	require.ErrorIs(t, err, store.ErrDuplicate)
	_, err = b.store.JobGet(t.Context(), fresh.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, []string{keyed.ID}, ids(b.listAll(t, store.ListParams{})))
}

func insertGetUnknown(t *testing.T, b *bundle) {
	b.insert(t)
	_, err := b.store.JobGet(t.Context(), newID(t))
	require.ErrorIs(t, err, store.ErrNotFound)
}

// A batch keeps each job's fairness key, none for a job without one.
func insertManyFairnessKeys(t *testing.T, b *bundle) {
	res := b.insertMany(t, params(t, withFairness("tenant-a")), params(t), params(t, withFairness("tenant-b")))
	want := []string{"tenant-a", "", "tenant-b"}
	for i, r := range res {
		require.Equal(t, want[i], r.Job.FairnessKey, "item %d as returned", i)
		require.Equal(t, want[i], b.get(t, r.Job.ID).FairnessKey, "item %d as stored", i)
	}
}
