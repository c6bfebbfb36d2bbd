package storetest

import (
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Contract 18: a failed job is an incident, resolved in place (the same job back to work with
// more attempts, audited) or replayed as a new job, not both by mistake; and a job that has
// not ended gets a new attempt budget.
func testIncidents(t *testing.T, opener Opener) {
	parallel(t, opener, "RetryKeepsTheJob", incidentsRetryKeepsTheJob)
	parallel(t, opener, "RetryLater", incidentsRetryLater)
	parallel(t, opener, "RetryOnlyFailed", incidentsRetryOnlyFailed)
	parallel(t, opener, "RetryConcurrentOnce", incidentsRetryConcurrentOnce)
	parallel(t, opener, "RetryAndReplayExclude", incidentsRetryAndReplayExclude)
	parallel(t, opener, "ReplayTwiceRefused", incidentsReplayTwiceRefused)
	parallel(t, opener, "ReplayManySkipsReplayed", incidentsReplayManySkipsReplayed)
	parallel(t, opener, "RetryMany", incidentsRetryMany)
	parallel(t, opener, "RetryManyConcurrent", incidentsRetryManyConcurrent)
	parallel(t, opener, "SetMaxAttempts", incidentsSetMaxAttempts)
}

func (b *bundle) retry(t *testing.T, p store.RetryParams) (*store.Replay, error) {
	t.Helper()
	if p.Attempts == 0 {
		p.Attempts = 1
	}
	if p.By == "" {
		p.By, p.Actor, p.Reason = "alice", hoppertype.ActorOperator, "card fixed"
	}
	return b.store.JobRetry(t.Context(), &p)
}

func (b *bundle) replayAgain(t *testing.T, id, by string) *store.Replay {
	t.Helper()
	r, err := b.store.JobReplay(t.Context(), &store.ReplayParams{SourceID: id, NewID: newID(t), By: by,
		Actor: hoppertype.ActorOperator, Reason: "replay", Again: true})
	require.NoError(t, err)
	return r
}

// A retry in place keeps the job: its id, idempotency key, group and history (the failed
// attempt included), and adds attempts; the transition and the audit row name who did it.
func incidentsRetryKeepsTheJob(t *testing.T, b *bundle) {
	job := b.insert(t, inQueue("charge"), withKey("order-7", time.Hour), withGroup("customer-9"), withMaxAttempts(1),
		withArgs(`{"card":1}`))
	claimed := b.claimOne(t, "charge")
	fail := finishing(claimed, hoppertype.StateFailed)
	fail.Error = "card declined"
	require.NoError(t, b.finish(t, fail))
	failed := b.get(t, job.ID)
	require.Equal(t, hoppertype.StateFailed, failed.State)
	before := b.events(t, job.ID)
	b.clock.Advance(time.Minute)

	r, err := b.retry(t, store.RetryParams{ID: job.ID, Attempts: 2, Args: json.RawMessage(`{"card":2}`)})
	require.NoError(t, err)
	got := r.Job
	require.Equal(t, job.ID, got.ID)
	require.Equal(t, hoppertype.StateQueued, got.State)
	require.Equal(t, 1, got.Attempt, "attempts so far are kept")
	require.Equal(t, 3, got.MaxAttempts, "two more attempts")
	require.JSONEq(t, `{"card":2}`, string(got.Args))
	require.Equal(t, "order-7", got.IdempotencyKey)
	require.Equal(t, "customer-9", got.GroupKey)
	require.True(t, got.FinishedAt.IsZero())
	require.True(t, got.ExpiresAt.IsZero(), "a job back at work does not expire")
	sameTime(t, b.clock.Now(), got.RunAt, "run_at")
	require.Equal(t, got, b.get(t, job.ID), "the row as stored")

	evs := b.events(t, job.ID)
	require.Len(t, evs, len(before)+1, "the history so far, and the retry")
	require.Equal(t, before, evs[:len(before)], "the history so far is kept")
	last := evs[len(evs)-1]
	require.Equal(t, hoppertype.StateFailed, last.From)
	require.Equal(t, hoppertype.StateQueued, last.To)
	require.Equal(t, hoppertype.ActorOperator, last.Actor)
	require.Equal(t, "retry by alice: card fixed", last.Reason)
	attempts := b.attempts(t, job.ID)
	require.Len(t, attempts, 1, "the failed attempt stays in the history")
	require.Equal(t, "card declined", attempts[0].Error)
	require.Equal(t, claimed.Token, attempts[0].Token)

	require.Equal(t, store.ActionRetry, r.Action)
	require.Equal(t, job.ID, r.SourceJobID)
	require.Equal(t, job.ID, r.NewJobID)
	require.Equal(t, job.ID, r.OriginalID)
	require.Equal(t, "alice", r.ReplayedBy)
	require.False(t, r.Forced)
	log := b.replayPages(t, store.ReplayListParams{SourceJobID: job.ID})
	require.Len(t, log, 1)
	require.Equal(t, store.ActionRetry, log[0].Action)
	require.Equal(t, "card fixed", log[0].Reason)

	res := b.insertMany(t, params(t, inQueue("charge"), withKey("order-7", time.Hour), withMaxAttempts(1), withArgs(`{"card":1}`)))
	require.True(t, res[0].Existing, "the key still names the job")
	require.Equal(t, job.ID, res[0].Job.ID)

	again := b.claimOne(t, "charge")
	require.Equal(t, job.ID, again.ID)
	require.Equal(t, 2, again.Attempt)
	require.NoError(t, b.finish(t, finishing(again, hoppertype.StateCompleted)))
	attempts = b.attempts(t, job.ID)
	require.Len(t, attempts, 2)
	require.Equal(t, hoppertype.OutcomeOK, attempts[1].Outcome)
	st, err := b.store.DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Zero(t, st.Count+st.Replayed, "no dead letter is left")
}

// A retry for a later time schedules the job.
func incidentsRetryLater(t *testing.T, b *bundle) {
	job := b.jobIn(t, hoppertype.StateFailed)
	at := b.clock.Now().Add(time.Hour)
	r, err := b.retry(t, store.RetryParams{ID: job.ID, RunAt: at})
	require.NoError(t, err)
	require.Equal(t, hoppertype.StateScheduled, r.Job.State)
	sameTime(t, at, r.Job.RunAt, "run_at")
	require.Equal(t, job.Attempt+1, r.Job.MaxAttempts)
	evs := b.events(t, job.ID)
	require.Equal(t, hoppertype.StateScheduled, evs[len(evs)-1].To)
}

// Only a failed job is retried in place; an unknown or expired one is not found.
func incidentsRetryOnlyFailed(t *testing.T, b *bundle) {
	for _, state := range []hoppertype.JobState{hoppertype.StateQueued, hoppertype.StateScheduled,
		hoppertype.StateRunning, hoppertype.StateSuspended, hoppertype.StateCompleted, hoppertype.StateCanceled} {
		job := b.jobIn(t, state)
		_, err := b.retry(t, store.RetryParams{ID: job.ID})
		require.ErrorIs(t, err, store.ErrInvalidTransition, string(state))
		require.Equal(t, job, b.get(t, job.ID), "%s: unchanged", state)
	}
	_, err := b.retry(t, store.RetryParams{ID: newID(t)})
	require.ErrorIs(t, err, store.ErrNotFound)
	expired := b.expiring(t, hoppertype.StateFailed, time.Minute)
	b.clock.Advance(time.Minute)
	_, err = b.retry(t, store.RetryParams{ID: expired.ID})
	require.ErrorIs(t, err, store.ErrNotFound)
	require.Empty(t, b.replayPages(t, store.ReplayListParams{}), "nothing audited")
}

// Of concurrent retries of one failed job, exactly one succeeds: one more run, one audit row.
func incidentsRetryConcurrentOnce(t *testing.T, b *bundle) {
	job := b.jobIn(t, hoppertype.StateFailed)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = b.store.JobRetry(t.Context(), &store.RetryParams{ID: job.ID, Attempts: 1, By: "racer",
				Actor: hoppertype.ActorAPI})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
			continue
		}
		require.ErrorIs(t, err, store.ErrInvalidTransition)
	}
	require.Equal(t, 1, ok, "one retry wins")
	got := b.get(t, job.ID)
	require.Equal(t, job.Attempt+1, got.MaxAttempts, "attempts were added once")
	require.Len(t, b.replayPages(t, store.ReplayListParams{SourceJobID: job.ID}), 1)
}

