package hopper

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type indexDoc struct {
	Doc int `json:"doc"`
}

func (indexDoc) Kind() string { return "index-doc" }

// enqueueGroup enqueues n jobs of group in one call, so that one claim sees them all.
func (b *testBundle) enqueueGroup(t *testing.T, group string, n int, opts InsertOpts) []string {
	t.Helper()
	opts.GroupKey = group
	ps := make([]EnqueueParams, n)
	for i := range ps {
		o := opts
		ps[i] = EnqueueParams{Args: indexDoc{Doc: i}, Opts: &o}
	}
	res, err := b.client.EnqueueMany(t.Context(), ps)
	require.NoError(t, err)
	ids := make([]string, n)
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}

// Each job of a batch ends as its own attempt: one that fails is retried alone, one that
// snoozes keeps its attempt, a NoRetry fails at once, the others complete with their results.
func TestBatchPerJobOutcomes(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	calls := make(chan []int, 4)
	AddBatchWorkerFunc(ws, BatchOpts{MaxJobs: 10}, func(ctx context.Context, b *Batch[indexDoc]) error {
		var docs []int
		for i, j := range b.Jobs {
			docs = append(docs, j.Args.Doc)
			switch j.Args.Doc {
			case 1:
				b.Fail(i, errors.New("mapping conflict"))
			case 2:
				b.Fail(i, NoRetry(errors.New("bad doc")))
			case 3:
				b.Fail(i, Snooze(time.Minute))
			default:
				require.NoError(t, b.SetResult(i, map[string]int{"indexed": j.Args.Doc}))
			}
		}
		calls <- docs
		return nil
	})
	b := setup(t, ws, nil)
	ids := b.enqueueGroup(t, "tenant-1", 5, InsertOpts{MaxAttempts: 3})
	require.Equal(t, []int{0, 1, 2, 3, 4}, recv(t, calls), "one call, the group's jobs in order")

	ok := b.waitFor(t, ids[0], StateCompleted)
	require.JSONEq(t, `{"indexed":0}`, string(ok.Result))
	failed := b.waitFor(t, ids[1], StateScheduled)
	require.Equal(t, 1, failed.Attempt)
	require.Equal(t, "mapping conflict", failed.LastError)
	require.Equal(t, StateFailed, b.waitFor(t, ids[2], StateFailed).State)
	snoozed := b.waitFor(t, ids[3], StateScheduled)
	require.Equal(t, testStart.Add(time.Minute), snoozed.RunAt)
	require.Equal(t, 0, snoozed.Attempt, "a snooze gives the attempt back")
	b.waitFor(t, ids[4], StateCompleted)
	for i, id := range ids {
		as, err := b.client.Attempts(t.Context(), id)
		require.NoError(t, err)
		require.Len(t, as, 1, "job %d: one attempt of its own", i)
	}
}

// A panic, or an error for the whole batch, fails every job of the batch, each as its own
// attempt.
func TestBatchPanicFailsEveryJob(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddBatchWorkerFunc(ws, BatchOpts{MaxJobs: 10}, func(ctx context.Context, b *Batch[indexDoc]) error {
		if b.Jobs[0].GroupKey == "g" {
			panic("index gone")
		}
		return errors.New("whole batch")
	})
	b := setup(t, ws, nil)
	ids := b.enqueueGroup(t, "g", 3, InsertOpts{MaxAttempts: 1})
	for _, id := range ids {
		job := b.waitFor(t, id, StateFailed)
		as, err := b.client.Attempts(t.Context(), job.ID)
		require.NoError(t, err)
		require.Len(t, as, 1)
		require.Equal(t, OutcomePanic, as[0].Outcome)
		require.Contains(t, as[0].Error, "index gone")
	}
	ids = b.enqueueGroup(t, "h", 2, InsertOpts{MaxAttempts: 1})
	for _, id := range ids {
		job := b.waitFor(t, id, StateFailed)
		require.Equal(t, "whole batch", job.LastError)
	}
}

// A batch waits to fill for MaxWait: nothing runs while it lingers, and it runs full or once
// its oldest job has been due for MaxWait.
func TestBatchLinger(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	calls := make(chan int, 4)
	AddBatchWorkerFunc(ws, BatchOpts{MaxJobs: 3, MaxWait: time.Minute}, func(ctx context.Context, b *Batch[indexDoc]) error {
		calls <- len(b.Jobs)
		return nil
	})
	b := setup(t, ws, nil)
	b.enqueueGroup(t, "g", 2, InsertOpts{})
	b.enqueueGroup(t, "g", 1, InsertOpts{})
	require.Equal(t, 3, recv(t, calls), "full: at once")
	ids := b.enqueueGroup(t, "h", 1, InsertOpts{})
	require.Equal(t, StateQueued, b.waitFor(t, ids[0], StateQueued).State)
	// The producer looks again when the batch is due, a minute after the job: whether it
	// found the batch lingering before the clock moved or only after.
	b.clock.Advance(time.Minute)
	require.Equal(t, 1, recv(t, calls), "due for MaxWait: as it is")
}

// Kinds without a batch worker are claimed as before beside a batch kind, and a job whose
// args do not decode fails alone.
func TestBatchBesidePlainKinds(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddBatchWorkerFunc(ws, BatchOpts{Ungrouped: true}, func(ctx context.Context, b *Batch[indexDoc]) error { return nil })
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error { return nil })
	b := setup(t, ws, nil)
	mail, err := b.client.Enqueue(t.Context(), sendEmail{To: "a"}, nil)
	require.NoError(t, err)
	ids := b.enqueueGroup(t, "", 3, InsertOpts{})
	b.waitFor(t, mail.Job.ID, StateCompleted)
	for _, id := range ids {
		b.waitFor(t, id, StateCompleted)
	}
}

// A job canceled while its batch runs records no outcome from the batch; the others end as
// the handler says.
func TestBatchJobCanceledWhileItRuns(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started, release := make(chan struct{}), make(chan struct{})
	AddBatchWorkerFunc(ws, BatchOpts{MaxJobs: 10}, func(ctx context.Context, b *Batch[indexDoc]) error {
		close(started)
		<-release
		return nil
	})
	b := setup(t, ws, nil)
	ids := b.enqueueGroup(t, "g", 3, InsertOpts{})
	recv(t, started)
	_, err := b.client.Cancel(t.Context(), ids[1])
	require.NoError(t, err)
	close(release)
	b.waitFor(t, ids[0], StateCompleted)
	b.waitFor(t, ids[2], StateCompleted)
	job := b.waitFor(t, ids[1], StateCanceled)
	require.Empty(t, job.Result)
	as, err := b.client.Attempts(t.Context(), ids[1])
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, OutcomeCanceled, as[0].Outcome)
}
