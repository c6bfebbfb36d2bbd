package hopper

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

type pdfArgs struct{}

func (pdfArgs) Kind() string { return "pdf" }

// A disabled kind's jobs wait, queued and counted as disabled, while other kinds run; enabling
// it wakes the producer (the poll interval is an hour on a fake clock: nothing else would).
func TestDisabledKindWaitsUntilEnabled(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error { return nil })
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[pdfArgs]) error { return nil })
	b := setup(t, ws, nil)
	ctx := t.Context()
	require.NoError(t, b.client.DisableKind(ctx, "send-email"))
	held, err := b.client.Enqueue(ctx, sendEmail{To: "a@example.com"}, nil)
	require.NoError(t, err, "an enqueue of a disabled kind succeeds")
	other, err := b.client.Enqueue(ctx, pdfArgs{}, nil)
	require.NoError(t, err)
	b.waitFor(t, other.Job.ID, StateCompleted)
	job, err := b.client.Get(ctx, held.Job.ID)
	require.NoError(t, err)
	require.Equal(t, StateQueued, job.State, "claimed after it, yet left")

	qs, err := b.client.Queues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, int64(1), qs[0].Disabled)
	require.Equal(t, map[JobState]int64{StateQueued: 1, StateCompleted: 1}, qs[0].Counts)
	require.NoError(t, b.client.SetLimit(ctx, Limit{Kind: "send-email", MaxRunning: 4}))
	ks, err := b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, []*KindInfo{
		{Name: "pdf", Counts: map[JobState]int64{StateCompleted: 1}},
		{Name: "send-email", Disabled: true, MaxRunning: 4, Counts: map[JobState]int64{StateQueued: 1}},
	}, ks)

	require.NoError(t, b.client.EnableKind(ctx, "send-email"))
	b.waitFor(t, held.Job.ID, StateCompleted)
	qs, err = b.client.Queues(ctx)
	require.NoError(t, err)
	require.Zero(t, qs[0].Disabled)
	ks, err = b.client.Kinds(ctx)
	require.NoError(t, err)
	require.False(t, ks[1].Disabled)
	require.Equal(t, 4, ks[1].MaxRunning, "the cap outlives the disabling")
}

// Disabling a kind stops nothing that runs: the running job finishes as it would have.
func TestDisablingAKindLetsRunningJobsFinish(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started, release := make(chan string, 2), make(chan struct{})
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[pdfArgs]) error {
		started <- job.ID
		<-release
		return nil
	})
	b := setup(t, ws, nil)
	ctx := t.Context()
	running, err := b.client.Enqueue(ctx, pdfArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, running.Job.ID, recv(t, started))
	require.NoError(t, b.client.DisableKind(ctx, "pdf"))
	next, err := b.client.Enqueue(ctx, pdfArgs{}, nil)
	require.NoError(t, err)
	close(release)
	job := b.waitFor(t, running.Job.ID, StateCompleted)
	require.Equal(t, 1, job.Attempt)

	ks, err := b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, []*KindInfo{{Name: "pdf", Disabled: true,
		Counts: map[JobState]int64{StateQueued: 1, StateCompleted: 1}}}, ks, "the next job waits")
	require.NoError(t, b.client.EnableKind(ctx, "pdf"))
	require.Equal(t, next.Job.ID, recv(t, started))
}

func TestKindChangesAreValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	for _, kind := range []string{"", "two words", "tab\there", string(make([]byte, maxKindLen+1)), "bad\xffutf8"} {
		for name, op := range map[string]func(context.Context, string) error{
			"disable": b.client.DisableKind, "enable": b.client.EnableKind,
		} {
			var ve *ValidationError
			require.True(t, errors.As(op(ctx, kind), &ve), "%s %q", name, kind)
			require.Equal(t, "kind", ve.Field)
		}
	}
	for _, n := range []int{-1, math.MaxInt32 + 1} {
		var ve *ValidationError
		require.True(t, errors.As(b.client.SetLimit(ctx, Limit{Kind: "pdf", MaxRunning: n}), &ve), "%d", n)
		require.Equal(t, "max_running", ve.Field)
	}
	require.NoError(t, b.client.SetLimit(ctx, Limit{Kind: "pdf", MaxRunning: math.MaxInt32}))
	require.NoError(t, b.client.SetLimit(ctx, Limit{Kind: "pdf"}))
	require.NoError(t, b.client.EnableKind(ctx, "never-seen"), "enabling an unknown kind changes nothing")
	ks, err := b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Empty(t, ks)
}