// A dead letter is either retried or replayed: a replayed one is not retried unless forced
// (recorded), a retried one is not failed any more and so not replayed; a concurrent retry and
// replay of one dead letter do not both happen.
func incidentsRetryAndReplayExclude(t *testing.T, b *bundle) {
	replayed := b.jobIn(t, hoppertype.StateFailed)
	first := b.replay(t, replayed.ID, "bob")
	_, err := b.retry(t, store.RetryParams{ID: replayed.ID})
	var re *hoppertype.ReplayedError
	require.ErrorAs(t, err, &re)
	require.ErrorIs(t, err, hoppertype.ErrAlreadyReplayed)
	require.Equal(t, first.NewJobID, re.ReplayJobID)
	require.Equal(t, "bob", re.ReplayedBy)
	require.Equal(t, hoppertype.StateFailed, b.get(t, replayed.ID).State)
	r, err := b.retry(t, store.RetryParams{ID: replayed.ID, Again: true})
	require.NoError(t, err)
	require.True(t, r.Forced)
	log := b.replayPages(t, store.ReplayListParams{SourceJobID: replayed.ID})
	require.Len(t, log, 2)
	require.True(t, log[0].Forced, "the forced retry is audited as forced")
	require.False(t, log[1].Forced)

	retried := b.jobIn(t, hoppertype.StateFailed)
	_, err = b.retry(t, store.RetryParams{ID: retried.ID})
	require.NoError(t, err)
	_, err = b.store.JobReplay(t.Context(), &store.ReplayParams{SourceID: retried.ID, NewID: newID(t), By: "x"})
	require.ErrorIs(t, err, store.ErrInvalidTransition, "a retried job is no longer a dead letter")

	for range 5 {
		job := b.jobIn(t, hoppertype.StateFailed)
		var wg sync.WaitGroup
		var retryErr, replayErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, retryErr = b.store.JobRetry(t.Context(), &store.RetryParams{ID: job.ID, Attempts: 1, By: "r", Actor: hoppertype.ActorAPI})
		}()
		go func() {
			defer wg.Done()
			_, replayErr = b.store.JobReplay(t.Context(), &store.ReplayParams{SourceID: job.ID, NewID: newID(t), By: "p"})
		}()
		wg.Wait()
		require.True(t, (retryErr == nil) != (replayErr == nil), "exactly one of retry (%v) and replay (%v)", retryErr, replayErr)
		if retryErr != nil {
			require.ErrorIs(t, retryErr, hoppertype.ErrAlreadyReplayed)
		} else {
			require.ErrorIs(t, replayErr, store.ErrInvalidTransition)
		}
	}
}

