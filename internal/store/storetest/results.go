package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Contract 12: finished jobs expire. The store keeps expires_at as the outcome sets it, hides
// expired jobs from every read, and deletes them, history and keys included, when swept.
func testResults(t *testing.T, opener Opener) {
	parallel(t, opener, "ResultTTLStored", resultsTTLStored)
	parallel(t, opener, "ExpirySetOnFinish", resultsExpirySetOnFinish)
	parallel(t, opener, "ExpirySetOnCancel", resultsExpirySetOnCancel)
	parallel(t, opener, "HiddenAfterExpiry", resultsHiddenAfterExpiry)
	parallel(t, opener, "ReadRemovesExpired", resultsReadRemovesExpired)
	parallel(t, opener, "NotSweptBeforeExpiry", resultsNotSweptBeforeExpiry)
	parallel(t, opener, "SweptInBatches", resultsSweptInBatches)
	parallel(t, opener, "SweepSaysSoonest", resultsSweepSaysSoonest)
	parallel(t, opener, "ExpiredKeptCounted", resultsExpiredKeptCounted)
	parallel(t, opener, "SettledWindowsSaved", resultsSettledWindowsSaved)
	parallel(t, opener, "SweptManyInAWindow", resultsSweptManyInAWindow)
	parallel(t, opener, "SweepTakesHistoryAndKey", resultsSweepTakesHistoryAndKey)
	parallel(t, opener, "ListFinishedBetween", resultsListFinishedBetween)
	parallel(t, opener, "ExpiresAfter", resultsExpiresAfter)
}

// sweeper is the bundle's store as a Sweeper: every store sweeps.
func (b *bundle) sweeper(t *testing.T) store.Sweeper {
	t.Helper()
	return b.store
}

// sweep walks the whole table in windows of scan jobs and returns how many it deleted.
func (b *bundle) sweep(t *testing.T, scan int) int {
	t.Helper()
	total, after := 0, ""
	for {
		res := b.sweepWindow(t, after, scan)
		total += res.Deleted
		if res.Next == "" {
			return total
		}
		after = res.Next
	}
}

func (b *bundle) sweepWindow(t *testing.T, after string, scan int) *store.SweepResult {
	t.Helper()
	res, err := b.sweeper(t).JobSweepExpired(t.Context(), &store.SweepParams{Now: b.clock.Now(), After: after, Scan: scan})
	require.NoError(t, err)
	return res
}

func withResultTTL(d time.Duration) option { return func(p *store.InsertParams) { p.ResultTTL = d } }

// finishExpiring ends job's attempt in state with expires_at set ttl from now.
func (b *bundle) finishExpiring(t *testing.T, job *hoppertype.JobRow, state hoppertype.JobState, ttl time.Duration) time.Time {
	t.Helper()
	p := finishing(job, state)
	p.ExpiresAt = b.clock.Now().Add(ttl)
	require.NoError(t, b.finish(t, p))
	return p.ExpiresAt
}

// expiring returns a job in state that expires ttl from now.
func (b *bundle) expiring(t *testing.T, state hoppertype.JobState, ttl time.Duration, opts ...option) *hoppertype.JobRow {
	t.Helper()
	job := b.running(t, opts...)
	b.finishExpiring(t, job, state, ttl)
	return job
}

// A job's own result TTL is stored and read back; zero means none.
func resultsTTLStored(t *testing.T, b *bundle) {
	job := b.insert(t, withResultTTL(90*time.Minute))
	require.Equal(t, 90*time.Minute, job.ResultTTL, "the inserted row")
	require.Equal(t, 90*time.Minute, b.get(t, job.ID).ResultTTL)
	require.Zero(t, b.get(t, b.insert(t).ID).ResultTTL)
	claimed := b.running(t, withResultTTL(time.Hour))
	require.Equal(t, time.Hour, claimed.ResultTTL, "a claim returns it")
}

// Completed and failed outcomes store the expiry they carry; a retry leaves it unset.
func resultsExpirySetOnFinish(t *testing.T, b *bundle) {
	for _, state := range []hoppertype.JobState{hoppertype.StateCompleted, hoppertype.StateFailed} {
		job := b.running(t)
		at := b.finishExpiring(t, job, state, 24*time.Hour)
		sameTime(t, at, b.get(t, job.ID).ExpiresAt, string(state)+" expires_at")
	}
	job := b.running(t)
	p := finishing(job, hoppertype.StateScheduled)
	p.RunAt = b.clock.Now().Add(time.Minute)
	require.NoError(t, b.finish(t, p))
	require.True(t, b.get(t, job.ID).ExpiresAt.IsZero(), "a retry does not expire")
}

