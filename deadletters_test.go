package hopper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/workerapi"

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
	require.Equal(t, []string{second.ID}, jobIDs(page.Jobs()), "newest first")
	page, err = b.client.DeadLetters(t.Context(), &DeadLetterParams{Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Equal(t, []string{first.ID}, jobIDs(page.Jobs()))
	page, err = b.client.DeadLetters(t.Context(), &DeadLetterParams{DeadLetterFilter: DeadLetterFilter{Since: second.FinishedAt}})
	require.NoError(t, err)
	require.Equal(t, []string{second.ID}, jobIDs(page.Jobs()))

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

// A replayed dead letter has been dealt with: DeadLetters leaves it out unless asked, and then
// marks it with its replays; DeadLetterStats counts what each listing holds.
func TestDeadLettersCountWhatTheyList(t *testing.T) {
	t.Parallel()
	b := setup(t, flaky(), nil)
	first := b.deadLetter(t, nil)
	second := b.deadLetter(t, nil)
	r1, err := b.client.Replay(t.Context(), first.ID, "alice")
	require.NoError(t, err)
	b.waitFor(t, r1.ID, StateFailed) // the replay fails too: a dead letter of its own
	b.clock.Advance(time.Second)
	r2, err := b.client.ReplayWith(t.Context(), first.ID, ReplayOpts{By: "bob", Again: true})
	require.NoError(t, err)
	b.waitFor(t, r2.ID, StateFailed)

	page, err := b.client.DeadLetters(t.Context(), nil)
	require.NoError(t, err)
	require.Equal(t, []string{r2.ID, r1.ID, second.ID}, jobIDs(page.Jobs()), "the replayed one is left out")
	for _, d := range page.DeadLetters {
		require.Zero(t, d.Replays, d.ID)
	}
	all, err := b.client.DeadLetters(t.Context(), &DeadLetterParams{IncludeReplayed: true})
	require.NoError(t, err)
	require.Equal(t, []string{r2.ID, r1.ID, second.ID, first.ID}, jobIDs(all.Jobs()))
	marked := all.DeadLetters[3]
	require.Equal(t, 2, marked.Replays)
	require.Equal(t, r2.ID, marked.LastReplayID, "the newest replay")
	require.Equal(t, r2.CreatedAt, marked.LastReplayedAt)

	st, err := b.client.DeadLetterStats(t.Context())
	require.NoError(t, err)
	require.Equal(t, int64(len(page.DeadLetters)), st.Count)
	require.Equal(t, int64(len(all.DeadLetters)), st.Count+st.Replayed)
	require.Equal(t, second.FinishedAt, st.Oldest, "the oldest not replayed")
}

// ReplayMany is bounded and never replays a job twice: calling it again continues.
func TestReplayManyIsBoundedAndDoesNotDuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil) // nothing runs: replays stay queued
	var dead []string
	for range 5 {
		res, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{Queue: "bulk"})
		require.NoError(t, err)
		jobs, err := b.client.workerAPI.Activate(t.Context(), workerapi.ActivateParams{Worker: "w", Queue: "bulk"})
		require.NoError(t, err)
		zero := 0
		_, err = b.client.workerAPI.FailJob(t.Context(), res.Job.ID, jobs[0].Token, workerapi.FailParams{Error: "x", RetriesLeft: &zero})
		require.NoError(t, err)
		dead = append(dead, res.Job.ID)
	}
	_, err := b.client.ReplayMany(t.Context(), DeadLetterFilter{}, MaxReplayLimit+1, "ops")
	require.ErrorIs(t, err, ErrInvalid)

	first, err := b.client.ReplayMany(t.Context(), DeadLetterFilter{Queues: []string{"bulk"}}, 3, "ops")
	require.NoError(t, err)
	require.Equal(t, dead[:3], originals(first.Jobs), "oldest first")
	rest, err := b.client.ReplayMany(t.Context(), DeadLetterFilter{}, 0, "ops")
	require.NoError(t, err)
	require.Equal(t, dead[3:], originals(rest.Jobs))
	none, err := b.client.ReplayMany(t.Context(), DeadLetterFilter{}, 0, "ops")
	require.NoError(t, err)
	require.Empty(t, none.Jobs, "a second ReplayMany does not duplicate")
	require.Equal(t, 5, none.Skipped, "and says what it skipped")

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
	// The next tries wait on the client's clock, about 1 s and then 2 s (±20 %): not on the
	// wall clock (the old code waited 1 s of it).
	require.Never(t, func() bool { return len(bodies) > 0 }, 1200*time.Millisecond, 10*time.Millisecond)
	first := b.clock.Now()
	recvStepping(t, b.clock, bodies)
	second := b.clock.Now()
	require.GreaterOrEqual(t, second.Sub(first), 800*time.Millisecond)
	recvStepping(t, b.clock, bodies)
	require.GreaterOrEqual(t, b.clock.Now().Sub(second), 1600*time.Millisecond)
	b.clock.Advance(time.Minute)
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