// Item 9 of issue 31: a dead letter replayed twice became two jobs. A second replay is refused
// with an error naming the first, unless forced, and the forced one is audited as forced.
func incidentsReplayTwiceRefused(t *testing.T, b *bundle) {
	src := b.failedIn(t, "charge")
	first := b.replay(t, src.ID, "alice")
	b.clock.Advance(time.Minute)
	_, err := b.store.JobReplay(t.Context(), &store.ReplayParams{SourceID: src.ID, NewID: newID(t), By: "bob",
		Actor: hoppertype.ActorOperator, Reason: "replay"})
	var re *hoppertype.ReplayedError
	require.ErrorAs(t, err, &re)
	require.True(t, errors.Is(err, hoppertype.ErrAlreadyReplayed))
	require.Equal(t, src.ID, re.JobID)
	require.Equal(t, first.NewJobID, re.ReplayJobID)
	require.Equal(t, "alice", re.ReplayedBy)
	sameTime(t, first.ReplayedAt, re.ReplayedAt, "replayed_at")
	require.Contains(t, err.Error(), first.NewJobID, "the message names the earlier replay")
	require.Len(t, b.listAll(t, store.ListParams{Queues: []string{"charge"}, States: []hoppertype.JobState{hoppertype.StateQueued}}), 1,
		"one job, not two")

	second := b.replayAgain(t, src.ID, "bob")
	require.True(t, second.Forced)
	log := b.replayPages(t, store.ReplayListParams{SourceJobID: src.ID})
	require.Len(t, log, 2)
	require.Equal(t, second.ID, log[0].ID)
	require.True(t, log[0].Forced)
	require.Equal(t, store.ActionReplay, log[0].Action)
	require.False(t, log[1].Forced)
}

// ReplayMany skips the dead letters replayed before and says how many.
func incidentsReplayManySkipsReplayed(t *testing.T, b *bundle) {
	a := b.failedIn(t, "bulk")
	done := b.failedIn(t, "bulk")
	b.failedIn(t, "other")
	b.replay(t, done.ID, "alice")
	res, err := b.store.JobReplayMany(t.Context(), &store.ReplayManyParams{
		DeadLetterFilter: store.DeadLetterFilter{Queues: []string{"bulk"}}, NewIDs: []string{newID(t), newID(t)}, By: "ops"})
	require.NoError(t, err)
	require.Equal(t, []string{a.ID}, sources(res.Replays))
	require.Equal(t, 1, res.Skipped)
}

