package hopper

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// flaky fails jobs whose To is "fail" for good, and completes the others.
func flaky() *Workers {
	ws := NewWorkers()
	AddWorkerFunc(ws, func(_ context.Context, job *Job[sendEmail]) error {
		if job.Args.To == "fail" {
			return NoRetry(errors.New("mailbox gone"))
		}
		return nil
	})
	return ws
}

// deadLetter enqueues a job that fails at once and returns it failed.
func (b *testBundle) deadLetter(t *testing.T, opts *InsertOpts) *JobRow {
	t.Helper()
	res, err := b.client.Enqueue(t.Context(), sendEmail{To: "fail"}, opts)
	require.NoError(t, err)
	return b.waitFor(t, res.Job.ID, StateFailed)
}

// Contract 11: a dead letter is listed and counted; its replay is a new job with lineage that
// runs; the dead letter stays as it was; the audit log says who replayed it.
func TestDeadLettersListReplayAndAudit(t *testing.T) {
	t.Parallel()
	b := setup(t, flaky(), nil)
	st, err := b.client.DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Equal(t, &DeadLetterStats{}, st)

	first := b.deadLetter(t, &InsertOpts{Queue: "default", Priority: 3})
	b.clock.Advance(time.Minute)
	second := b.deadLetter(t, nil)
	page, err := b.client.DeadLetters(t.Context(), &DeadLetterParams{Limit: 1})
	require.NoError(t, err)
	require.Equal(t, []string{second.ID}, jobIDs(page.Jobs), "newest first")
	page, err = b.client.DeadLetters(t.Context(), &DeadLetterParams{Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Equal(t, []string{first.ID}, jobIDs(page.Jobs))
	page, err = b.client.DeadLetters(t.Context(), &DeadLetterParams{DeadLetterFilter: DeadLetterFilter{Since: second.FinishedAt}})
	require.NoError(t, err)
	require.Equal(t, []string{second.ID}, jobIDs(page.Jobs))

	st, err = b.client.DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(2), st.Count)
	require.Equal(t, first.FinishedAt, st.Oldest)
	require.Equal(t, time.Minute, st.OldestAge(b.clock.Now()))

	replayed, err := b.client.Replay(t.Context(), first.ID, "alice")
	require.NoError(t, err)
	require.Equal(t, first.ID, replayed.OriginalID)
	require.Equal(t, 1, replayed.ReplayCount)
	require.Equal(t, "alice", replayed.ReplayedBy)
	require.Equal(t, 3, replayed.Priority)
	b.waitFor(t, replayed.ID, StateFailed) // it fails again: same args
	again, err := b.client.Replay(t.Context(), replayed.ID, "")
	require.NoError(t, err)
	require.Equal(t, first.ID, again.OriginalID, "the lineage keeps its first job")
	require.Equal(t, 2, again.ReplayCount)
	require.Equal(t, "api", again.ReplayedBy)

	source, err := b.client.Get(t.Context(), first.ID)
	require.NoError(t, err)
	require.Equal(t, first, source, "the dead letter is untouched")

	log, err := b.client.Replays(t.Context(), &ReplayListParams{OriginalID: first.ID})
	require.NoError(t, err)
	require.Len(t, log.Replays, 2)
	require.Equal(t, replayed.ID, log.Replays[0].SourceJobID, "newest first")
	require.Equal(t, again.ID, log.Replays[0].NewJobID)
	require.Equal(t, "alice", log.Replays[1].ReplayedBy)

	done, err := b.client.Enqueue(t.Context(), sendEmail{To: "ok"}, nil)
	require.NoError(t, err)
	b.waitFor(t, done.Job.ID, StateCompleted)
	_, err = b.client.Replay(t.Context(), done.Job.ID, "alice")
	require.ErrorIs(t, err, ErrInvalidTransition, "only failed jobs are replayed")
	_, err = b.client.Replay(t.Context(), "01a2ffff-0000-7000-8000-000000000000", "alice")
	require.ErrorIs(t, err, ErrNotFound)
}

// ReplayMany is bounded and never replays a job twice: calling it again continues.
func TestReplayManyIsBoundedAndDoesNotDuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil) // nothing runs: replays stay queued
	var dead []string
	for range 5 {
		res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Queue: "bulk"})
		require.NoError(t, err)
		jobs, err := b.client.Activate(t.Context(), ActivateParams{Worker: "w", Queue: "bulk"})
		require.NoError(t, err)
		zero := 0
		_, err = b.client.FailJob(t.Context(), res.Job.ID, jobs[0].Token, FailParams{Error: "x", RetriesLeft: &zero})
		require.NoError(t, err)
		dead = append(dead, res.Job.ID)
	}
	_, err := b.client.ReplayMany(t.Context(), DeadLetterFilter{}, MaxReplayLimit+1, "ops")
	require.ErrorIs(t, err, ErrInvalid)

	first, err := b.client.ReplayMany(t.Context(), DeadLetterFilter{Queues: []string{"bulk"}}, 3, "ops")
	require.NoError(t, err)
	require.Equal(t, dead[:3], originals(first), "oldest first")
	rest, err := b.client.ReplayMany(t.Context(), DeadLetterFilter{}, 0, "ops")
	require.NoError(t, err)
	require.Equal(t, dead[3:], originals(rest))
	none, err := b.client.ReplayMany(t.Context(), DeadLetterFilter{}, 0, "ops")
	require.NoError(t, err)
	require.Empty(t, none, "a second ReplayMany does not duplicate")

	log, err := b.client.Replays(t.Context(), &ReplayListParams{ReplayedBy: "ops"})
	require.NoError(t, err)
	require.Len(t, log.Replays, 5)
	require.Equal(t, "bulk replay", log.Replays[0].Reason)
}