// A cancel stores the expiry it carries, for waiting and running jobs alike.
func resultsExpirySetOnCancel(t *testing.T, b *bundle) {
	at := b.clock.Now().Add(time.Hour)
	for _, job := range []*hoppertype.JobRow{b.insert(t), b.running(t)} {
		got, err := b.store.JobCancel(t.Context(), &store.CancelParams{ID: job.ID, Actor: hoppertype.ActorAPI,
			Reason: "test", ExpiresAt: at})
		require.NoError(t, err)
		sameTime(t, at, got.ExpiresAt, "returned row")
		sameTime(t, at, b.get(t, job.ID).ExpiresAt, "stored row")
	}
}

// From its expiry on, a job is gone for every read, before any sweep: get, list, events,
// attempts, cancel and the dead-letter count.
func resultsHiddenAfterExpiry(t *testing.T, b *bundle) {
	job := b.expiring(t, hoppertype.StateFailed, time.Hour)
	kept := b.jobIn(t, hoppertype.StateCompleted)
	b.clock.Advance(time.Hour - time.Microsecond)
	b.get(t, job.ID)
	require.Len(t, b.listAll(t, store.ListParams{}), 2)

	b.clock.Advance(time.Microsecond)
	_, err := b.store.JobGet(t.Context(), job.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, []string{kept.ID}, ids(b.listAll(t, store.ListParams{})))
	require.Empty(t, b.listAll(t, store.ListParams{States: []hoppertype.JobState{hoppertype.StateFailed}}))
	_, err = b.store.JobEvents(t.Context(), job.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.store.JobAttempts(t.Context(), job.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = b.store.JobCancel(t.Context(), &store.CancelParams{ID: job.ID, Actor: hoppertype.ActorAPI})
	require.ErrorIs(t, err, store.ErrNotFound)
	st, err := b.deadLetters(t).DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Zero(t, st.Count)
}

// A read that finds a job expired removes it (lazily, before any sweep), so a clock stepped
// back afterwards cannot bring it back; a job whose idempotency key is live stays, hidden,
// for its key still de-duplicates (contract 7).
func resultsReadRemovesExpired(t *testing.T, b *bundle) {
	job := b.expiring(t, hoppertype.StateCompleted, time.Hour)
	keyed := b.running(t, withKey("order-9", 30*day), inQueue("keyed"))
	b.finishExpiring(t, keyed, hoppertype.StateCompleted, time.Hour)
	b.clock.Advance(time.Hour)
	for _, id := range []string{job.ID, keyed.ID} {
		_, err := b.store.JobGet(t.Context(), id)
		require.ErrorIs(t, err, store.ErrNotFound)
	}

	b.clock.Advance(-2 * time.Hour) // the clock steps back before the sweep ran
	_, err := b.store.JobGet(t.Context(), job.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "a job a reader saw gone stays gone")
	_, err = b.store.JobEvents(t.Context(), job.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "its history went with it")
	other := params(t, withKey("order-9", 30*day), withArgs(`{"other":true}`))
	_, err = b.store.JobInsertMany(t.Context(), []*store.InsertParams{other})
	require.ErrorIs(t, err, store.ErrDuplicate, "the keyed job was kept: its key still holds")
}

// A sweep deletes nothing whose expiry has not come, nor jobs without one.
func resultsNotSweptBeforeExpiry(t *testing.T, b *bundle) {
	job := b.expiring(t, hoppertype.StateCompleted, time.Hour)
	forever := b.jobIn(t, hoppertype.StateCompleted)
	waiting := b.insert(t)
	b.clock.Advance(59 * time.Minute)
	require.Zero(t, b.sweep(t, 500))
	for _, id := range []string{job.ID, forever.ID, waiting.ID} {
		b.get(t, id)
	}
	b.clock.Advance(time.Minute)
	require.Equal(t, 1, b.sweep(t, 500))
	b.get(t, forever.ID)
	b.get(t, waiting.ID)
}

// A sweep walks the jobs in id order a window at a time: each call looks at most at its
// window, deletes the expired jobs in it, and says where the walk goes on.
func resultsSweptInBatches(t *testing.T, b *bundle) {
	var expired []string
	for i := range 7 {
		expired = append(expired, b.expiring(t, hoppertype.StateCompleted, time.Duration(i+1)*time.Minute).ID)
	}
	later := b.expiring(t, hoppertype.StateFailed, 2*time.Hour)
	b.clock.Advance(time.Hour)

	require.Equal(t, []string{later.ID}, ids(b.listAll(t, store.ListParams{})), "hidden before the sweep")
	first := b.sweepWindow(t, "", 3)
	require.Equal(t, 3, first.Deleted)
	require.Equal(t, expired[2], first.Next, "the window ends at its last id")
	second := b.sweepWindow(t, first.Next, 3)
	require.Equal(t, 3, second.Deleted)
	third := b.sweepWindow(t, second.Next, 3)
	require.Equal(t, 1, third.Deleted, "the last expired job; the failed one is kept")
	require.Empty(t, third.Next, "the walk reached the end")
	require.Zero(t, b.sweep(t, 3), "nothing left that expired")
	b.get(t, later.ID)
	for _, id := range expired {
		again := params(t)
		again.ID = id
		b.insertMany(t, again) // the id is free: the row is gone
	}
}

// A window deletes all its expired jobs however many (a store may delete them in several
// transactions), and keeps those that have not expired, between and after them.
func resultsSweptManyInAWindow(t *testing.T, b *bundle) {
	const n = 1234
	ps := make([]*store.InsertParams, n)
	for i := range ps {
		ps[i] = params(t, inQueue("many"))
	}
	b.insertMany(t, ps...)
	jobs := b.claim(t, "many", n)
	require.Len(t, jobs, n)
	finish := make([]*store.FinishParams, n)
	var kept []string
	for i, job := range jobs {
		finish[i] = finishing(job, hoppertype.StateCompleted)
		finish[i].ExpiresAt = b.clock.Now().Add(time.Minute)
		if i%100 == 7 {
			finish[i].ExpiresAt = b.clock.Now().Add(time.Hour)
			kept = append(kept, job.ID)
		}
	}
	errs, err := b.store.JobFinishMany(t.Context(), finish)
	require.NoError(t, err)
	for _, err := range errs {
		require.NoError(t, err)
	}
	b.clock.Advance(time.Minute)

	res := b.sweepWindow(t, "", 5000)
	require.Equal(t, n-len(kept), res.Deleted)
	require.Empty(t, res.Next)
	require.ElementsMatch(t, kept, ids(b.listAll(t, store.ListParams{})))
}

// A window says when the earliest of its jobs that have not expired will: the expired ones,
// those without an expiry (waiting, running) and those of other windows do not count.
func resultsSweepSaysSoonest(t *testing.T, b *bundle) {
	b.expiring(t, hoppertype.StateCompleted, time.Minute)
	late := b.expiring(t, hoppertype.StateFailed, 3*time.Hour)
	b.insert(t)
	b.running(t)
	soon := b.clock.Now().Add(90 * time.Minute)
	b.expiring(t, hoppertype.StateCompleted, 90*time.Minute)
	nextWindow := b.expiring(t, hoppertype.StateCompleted, 10*time.Minute)
	b.clock.Advance(5 * time.Minute)

	first := b.sweepWindow(t, "", 5)
	require.Equal(t, 1, first.Deleted)
	require.Equal(t, 1, first.Expired, "the expired job")
	require.Equal(t, 2, first.Unended, "the queued and the running job")
	sameTime(t, soon, first.Soonest, "the earliest expiry of the window's unexpired jobs")
	second := b.sweepWindow(t, first.Next, 5)
	require.Zero(t, second.Deleted)
	require.Zero(t, second.Expired)
	require.Zero(t, second.Unended)
	require.Empty(t, second.Next)
	require.Equal(t, b.get(t, nextWindow.ID).ExpiresAt.UnixMicro(), second.Soonest.UnixMicro(), "its own window's")

	b.clock.Advance(3 * time.Hour)
	require.Equal(t, 3, b.sweep(t, 5))
	live := b.sweepWindow(t, "", 5)
	require.True(t, live.Soonest.IsZero(), "only live jobs are left: no expiry, got %v", live.Soonest)
	_, err := b.store.JobGet(t.Context(), late.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// A swept job takes its history and its idempotency key along, once the key has expired: its
// key is free for another payload, and its id can even be inserted again with a history of
// its own.
func resultsSweepTakesHistoryAndKey(t *testing.T, b *bundle) {
	p := params(t, withKey("order-7", 30*day), inQueue("sweep"))
	b.insertMany(t, p)
	job := b.claimOne(t, "sweep")
	b.finishExpiring(t, job, hoppertype.StateCompleted, time.Hour)
	require.Len(t, b.attempts(t, job.ID), 1)
	b.clock.Advance(time.Hour)

	other := params(t, withKey("order-7", 30*day), withArgs(`{"other":true}`))
	_, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{other})
	require.ErrorIs(t, err, store.ErrDuplicate, "hidden, not swept: the key still holds")

	// Contract 7: a key de-duplicates for its whole retention, so its job is not swept
	// before the key expires, even when the job's own result TTL is shorter.
	require.Zero(t, b.sweep(t, 500), "the key is live: the job stays")
	_, err = b.store.JobInsertMany(t.Context(), []*store.InsertParams{other})
	require.ErrorIs(t, err, store.ErrDuplicate, "still within the key's retention")

	b.clock.Advance(30 * day)
	require.Equal(t, 1, b.sweep(t, 500))
	res := b.insertMany(t, other)
	require.False(t, res[0].Existing, "the key went with the job")

	again := params(t)
	again.ID = job.ID
	b.insertMany(t, again)
	require.Len(t, b.events(t, job.ID), 1, "only the new job's creation")
	require.Empty(t, b.attempts(t, job.ID))
}

// JobList bounds the finish time, as the dead-letter listing does.
func resultsListFinishedBetween(t *testing.T, b *bundle) {
	first := b.jobIn(t, hoppertype.StateFailed)
	b.clock.Advance(time.Hour)
	mid := b.clock.Now()
	second := b.jobIn(t, hoppertype.StateFailed)
	b.insert(t) // never finished
	b.clock.Advance(time.Hour)
	third := b.jobIn(t, hoppertype.StateCompleted)

	asc := func(p store.ListParams) []string {
		p.Ascending = true
		return idsOrNil(b.listAll(t, p))
	}
	require.Equal(t, []string{second.ID, third.ID}, asc(store.ListParams{FinishedAfter: mid}))
	require.Equal(t, []string{first.ID}, asc(store.ListParams{FinishedBefore: mid}))
	require.Equal(t, []string{second.ID}, asc(store.ListParams{FinishedAfter: mid, FinishedBefore: b.clock.Now()}))
}

// ExpiresAfter lets a caller without the row set the expiry: the job's own result TTL wins
// over the caller's fallback, and an explicit ExpiresAt over both.
func resultsExpiresAfter(t *testing.T, b *bundle) {
	now := b.clock.Now()
	own := b.running(t, withResultTTL(time.Hour))
	plain := b.running(t)
	explicit := b.running(t, withResultTTL(time.Hour))
	for _, c := range []struct {
		job  *hoppertype.JobRow
		at   time.Time
		want time.Time
	}{
		{own, time.Time{}, now.Add(time.Hour)},
		{plain, time.Time{}, now.Add(time.Minute)},
		{explicit, now.Add(time.Second), now.Add(time.Second)},
	} {
		p := finishing(c.job, hoppertype.StateCompleted)
		p.ExpiresAt, p.ExpiresAfter = c.at, time.Minute
		require.NoError(t, b.finish(t, p))
		sameTime(t, c.want, b.get(t, c.job.ID).ExpiresAt, "expires_at of "+c.job.ID)
	}
}

// A job kept past its expiry by its live idempotency key counts as expired, though not
// deleted: the sweep must not take its window for settled.
func resultsExpiredKeptCounted(t *testing.T, b *bundle) {
	job := b.running(t, withKey("kept-"+newID(t), 2*time.Hour))
	b.finishExpiring(t, job, hoppertype.StateCompleted, time.Minute)
	b.clock.Advance(5 * time.Minute)
	res := b.sweepWindow(t, "", 5)
	require.Zero(t, res.Deleted, "the key keeps its job")
	require.Equal(t, 1, res.Expired)
	require.Zero(t, res.Unended)
	require.Zero(t, res.Soonest, "no job left that expires later")
}

// The sweep's settled windows are saved and read back (in id order, times to the
// microsecond), and each save replaces the last.
func resultsSettledWindowsSaved(t *testing.T, b *bundle) {
	ctx := t.Context()
	got, err := b.store.SweepSettled(ctx)
	require.NoError(t, err)
	require.Empty(t, got, "a new store has none")
	at := b.clock.Now().Truncate(time.Microsecond)
	ids := []string{newID(t), newID(t), newID(t)}
	ws := []store.SettledWindow{
		{After: "", Last: ids[0], Soonest: at.Add(time.Hour)},
		{After: ids[0], Last: ids[1], Soonest: at.Add(90*time.Minute + 7*time.Microsecond)},
		{After: ids[1], Last: ids[2], Soonest: at.Add(time.Minute)},
	}
	require.NoError(t, b.store.SweepSettle(ctx, ws))
	got, err = b.store.SweepSettled(ctx)
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i := range ws {
		require.Equal(t, ws[i].After, got[i].After)
		require.Equal(t, ws[i].Last, got[i].Last)
		sameTime(t, ws[i].Soonest, got[i].Soonest, fmt.Sprintf("window %d", i))
	}
	require.NoError(t, b.store.SweepSettle(ctx, ws[1:2]))
	got, err = b.store.SweepSettled(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1, "a save replaces the last")
	require.Equal(t, ws[1].Last, got[0].Last)
	require.NoError(t, b.store.SweepSettle(ctx, nil))
	got, err = b.store.SweepSettled(ctx)
	require.NoError(t, err)
	require.Empty(t, got)
}
