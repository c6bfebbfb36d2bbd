package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testIdempotency(t *testing.T, opener Opener) {
	parallel(t, opener, "SamePayloadReturnsExisting", idempotencySamePayload)
	parallel(t, opener, "DifferentPayloadRefused", idempotencyDifferentPayload)
	parallel(t, opener, "KeyFreeAfterTTL", idempotencyKeyFreeAfterTTL)
	parallel(t, opener, "SameBatch", idempotencySameBatch)
	parallel(t, opener, "ReturnsResultWhenDone", idempotencyReturnsResult)
	parallel(t, opener, "Concurrent", idempotencyConcurrent)
}

const day = 24 * time.Hour

// Contract 7: a repeated enqueue with the key returns the existing job and stores nothing new.
func idempotencySamePayload(t *testing.T, b *bundle) {
	first := b.insert(t, withKey("invoice-1", day), withArgs(`{"invoice":1}`))
	b.clock.Advance(time.Hour)

	repeat := params(t, withKey("invoice-1", day), withArgs(`{"invoice":1}`))
	res := b.insertMany(t, repeat)
	require.True(t, res[0].Existing)
	require.Equal(t, first.ID, res[0].Job.ID)
	require.Equal(t, "invoice-1", res[0].Job.IdempotencyKey)
	_, err := b.store.JobGet(t.Context(), repeat.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Equal(t, []string{first.ID}, ids(b.listAll(t, store.ListParams{})))
}

// The same key with another payload (args or kind) is ErrDuplicate and changes nothing.
func idempotencyDifferentPayload(t *testing.T, b *bundle) {
	first := b.insert(t, withKey("k", day), withArgs(`{"n":1}`))
	b.clock.Advance(time.Minute)
	before := b.get(t, first.ID)

	for _, p := range []*store.InsertParams{
		params(t, withKey("k", day), withArgs(`{"n":2}`)),
		params(t, withKey("k", day), withArgs(`{"n":1}`), withKind("other-kind")),
	} {
		_, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{p})
		require.ErrorIs(t, err, store.ErrDuplicate)
	}
	require.Equal(t, before, b.get(t, first.ID))
	require.Equal(t, []string{first.ID}, ids(b.listAll(t, store.ListParams{})))

	res := b.insertMany(t, params(t, withKey("k", day), withArgs(`{"n":1}`)))
	require.True(t, res[0].Existing, "the key still names the first job")
	require.Equal(t, first.ID, res[0].Job.ID)
}

// Once its retention has passed the key is free: a new job is created, even with new args.
func idempotencyKeyFreeAfterTTL(t *testing.T, b *bundle) {
	first := b.insert(t, withKey("k", time.Hour), withArgs(`{"n":1}`))
	b.clock.Advance(time.Hour - time.Second)
	res := b.insertMany(t, params(t, withKey("k", time.Hour), withArgs(`{"n":1}`)))
	require.True(t, res[0].Existing, "still within the TTL")

	b.clock.Advance(2 * time.Second)
	second := b.insert(t, withKey("k", time.Hour), withArgs(`{"n":2}`))
	require.NotEqual(t, first.ID, second.ID)
	require.Equal(t, hoppertype.StateQueued, b.get(t, first.ID).State, "the old job stays")

	res = b.insertMany(t, params(t, withKey("k", time.Hour), withArgs(`{"n":2}`)))
	require.True(t, res[0].Existing)
	require.Equal(t, second.ID, res[0].Job.ID, "the key now names the new job")
	_, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{params(t, withKey("k", time.Hour), withArgs(`{"n":1}`))})
	require.ErrorIs(t, err, store.ErrDuplicate)
}

// Two items with one key in one batch make one job; with different payloads, the batch fails.
func idempotencySameBatch(t *testing.T, b *bundle) {
	p1 := params(t, withKey("k", day))
	p2 := params(t, withKey("k", day))
	res := b.insertMany(t, p1, p2)
	require.False(t, res[0].Existing)
	require.True(t, res[1].Existing)
	require.Equal(t, p1.ID, res[0].Job.ID)
	require.Equal(t, p1.ID, res[1].Job.ID)

	q1 := params(t, withKey("other", day), withArgs(`{"n":1}`))
	q2 := params(t, withKey("other", day), withArgs(`{"n":2}`))
	_, err := b.store.JobInsertMany(t.Context(), []*store.InsertParams{q1, q2})
	require.ErrorIs(t, err, store.ErrDuplicate)
	require.NotContains(t, err.Error(), q1.ID, "names a job that was never stored")
	require.Equal(t, []string{p1.ID}, ids(b.listAll(t, store.ListParams{})))
}

// A repeated enqueue of a finished job returns it with its stored result.
func idempotencyReturnsResult(t *testing.T, b *bundle) {
	job := b.running(t, withKey("k", day))
	p := finishing(job, hoppertype.StateCompleted)
	p.Result = []byte(`{"ok":true}`)
	require.NoError(t, b.finish(t, p))

	res := b.insertMany(t, params(t, withKey("k", day), inQueue(job.Queue)))
	require.True(t, res[0].Existing)
	require.Equal(t, job.ID, res[0].Job.ID)
	require.Equal(t, hoppertype.StateCompleted, res[0].Job.State)
	require.JSONEq(t, `{"ok":true}`, string(res[0].Job.Result))
}

// Many concurrent enqueues with one key make exactly one job and no errors.
func idempotencyConcurrent(t *testing.T, b *bundle) {
	const n = 32
	results := make([]*store.InsertResult, n)
	errs := make([]error, n)
	ps := make([]*store.InsertParams, n)
	for i := range ps {
		ps[i] = params(t, withKey("race", day))
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			res, err := b.store.JobInsertMany(t.Context(), ps[i:i+1])
			if err == nil {
				results[i] = res[0]
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()

	jobIDs, created := map[string]bool{}, 0
	for i := range n {
		require.NoError(t, errs[i], "insert %d", i)
		jobIDs[results[i].Job.ID] = true
		if !results[i].Existing {
			created++
		}
	}
	require.Len(t, jobIDs, 1)
	require.Equal(t, 1, created)
	require.Len(t, b.listAll(t, store.ListParams{}), 1)
}
