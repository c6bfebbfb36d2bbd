package hopper

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/stretchr/testify/require"
)

// deadLetterIn fails a new job of queue for good through the worker API (nothing runs jobs in
// a bundle without workers) and returns it failed.
func (b *testBundle) deadLetterIn(t *testing.T, queue string) *JobRow {
	t.Helper()
	res, err := b.client.Enqueue(t.Context(), sendEmail{To: "fail"}, &InsertOpts{Queue: queue})
	require.NoError(t, err)
	jobs, err := b.client.workerAPI.Activate(t.Context(), workerapi.ActivateParams{Worker: "w", Queue: queue})
	require.NoError(t, err)
	zero := 0
	_, err = b.client.workerAPI.FailJob(t.Context(), res.Job.ID, jobs[0].Token, workerapi.FailParams{Error: "mailbox gone", RetriesLeft: &zero})
	require.NoError(t, err)
	job, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateFailed, job.State)
	return job
}

// Contract 18: an incident resolved in place. The same job (id, idempotency key, history)
// runs again with corrected args and completes; its history and the audit log say who did it.
func TestRetryJobRunsTheSameJobAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, flaky(), nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{To: "fail"}, &InsertOpts{IdempotencyKey: "welcome-7"})
	require.NoError(t, err)
	dead := b.waitFor(t, res.Job.ID, StateFailed)

	job, err := b.client.RetryJob(t.Context(), dead.ID, RetryOpts{Args: json.RawMessage(`{"to": "ok"}`), By: "alice",
		Actor: ActorOperator, Reason: "address fixed"})
	require.NoError(t, err)
	require.Equal(t, dead.ID, job.ID)
	require.Equal(t, dead.Attempt+DefaultRetryAttempts, job.MaxAttempts, "one more attempt by default")
	require.JSONEq(t, `{"to":"ok"}`, string(job.Args))
	done := b.waitFor(t, dead.ID, StateCompleted)
	require.Equal(t, "welcome-7", done.IdempotencyKey)
	require.Equal(t, 2, done.Attempt)

	again, err := b.client.Enqueue(t.Context(), sendEmail{To: "fail"}, &InsertOpts{IdempotencyKey: "welcome-7"})
	require.NoError(t, err)
	require.True(t, again.Existing, "the key still names the same job")
	require.Equal(t, dead.ID, again.Job.ID)

	attempts, err := b.client.Attempts(t.Context(), dead.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 2, "the failed attempt and the one that completed")
	require.Contains(t, attempts[0].Error, "mailbox gone")
	events, err := b.client.Events(t.Context(), dead.ID)
	require.NoError(t, err)
	var retried *Event
	for _, e := range events {
		if e.From == StateFailed {
			retried = e
		}
	}
	require.NotNil(t, retried, "the retry is in the history")
	require.Equal(t, StateQueued, retried.To)
	require.Equal(t, ActorOperator, retried.Actor)
	require.Equal(t, "retry by alice: address fixed", retried.Reason)
	log, err := b.client.Replays(t.Context(), &ReplayListParams{SourceJobID: dead.ID})
	require.NoError(t, err)
	require.Len(t, log.Replays, 1)
	require.Equal(t, ActionRetry, log.Replays[0].Action)
	require.Equal(t, dead.ID, log.Replays[0].NewJobID)
	require.Equal(t, "alice", log.Replays[0].ReplayedBy)

	_, err = b.client.RetryJob(t.Context(), dead.ID, RetryOpts{})
	require.ErrorIs(t, err, ErrInvalidTransition, "only a failed job is retried")
	_, err = b.client.Replay(t.Context(), dead.ID, "")
	require.ErrorIs(t, err, ErrInvalidTransition, "a retried job is not a dead letter any more")
}

// RetryJob checks its options as Enqueue checks a job's, naming the field.
func TestRetryJobRefusesBadOptions(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, func(c *Config) { c.MaxArgsBytes = 64 })
	dead := b.deadLetterIn(t, "opts")
	for field, opts := range map[string]RetryOpts{
		"args":        {Args: json.RawMessage(`{"to":`)},
		"retries":     {Retries: -1},
		"run_at":      {RunAt: b.clock.Now().Add(MaxRunAtFuture + time.Hour)},
		"reason":      {Reason: "a\x00b"},
		"replayed_by": {By: strings.Repeat("x", 300)},
		"actor":       {Actor: "someone"},
	} {
		_, err := b.client.RetryJob(t.Context(), dead.ID, opts)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, field)
		require.Equal(t, field, ve.Field)
	}
	_, err := b.client.RetryJob(t.Context(), dead.ID, RetryOpts{Args: json.RawMessage(`"` + strings.Repeat("x", 100) + `"`)})
	require.ErrorIs(t, err, ErrInvalid, "args over Config.MaxArgsBytes")
	_, err = b.client.RetryJob(t.Context(), "01a2ffff-0000-7000-8000-000000000000", RetryOpts{})
	require.ErrorIs(t, err, ErrNotFound)
	got, err := b.client.Get(t.Context(), dead.ID)
	require.NoError(t, err)
	require.Equal(t, dead, got, "nothing changed")

	later := b.clock.Now().Add(time.Hour)
	job, err := b.client.RetryJob(t.Context(), dead.ID, RetryOpts{Retries: 3, RunAt: later})
	require.NoError(t, err)
	require.Equal(t, StateScheduled, job.State)
	require.Equal(t, dead.Attempt+3, job.MaxAttempts)
}

