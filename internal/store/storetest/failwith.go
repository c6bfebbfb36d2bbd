package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// Contract 18, the worker's part: an attempt fails with a checkpoint for the next attempt, or
// with a business error code kept on the attempt and the job.
func testFailWith(t *testing.T, opener Opener) {
	parallel(t, opener, "CheckpointForTheNextAttempt", failCheckpointForTheNextAttempt)
	parallel(t, opener, "CheckpointKeptWhenFailed", failCheckpointKeptWhenFailed)
	parallel(t, opener, "ErrorCodeKeptAndFiltered", failErrorCodeKeptAndFiltered)
	parallel(t, opener, "ErrorCodeOfARetriedAttempt", failErrorCodeOfARetriedAttempt)
}

// A failed attempt with retries left replaces the job's checkpoint; the next claim carries it.
func failCheckpointForTheNextAttempt(t *testing.T, b *bundle) {
	job := b.running(t, withMaxAttempts(3))
	p := finishing(job, hoppertype.StateScheduled)
	p.RunAt, p.Error, p.Checkpoint = b.clock.Now(), "part 4 failed", []byte(`{"done":[1,2,3]}`)
	require.NoError(t, b.finish(t, p))
	require.Equal(t, 1, b.promote(t).Promoted)
	again := b.claimOne(t, job.Queue)
	require.Equal(t, 2, again.Attempt)
	require.JSONEq(t, `{"done":[1,2,3]}`, string(again.Checkpoint))

	p = finishing(again, hoppertype.StateScheduled)
	p.RunAt, p.Error, p.Checkpoint = b.clock.Now(), "part 5 failed", []byte(`{"done":[1,2,3,4]}`)
	require.NoError(t, b.finish(t, p))
	require.JSONEq(t, `{"done":[1,2,3,4]}`, string(b.get(t, job.ID).Checkpoint), "replaced, not merged")
}

// A failed job keeps the checkpoint its last attempt left, for whoever resolves it.
func failCheckpointKeptWhenFailed(t *testing.T, b *bundle) {
	job := b.running(t)
	p := finishing(job, hoppertype.StateFailed)
	p.Error, p.Checkpoint = "gave up at part 7", []byte(`{"part":7}`)
	require.NoError(t, b.finish(t, p))
	got := b.get(t, job.ID)
	require.Equal(t, hoppertype.StateFailed, got.State)
	require.JSONEq(t, `{"part":7}`, string(got.Checkpoint))
}

// A business error's code is the attempt's and the job's; jobs and dead letters list by it.
func failErrorCodeKeptAndFiltered(t *testing.T, b *bundle) {
	code := "card_declined-" + newID(t)
	declined := b.running(t)
	p := finishing(declined, hoppertype.StateFailed)
	p.Error, p.ErrorCode = code+": insufficient funds", code
	require.NoError(t, b.finish(t, p))
	plain := b.running(t)
	p = finishing(plain, hoppertype.StateFailed)
	p.Error = "boom"
	require.NoError(t, b.finish(t, p))

	got := b.get(t, declined.ID)
	require.Equal(t, code, got.LastErrorCode)
	require.Empty(t, b.get(t, plain.ID).LastErrorCode)
	as := b.attempts(t, declined.ID)
	require.Len(t, as, 1)
	require.Equal(t, code, as[0].ErrorCode)
	require.Empty(t, b.attempts(t, plain.ID)[0].ErrorCode)

	require.Equal(t, []string{declined.ID}, ids(b.listAll(t, store.ListParams{ErrorCodes: []string{code}})))
	require.Equal(t, []string{declined.ID}, ids(b.listAll(t, store.ListParams{ErrorCodes: []string{code, "other"},
		States: []hoppertype.JobState{hoppertype.StateFailed}, ExcludeReplayed: true})), "dead letters by code")
	require.Empty(t, b.listAll(t, store.ListParams{ErrorCodes: []string{code}, States: []hoppertype.JobState{hoppertype.StateCompleted}}))
}

// An attempt that ended with a code and was retried (the store keeps what the decider chose)
// keeps its code in its history row; the next attempt's end replaces the job's.
func failErrorCodeOfARetriedAttempt(t *testing.T, b *bundle) {
	job := b.running(t, withMaxAttempts(3))
	p := finishing(job, hoppertype.StateScheduled)
	p.RunAt, p.Error, p.ErrorCode = b.clock.Now(), "rate_limited: later", "rate_limited"
	require.NoError(t, b.finish(t, p))
	require.Equal(t, "rate_limited", b.get(t, job.ID).LastErrorCode)
	b.clock.Advance(time.Second)
	require.Equal(t, 1, b.promote(t).Promoted)
	again := b.claimOne(t, job.Queue)
	require.NoError(t, b.finish(t, finishing(again, hoppertype.StateCompleted)))

	require.Empty(t, b.get(t, job.ID).LastErrorCode)
	as := b.attempts(t, job.ID)
	require.Len(t, as, 2)
	require.Equal(t, "rate_limited", as[0].ErrorCode)
	require.Empty(t, as[1].ErrorCode)
}