// RetryMany retries the oldest failed jobs matching its filter, up to its limit, skipping
// (and counting) the replayed ones; a second call continues.
func incidentsRetryMany(t *testing.T, b *bundle) {
	var failed []string
	for range 4 {
		failed = append(failed, b.failedIn(t, "bulk").ID)
		b.clock.Advance(time.Second)
	}
	other := b.failedIn(t, "other")
	b.replay(t, failed[1], "alice")
	p := store.RetryManyParams{DeadLetterFilter: store.DeadLetterFilter{Queues: []string{"bulk"}}, Limit: 2, Attempts: 3,
		By: "ops", Actor: hoppertype.ActorOperator, Reason: "bulk retry"}
	res, err := b.store.JobRetryMany(t.Context(), &p)
	require.NoError(t, err)
	require.Equal(t, []string{failed[0], failed[2]}, sources(res.Retries))
	require.Equal(t, 1, res.Skipped)
	for _, r := range res.Retries {
		require.Equal(t, store.ActionRetry, r.Action)
		require.Equal(t, hoppertype.StateQueued, r.Job.State)
		require.Equal(t, r.Job.Attempt+3, r.Job.MaxAttempts)
		require.Equal(t, r.Job, b.get(t, r.SourceJobID))
	}
	res, err = b.store.JobRetryMany(t.Context(), &p)
	require.NoError(t, err)
	require.Equal(t, []string{failed[3]}, sources(res.Retries))
	res, err = b.store.JobRetryMany(t.Context(), &p)
	require.NoError(t, err)
	require.Empty(t, res.Retries)
	require.Equal(t, hoppertype.StateFailed, b.get(t, failed[1]).State, "the replayed one is left")
	require.Equal(t, hoppertype.StateFailed, b.get(t, other.ID).State, "outside the filter")
}

// Concurrent RetryMany calls retry each dead letter once.
func incidentsRetryManyConcurrent(t *testing.T, b *bundle) {
	const n = 30
	for range n {
		b.jobIn(t, hoppertype.StateFailed)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	seen := map[string]int{}
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := b.store.JobRetryMany(t.Context(), &store.RetryManyParams{Limit: 10, Attempts: 1, By: "racer",
				Actor: hoppertype.ActorAPI})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range res.Retries {
				seen[r.SourceJobID]++
			}
		}()
	}
	wg.Wait()
	for id, count := range seen {
		require.Equal(t, 1, count, "job %s retried %d times", id, count)
		job := b.get(t, id)
		require.Equal(t, job.Attempt+1, job.MaxAttempts, "one more attempt, once")
	}
	require.Len(t, b.replayPages(t, store.ReplayListParams{}), len(seen), "one audit row each")
}

// A job that has not ended gets a new budget, never below what it has used; an ended one
// does not.
func incidentsSetMaxAttempts(t *testing.T, b *bundle) {
	set := func(id string, n int) (*hoppertype.JobRow, error) {
		return b.store.JobSetMaxAttempts(t.Context(), &store.SetMaxAttemptsParams{ID: id, MaxAttempts: n})
	}
	for _, state := range []hoppertype.JobState{hoppertype.StateQueued, hoppertype.StateScheduled, hoppertype.StateSuspended} {
		job := b.jobIn(t, state)
		got, err := set(job.ID, 9)
		require.NoError(t, err, string(state))
		require.Equal(t, 9, got.MaxAttempts)
		require.Equal(t, state, got.State)
		require.Equal(t, got, b.get(t, job.ID))
		_, err = set(job.ID, job.Attempt)
		var ve *hoppertype.ValidationError
		require.ErrorAs(t, err, &ve, "%s: a waiting job needs one attempt more than it made", state)
		require.Equal(t, "max_attempts", ve.Field)
		require.Equal(t, 9, b.get(t, job.ID).MaxAttempts, "unchanged")
	}
	running := b.jobIn(t, hoppertype.StateRunning, withMaxAttempts(5))
	got, err := set(running.ID, running.Attempt)
	require.NoError(t, err, "the running attempt may be the last")
	require.Equal(t, running.Attempt, got.MaxAttempts)
	require.Equal(t, running.Token, got.Token, "the lease is untouched")
	fail := finishing(running, hoppertype.StateFailed)
	require.NoError(t, b.finish(t, fail), "the attempt still ends with its token")

	for _, state := range []hoppertype.JobState{hoppertype.StateCompleted, hoppertype.StateFailed, hoppertype.StateCanceled} {
		job := b.jobIn(t, state)
		_, err := set(job.ID, 10)
		require.ErrorIs(t, err, store.ErrInvalidTransition, string(state))
		require.Equal(t, job, b.get(t, job.ID))
	}
	_, err = set(newID(t), 3)
	require.ErrorIs(t, err, store.ErrNotFound)
}
