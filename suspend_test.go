package hopper

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/workerapi"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

type pages struct {
	Page int `json:"page"`
}

func TestSnoozeRunsLaterWithoutConsumingAnAttempt(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	runs := make(chan int, 4)
	var n atomic.Int32
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		runs <- job.Attempt
		if n.Add(1) == 1 {
			return Snooze(time.Minute)
		}
		return nil
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{MaxAttempts: 1})
	require.NoError(t, err)
	require.Equal(t, 1, recv(t, runs))
	job := b.waitFor(t, res.Job.ID, StateScheduled)
	require.Equal(t, 0, job.Attempt, "the attempt was given back")
	require.Equal(t, b.clock.Now().Add(time.Minute), job.RunAt)

	b.clock.Advance(time.Minute)
	require.Equal(t, 1, recv(t, runs), "runs again, still as attempt 1 of 1")
	b.waitFor(t, res.Job.ID, StateCompleted)
	attempts, err := b.client.Attempts(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 2)
	require.Equal(t, OutcomeSnoozed, attempts[0].Outcome)
}

func TestSuspendUntilATimeKeepsTheCheckpoint(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	seen := make(chan json.RawMessage, 4)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		seen <- job.Checkpoint
		if job.Checkpoint == nil {
			return Suspend(pages{Page: 7}, SuspendOpts{Until: testStart.Add(time.Hour)})
		}
		return nil
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{MaxAttempts: 1})
	require.NoError(t, err)
	require.Nil(t, recv(t, seen))
	job := b.waitFor(t, res.Job.ID, StateScheduled)
	require.Equal(t, 0, job.Attempt)
	require.JSONEq(t, `{"page":7}`, string(job.Checkpoint))

	b.clock.Advance(2 * time.Hour)
	require.JSONEq(t, `{"page":7}`, string(recv(t, seen)), "the next attempt continues from the checkpoint")
	b.waitFor(t, res.Job.ID, StateCompleted)
	attempts, err := b.client.Attempts(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, OutcomeSuspended, attempts[0].Outcome)
}

func TestSuspendUntilResumed(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		return Suspend(pages{Page: 1}, SuspendOpts{})
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	job := b.waitFor(t, res.Job.ID, StateSuspended)
	require.JSONEq(t, `{"page":1}`, string(job.Checkpoint))
	require.Equal(t, 0, job.Attempt)
}

func TestSuspendRefusesTimesAStoreCannotKeep(t *testing.T) {
	t.Parallel()
	far := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	require.ErrorIs(t, Suspend(nil, SuspendOpts{Until: far}), ErrInvalid)
	require.ErrorIs(t, Suspend(nil, SuspendOpts{Until: time.Date(1066, 10, 14, 0, 0, 0, 0, time.UTC)}), ErrInvalid)
	require.ErrorIs(t, Suspend(nil, SuspendOpts{Deadline: far}), ErrInvalid)

	b := setup(t, nil, nil)
	_, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	job := activate(t, b, workerapi.ActivateParams{})[0]
	err = b.client.workerAPI.SuspendJob(t.Context(), job.ID, job.Token, nil, workerapi.SuspendParams{Until: far})
	require.ErrorIs(t, err, ErrInvalid)
	err = b.client.workerAPI.SuspendJob(t.Context(), job.ID, job.Token, nil, workerapi.SuspendParams{Deadline: b.clock.Now().Add(-time.Second)})
	require.ErrorIs(t, err, ErrInvalid)
	got, err := b.client.Get(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, StateRunning, got.State, "nothing changed")
}