// Issue 31, item 9: a dead letter replayed twice became two jobs. The second replay is
// refused, naming the first, unless forced; a replayed dead letter is not retried in place
// unless forced either; forcing is in the audit log.
func TestReplayingTwiceIsRefusedUnlessForced(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	dead := b.deadLetterIn(t, "charge")
	first, err := b.client.Replay(t.Context(), dead.ID, "alice")
	require.NoError(t, err)

	_, err = b.client.Replay(t.Context(), dead.ID, "bob")
	require.ErrorIs(t, err, ErrAlreadyReplayed)
	var re *ReplayedError
	require.ErrorAs(t, err, &re)
	require.Equal(t, first.ID, re.ReplayJobID)
	require.Equal(t, "alice", re.ReplayedBy)
	_, err = b.client.RetryJob(t.Context(), dead.ID, RetryOpts{})
	require.ErrorIs(t, err, ErrAlreadyReplayed)
	queued, err := b.client.List(t.Context(), &ListParams{Queues: []string{"charge"}, States: []JobState{StateQueued}})
	require.NoError(t, err)
	require.Len(t, queued.Jobs, 1, "one replay, one job")

	second, err := b.client.ReplayWith(t.Context(), dead.ID, ReplayOpts{By: "bob", Reason: "second charge agreed", Again: true})
	require.NoError(t, err)
	require.NotEqual(t, first.ID, second.ID)
	log, err := b.client.Replays(t.Context(), &ReplayListParams{SourceJobID: dead.ID})
	require.NoError(t, err)
	require.Len(t, log.Replays, 2)
	require.True(t, log.Replays[0].Forced)
	require.Equal(t, "second charge agreed", log.Replays[0].Reason)
	require.False(t, log.Replays[1].Forced)

	many, err := b.client.ReplayMany(t.Context(), DeadLetterFilter{Queues: []string{"charge"}}, 0, "ops")
	require.NoError(t, err)
	require.Empty(t, many.Jobs)
	require.Equal(t, 1, many.Skipped, "replay-many skips the replayed one and says so")
}

// RetryMany is bounded like ReplayMany, retries each dead letter once, skips the replayed ones
// and audits each retry.
func TestRetryManyIsBoundedAndSkipsReplayed(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	var dead []string
	for range 3 {
		dead = append(dead, b.deadLetterIn(t, "bulk").ID)
		b.clock.Advance(time.Second)
	}
	_, err := b.client.Replay(t.Context(), dead[2], "alice")
	require.NoError(t, err)
	_, err = b.client.RetryMany(t.Context(), DeadLetterFilter{}, RetryManyOpts{Limit: MaxReplayLimit + 1})
	require.ErrorIs(t, err, ErrInvalid)

	res, err := b.client.RetryMany(t.Context(), DeadLetterFilter{Queues: []string{"bulk"}}, RetryManyOpts{Limit: 1, Retries: 2, By: "ops"})
	require.NoError(t, err)
	require.Equal(t, []string{dead[0]}, jobIDs(res.Jobs), "oldest first")
	require.Equal(t, 1, res.Skipped)
	require.Equal(t, StateQueued, res.Jobs[0].State)
	require.Equal(t, res.Jobs[0].Attempt+2, res.Jobs[0].MaxAttempts)
	res, err = b.client.RetryMany(t.Context(), DeadLetterFilter{}, RetryManyOpts{By: "ops"})
	require.NoError(t, err)
	require.Equal(t, []string{dead[1]}, jobIDs(res.Jobs), "a second call continues")
	res, err = b.client.RetryMany(t.Context(), DeadLetterFilter{}, RetryManyOpts{By: "ops"})
	require.NoError(t, err)
	require.Empty(t, res.Jobs)

	log, err := b.client.Replays(t.Context(), &ReplayListParams{ReplayedBy: "ops"})
	require.NoError(t, err)
	require.Len(t, log.Replays, 2)
	for _, r := range log.Replays {
		require.Equal(t, ActionRetry, r.Action)
	}
}

// UpdateRetries sets the budget of a job that has not ended, never below what it used.
func TestUpdateRetries(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Queue: "held", MaxAttempts: 2})
	require.NoError(t, err)
	job, err := b.client.UpdateRetries(t.Context(), res.Job.ID, 7)
	require.NoError(t, err)
	require.Equal(t, 7, job.MaxAttempts)
	for _, n := range []int{0, -1, 1001} {
		_, err = b.client.UpdateRetries(t.Context(), res.Job.ID, n)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, n)
		require.Equal(t, "max_attempts", ve.Field)
	}
	dead := b.deadLetterIn(t, "ended")
	_, err = b.client.UpdateRetries(t.Context(), dead.ID, 5)
	require.ErrorIs(t, err, ErrInvalidTransition, "an ended job: RetryJob resolves a failed one")
	_, err = b.client.UpdateRetries(t.Context(), "01a2ffff-0000-7000-8000-000000000000", 5)
	require.ErrorIs(t, err, ErrNotFound)
}