// The on-dead-letter hook and webhook hear of a dead letter after it is committed; a hook
// that panics and a webhook that answers 500 leave the dead letter as it was.
func TestDeadLetterHookFailuresNeverTouchTheDeadLetter(t *testing.T) {
	t.Parallel()
	var tries atomic.Int32
	bodies := make(chan []byte, 10)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		bodies <- body
		tries.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer hook.Close()
	seen := make(chan *JobRow, 10)
	b := setupHook(t, flaky(), func(c *Config) {
		c.DeadLetterWebhook = hook.URL
		c.OnDeadLetter = func(ctx context.Context, job *JobRow) {
			seen <- job
			job.State, job.LastError = StateCompleted, "changed by the hook" // a copy
			panic("hook is broken")
		}
	})
	job := b.deadLetter(t, nil)
	got := recv(t, seen)
	require.Equal(t, job.ID, got.ID)
	require.Equal(t, StateFailed, job.State, "called after the failed state is committed")

	var sent struct {
		Event, ID, State, LastError string `json:",omitempty"`
	}
	require.NoError(t, json.Unmarshal(recv(t, bodies), &sent))
	require.Equal(t, "dead_letter", sent.Event)
	require.Equal(t, job.ID, sent.ID)
	recv(t, bodies)
	recv(t, bodies)
	require.Never(t, func() bool { return tries.Load() > 3 }, 50*time.Millisecond, 5*time.Millisecond, "3 tries, no more")

	after, err := b.client.Get(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, job, after, "the dead letter is intact")
	require.Contains(t, after.LastError, "mailbox gone")
}

// A hook that is still busy when Stop's ctx ends is canceled, and Stop returns.
func TestStopCancelsABusyDeadLetterHook(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var once sync.Once
	b := setupHook(t, flaky(), func(c *Config) {
		c.OnDeadLetter = func(ctx context.Context, _ *JobRow) {
			once.Do(func() { close(started) })
			<-ctx.Done()
		}
	})
	b.deadLetter(t, nil)
	recv(t, started)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	require.NoError(t, b.client.Stop(ctx))
}

// setupHook is setup with a fast webhook backoff; the client is stopped at cleanup.
func setupHook(t *testing.T, ws *Workers, mutate func(*Config)) *testBundle {
	t.Helper()
	clk := clock.NewFake(testStart)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: t.TempDir() + "/hopper.db", Clock: clk})
	require.NoError(t, err)
	cfg := Config{Store: st, Workers: ws, Clock: clk, PollInterval: time.Hour, WorkerID: "hook-test"}
	mutate(&cfg)
	c, err := NewClient(cfg)
	require.NoError(t, err)
	c.dlHook.backoff = time.Millisecond
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() {
		stoptest.Within(t, c, 10*time.Second)
		require.NoError(t, st.Close())
	})
	return &testBundle{client: c, store: st, clock: clk}
}

func jobIDs(jobs []*JobRow) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

func originals(jobs []*JobRow) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.OriginalID
	}
	return out
}

// A webhook that hangs does not hold up the Go hook: each has its own queue and goroutine.
func TestAHangingWebhookDoesNotDelayTheGoHook(t *testing.T) {
	t.Parallel()
	hang := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer hook.Close()
	defer close(hang)
	seen := make(chan string, 10)
	b := setupHook(t, flaky(), func(c *Config) {
		c.DeadLetterWebhook = hook.URL
		c.OnDeadLetter = func(ctx context.Context, job *JobRow) { seen <- job.ID }
	})
	first := b.deadLetter(t, nil)
	second := b.deadLetter(t, nil)
	require.Equal(t, first.ID, recv(t, seen))
	require.Equal(t, second.ID, recv(t, seen), "the second is announced while the webhook still hangs on the first")
}