// recvStepping moves clk on in steps of 50 ms until ch receives, and returns what it got.
func recvStepping[T any](t *testing.T, clk *clock.Fake, ch <-chan T) T {
	t.Helper()
	var v T
	require.Eventually(t, func() bool {
		select {
		case v = <-ch:
			return true
		default:
			clk.Advance(50 * time.Millisecond)
			return false
		}
	}, 10*time.Second, time.Millisecond)
	return v
}

// setupHook is setup with the store's own type (mutate may wrap it); the client is stopped at
// cleanup.
func setupHook(t *testing.T, ws *Workers, mutate func(*Config)) *testBundle {
	t.Helper()
	clk := clock.NewFake(testStart)
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	cfg := Config{Store: st, Workers: ws, Clock: clk, PollInterval: time.Hour, WorkerID: "hook-test"}
	mutate(&cfg)
	c, err := NewClient(cfg)
	require.NoError(t, err)
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
	var served atomic.Int32
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer served.Add(1)
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer hook.Close()
	seen := make(chan string, 10)
	b := setupHook(t, flaky(), func(c *Config) {
		c.DeadLetterWebhook = hook.URL
		c.OnDeadLetter = func(ctx context.Context, job *JobRow) { seen <- job.ID }
	})
	first := b.deadLetter(t, nil)
	second := b.deadLetter(t, nil)
	require.Equal(t, first.ID, recv(t, seen))
	require.Equal(t, second.ID, recv(t, seen), "the second is announced while the webhook still hangs on the first")
	close(hang) // both posts go through before the server closes
	require.Eventually(t, func() bool { return served.Load() == 2 }, 10*time.Second, time.Millisecond)
}

// readsFail is a store whose JobGet fails with ErrUnavailable while down, as the database
// does in an outage; the test reads through the store underneath.
type readsFail struct {
	*sqlite.Store
	down  atomic.Bool
	tries atomic.Int32
}

func (r *readsFail) JobGet(ctx context.Context, id string) (*JobRow, error) {
	if r.down.Load() {
		r.tries.Add(1)
		return nil, fmt.Errorf("get job %s: dial tcp: connection refused: %w", id, ErrUnavailable)
	}
	return r.Store.JobGet(ctx, id)
}

// Dead letters that arrive while the store cannot be read are announced once it can: the hook
// and the webhook retry their reads with backoff on the client's clock, and log the outage
// once each (and its end), not an Error per job. On the old code each notification was
// dropped after one failed read, with an Error line per job.
func TestDeadLetterHookWaitsOutAnOutage(t *testing.T) {
	t.Parallel()
	posted := make(chan string, 100)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var sent struct{ ID string }
		_ = json.NewDecoder(r.Body).Decode(&sent)
		posted <- sent.ID
	}))
	defer hook.Close()
	logs := &logBuffer{}
	seen := make(chan string, 100)
	var st *readsFail
	b := setupHook(t, flaky(), func(c *Config) {
		st = &readsFail{Store: c.Store.(*sqlite.Store)}
		st.down.Store(true)
		c.Store, c.Logger = st, slog.New(slog.NewTextHandler(logs, nil))
		c.DeadLetterWebhook = hook.URL
		c.OnDeadLetter = func(_ context.Context, job *JobRow) { seen <- job.ID }
	})

	const n = 10
	var want []string
	for range n {
		res, err := b.client.Enqueue(t.Context(), sendEmail{To: "fail"}, nil)
		require.NoError(t, err)
		want = append(want, res.Job.ID)
	}
	// The jobs fail; both lanes try to read the first dead letter, and back off.
	require.Eventually(t, func() bool {
		b.clock.Advance(100 * time.Millisecond)
		failed, err := b.client.DeadLetterStats(t.Context())
		require.NoError(t, err)
		return failed.Count == n && st.tries.Load() >= 6
	}, 10*time.Second, time.Millisecond)
	require.Empty(t, seen, "nothing announced while the store is away")
	from, tries := b.clock.Now(), st.tries.Load()
	require.Eventually(t, func() bool { // ten more seconds of outage, the lanes failing again meanwhile
		b.clock.Advance(100 * time.Millisecond)
		return b.clock.Now().Sub(from) >= 10*time.Second && st.tries.Load() >= tries+4
	}, 10*time.Second, time.Millisecond)

	st.down.Store(false)
	var got, gotPosted []string
	for range n {
		got = append(got, recvStepping(t, b.clock, seen))
		gotPosted = append(gotPosted, recvStepping(t, b.clock, posted))
	}
	require.ElementsMatch(t, want, got, "every dead letter announced")
	require.ElementsMatch(t, want, gotPosted, "and posted")
	for _, lane := range []string{"on-dead-letter hook", "dead-letter webhook"} {
		require.Equal(t, 1, logs.count(lane+": read dead letters failed; retrying with backoff"), lane)
		require.Equal(t, 1, logs.count(lane+": read dead letters recovered"), lane)
	}
	require.Zero(t, logs.count("level=ERROR"), "no error per job")
}

// logBuffer collects log lines from several goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// count returns how many lines logged so far contain substr.
func (b *logBuffer) count(substr string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, substr) {
			n++
		}
	}
	return n
}