func TestResumeHandsDataAndCheckpointToTheNextAttempt(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	type seen struct{ checkpoint, resume string }
	runs := make(chan seen, 4)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		runs <- seen{string(job.Checkpoint), string(job.ResumeData)}
		if job.ResumeData == nil {
			return Suspend(pages{Page: 2}, SuspendOpts{})
		}
		return nil
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	require.Equal(t, seen{}, recv(t, runs))
	b.waitFor(t, res.Job.ID, StateSuspended)

	_, err = b.client.Resume(t.Context(), res.Job.ID, map[string]bool{"approved": true})
	require.NoError(t, err)
	next := recv(t, runs)
	require.JSONEq(t, `{"page":2}`, next.checkpoint)
	require.JSONEq(t, `{"approved":true}`, next.resume)
	b.waitFor(t, res.Job.ID, StateCompleted)

	_, err = b.client.Resume(t.Context(), res.Job.ID, nil)
	require.ErrorIs(t, err, ErrInvalidTransition, "only a suspended job resumes")
	_, err = b.client.Resume(t.Context(), "no-such-job", nil)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = b.client.Resume(t.Context(), res.Job.ID, json.RawMessage(`{`))
	require.ErrorIs(t, err, ErrInvalid)
}

func TestSuspendedJobFailsAtItsDeadline(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		return Suspend(nil, SuspendOpts{Deadline: testStart.Add(time.Hour)})
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	job := b.waitFor(t, res.Job.ID, StateSuspended)
	require.Equal(t, testStart.Add(time.Hour), job.DeadlineAt)
	b.clock.Advance(time.Hour + 10*time.Second) // past the deadline and a rescue interval
	job = b.waitFor(t, res.Job.ID, StateFailed)
	require.Equal(t, "still suspended at its deadline", job.LastError)
}

// A handler that checkpoints with Suspend when its process shuts down keeps the checkpoint:
// the suspension wins over the plain release.
func TestSuspendOnShutdownKeepsTheCheckpoint(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	started := make(chan string, 1)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		started <- job.ID
		<-ctx.Done()
		return Suspend(pages{Page: 7}, SuspendOpts{Until: time.Now().Add(time.Hour)})
	})
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	defer st.Close()
	c, err := NewClient(Config{Store: st, Workers: ws})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	_, err = c.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	id := <-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	require.NoError(t, c.Stop(ctx))
	job, err := st.JobGet(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, StateScheduled, job.State)
	require.JSONEq(t, `{"page":7}`, string(job.Checkpoint))
	require.Equal(t, 0, job.Attempt)
}

// refusingResumes is a store that tells when it first refused a resume (the job was not
// suspended).
type refusingResumes struct {
	*sqlite.Store
	once    sync.Once
	refused chan struct{}
}

func (s *refusingResumes) JobResume(ctx context.Context, p *store.ResumeParams) (*JobRow, error) {
	job, err := s.Store.JobResume(ctx, p)
	if errors.Is(err, ErrInvalidTransition) {
		s.once.Do(func() { close(s.refused) })
	}
	return job, err
}

// A Resume sent while the handler is returning its Suspend (the outcome is written a moment
// later) still resumes the job.
func TestResumeRacingTheSuspensionStillResumes(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	suspending := make(chan string, 1)
	release := make(chan struct{})
	data := make(chan string, 2)
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		if job.ResumeData != nil {
			data <- string(job.ResumeData)
			return nil
		}
		suspending <- job.ID
		<-release
		return Suspend(nil, SuspendOpts{})
	})
	var st *refusingResumes
	b := setup(t, ws, func(c *Config) {
		st = &refusingResumes{Store: c.Store.(*sqlite.Store), refused: make(chan struct{})}
		c.Store = st
	})
	_, err := b.client.Enqueue(t.Context(), sendEmail{}, nil)
	require.NoError(t, err)
	id := <-suspending
	go func() {
		select { // the resume below has found the job still running
		case <-st.refused:
		case <-t.Context().Done():
		}
		close(release)
	}()
	_, err = b.client.Resume(t.Context(), id, map[string]int{"ok": 1})
	require.NoError(t, err)
	require.JSONEq(t, `{"ok":1}`, recv(t, data))
}
