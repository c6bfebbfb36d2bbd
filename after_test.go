package hopper

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// A job enqueued after others waits for them and runs once they have completed; a parent's
// failure cancels it, by default, with the reason in its history (contract 19).
func TestAfterRunsChildOnceParentsEnd(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	ran := make(chan string, 10)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		ran <- job.Args.To
		if job.Args.To == "fail" {
			return NoRetry(errors.New("bounced"))
		}
		return nil
	})
	b := setup(t, ws, nil)
	ctx := t.Context()
	// The parents, then the child naming them.
	res, err := b.client.EnqueueMany(ctx, []EnqueueParams{
		{Args: sendEmail{To: "a"}},
		{Args: sendEmail{To: "b"}},
	})
	require.NoError(t, err)
	child, err := b.client.Enqueue(ctx, sendEmail{To: "child"}, &InsertOpts{
		After: []string{res[0].Job.ID, res[1].Job.ID}})
	require.NoError(t, err)
	require.Contains(t, []JobState{StateWaiting, StateQueued}, child.Job.State)
	b.waitFor(t, child.Job.ID, StateCompleted)
	events, err := b.client.Events(ctx, child.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateWaiting, events[0].To)
	require.Equal(t, StateQueued, events[1].To)
	require.Contains(t, events[1].Reason, "parents ended")
	// It ran once, after both parents.
	var order []string
	for len(order) < 3 {
		order = append(order, <-ran)
	}
	require.ElementsMatch(t, []string{"a", "b"}, order[:2])
	require.Equal(t, "child", order[2])

	failing, err := b.client.Enqueue(ctx, sendEmail{To: "fail"}, nil)
	require.NoError(t, err)
	canceled, err := b.client.Enqueue(ctx, sendEmail{To: "never"}, &InsertOpts{
		After: []string{failing.Job.ID}})
	require.NoError(t, err)
	b.waitFor(t, canceled.Job.ID, StateCanceled)
	events, err = b.client.Events(ctx, canceled.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "parent "+failing.Job.ID+" failed", events[len(events)-1].Reason)
	require.Equal(t, "fail", <-ran)
	require.Empty(t, ran, "the child ran twice, or the canceled one ran")
}

// After and OnParentFailure are checked like every other option: the field is named, and an
// unknown parent stores nothing of the call.
func TestAfterIsValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	parent, err := b.client.Enqueue(ctx, sendEmail{}, nil)
	require.NoError(t, err)
	cases := []struct {
		name  string
		opts  *InsertOpts
		field string
	}{
		{"empty id", &InsertOpts{After: []string{parent.Job.ID, ""}}, "after[1]"},
		{"unknown parent", &InsertOpts{After: []string{parent.Job.ID, "0190f0e4-0000-7000-8000-000000000000"}}, "after[1]"},
		{"unknown policy", &InsertOpts{After: []string{parent.Job.ID}, OnParentFailure: "retry"}, "on_parent_failure"},
		{"unknown policy without parents", &InsertOpts{OnParentFailure: "retry"}, "on_parent_failure"},
		{"with a merge key", &InsertOpts{After: []string{parent.Job.ID}, MergeKey: "m"}, "after"},
	}
	for _, tc := range cases {
		_, err := b.client.Enqueue(ctx, sendEmail{To: tc.name}, tc.opts)
		require.ErrorIs(t, err, ErrInvalid, tc.name)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, tc.name)
		require.Equal(t, tc.field, ve.Field, tc.name)
	}
	_, err = b.client.EnqueueMany(ctx, []EnqueueParams{{Args: sendEmail{To: "x"}},
		{Args: sendEmail{To: "y"}, Opts: &InsertOpts{After: []string{"0190f0e4-0000-7000-8000-000000000000"}}}})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "jobs[1].after[0]", ve.Field)
	all, err := b.client.List(ctx, nil)
	require.NoError(t, err)
	require.Len(t, all.Jobs, 1, "only the parent was stored")
	// A policy without parents (a kind's default) has nothing to apply to: the job is a plain one.
	plain, err := b.client.Enqueue(ctx, sendEmail{To: "plain"}, &InsertOpts{OnParentFailure: ParentSkip})
	require.NoError(t, err)
	require.Equal(t, StateQueued, plain.Job.State)
}
