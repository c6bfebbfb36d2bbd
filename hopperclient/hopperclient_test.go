package hopperclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/buildinfo"
	"github.com/hopperjobs/hopper/internal/servertest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// Email has no worker on the test server: its jobs wait in their queue.
type Email struct {
	To string `json:"to"`
}

func (Email) Kind() string { return "email" }

// Digest brings its own defaults, which Enqueue lays the caller's options over.
type Digest struct{}

func (Digest) Kind() string { return "digest" }

func (Digest) InsertOpts() hopper.InsertOpts {
	return hopper.InsertOpts{Queue: "digests", Priority: 5}
}

// Refund fails for good on the test server: it becomes a dead letter.
type Refund struct {
	Order int `json:"order"`
}

func (Refund) Kind() string { return "refund" }

// Approval suspends until resumed, then completes with the data it was resumed with.
type Approval struct{}

func (Approval) Kind() string { return "approval" }

type testBundle struct {
	srv    *servertest.Server
	client *hopperclient.Client // with the admin key
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	workers := hopper.NewWorkers()
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[Refund]) error {
		return hopper.NoRetry(errors.New("card declined"))
	})
	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[Approval]) error {
		if job.ResumeData == nil {
			return hopper.Suspend(nil, hopper.SuspendOpts{})
		}
		return hopper.SetResult(ctx, job.ResumeData)
	})
	srv := servertest.StartTB(t, servertest.Options{Keys: true, Workers: workers})
	return &testBundle{srv: srv, client: newClient(t, srv.URL, srv.AdminKey)}
}

func newClient(t *testing.T, url, key string) *hopperclient.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c, err := hopperclient.New(hopperclient.Config{URL: url, APIKey: key, HTTPClient: &http.Client{Transport: tr}})
	require.NoError(t, err)
	return c
}

// waitState waits until job id is in state want, and returns it.
func (b *testBundle) waitState(t *testing.T, id string, want hopper.JobState) *hopper.JobRow {
	t.Helper()
	var job *hopper.JobRow
	require.Eventually(t, func() bool {
		var err error
		job, err = b.client.Get(t.Context(), id)
		require.NoError(t, err)
		return job.State == want
	}, 10*time.Second, 10*time.Millisecond, "job %s never became %s", id, want)
	return job
}

func requireField(t *testing.T, err error, field string) {
	t.Helper()
	var ve *hopper.ValidationError
	require.ErrorAs(t, err, &ve, "%v", err)
	require.Equal(t, field, ve.Field, "%v", err)
	require.ErrorIs(t, err, hopper.ErrInvalid)
}

func TestNewChecksItsConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		cfg   hopperclient.Config
		field string
	}{
		"no URL":            {hopperclient.Config{}, "Config.URL"},
		"not a URL":         {hopperclient.Config{URL: "127.0.0.1:7070"}, "Config.URL"},
		"another scheme":    {hopperclient.Config{URL: "ftp://example.com"}, "Config.URL"},
		"no host":           {hopperclient.Config{URL: "http://"}, "Config.URL"},
		"a line break":      {hopperclient.Config{URL: "http://h", APIKey: "hop_x\r\nX-Evil: 1"}, "Config.APIKey"},
		"a space":           {hopperclient.Config{URL: "http://h", APIKey: "hop_x y"}, "Config.APIKey"},
		"a control char":    {hopperclient.Config{URL: "http://h", APIKey: "hop_\x00"}, "Config.APIKey"},
		"a DEL":             {hopperclient.Config{URL: "https://h", APIKey: "hop_\x7f"}, "Config.APIKey"},
		"unicode elsewhere": {hopperclient.Config{URL: "https://h", APIKey: "hop_\u2028"}, ""},
	} {
		_, err := hopperclient.New(tc.cfg)
		if tc.field == "" {
			require.NoError(t, err, name)
			continue
		}
		requireField(t, err, tc.field)
		require.Contains(t, err.Error(), "hopperclient: invalid "+tc.field, name)
	}
	_, err := hopperclient.New(hopperclient.Config{URL: "https://hopper.example.com:7443/"})
	require.NoError(t, err)
}

func TestEnqueueGetList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	at := time.Now().Add(time.Hour).Truncate(time.Millisecond).UTC()
	res, err := b.client.Enqueue(ctx, Email{To: "a@example.com"}, &hopper.InsertOpts{Queue: "mail", Priority: 3,
		RunAt: at, MaxAttempts: 7, MaxRescues: 2, Timeout: time.Minute, Headers: map[string]string{"tenant": "t1"},
		IdempotencyKey: "welcome-a", GroupKey: "a", FairnessKey: "tenant-1", RetryPolicy: &hopper.RetryPolicy{Base: time.Second}})
	require.NoError(t, err)
	require.False(t, res.Existing)
	job := res.Job
	require.Equal(t, "email", job.Kind)
	require.Equal(t, "mail", job.Queue)
	require.JSONEq(t, `{"to":"a@example.com"}`, string(job.Args))
	require.Equal(t, hopper.StateScheduled, job.State)
	require.Equal(t, 3, job.Priority)
	require.True(t, at.Equal(job.RunAt))
	require.Equal(t, 7, job.MaxAttempts)
	require.Equal(t, 2, job.MaxRescues)
	require.Equal(t, time.Minute, job.Timeout)
	require.Equal(t, "t1", job.Headers["tenant"])
	require.Equal(t, "welcome-a", job.IdempotencyKey)
	require.Equal(t, "a", job.GroupKey)
	require.Equal(t, "tenant-1", job.FairnessKey)

	// The same idempotency key and payload return the job enqueued before.
	again, err := b.client.Enqueue(ctx, Email{To: "a@example.com"}, &hopper.InsertOpts{Queue: "mail", IdempotencyKey: "welcome-a"})
	require.NoError(t, err)
	require.True(t, again.Existing)
	require.Equal(t, job.ID, again.Job.ID)
	// Another payload under the key is a conflict.
	_, err = b.client.Enqueue(ctx, Email{To: "b@example.com"}, &hopper.InsertOpts{Queue: "mail", IdempotencyKey: "welcome-a"})
	require.ErrorIs(t, err, hopper.ErrDuplicate)

	got, err := b.client.Get(ctx, job.ID)
	require.NoError(t, err)
	require.Equal(t, job, got)

	// RawArgs go as they are; an args type's own defaults apply under the caller's options.
	raw, err := b.client.Enqueue(ctx, hopper.RawArgs{KindName: "email", JSON: json.RawMessage(`{"to": "c@example.com"}`)}, nil)
	require.NoError(t, err)
	require.Equal(t, "default", raw.Job.Queue)
	require.Equal(t, hopper.StateQueued, raw.Job.State)
	digest, err := b.client.Enqueue(ctx, Digest{}, &hopper.InsertOpts{Priority: 9})
	require.NoError(t, err)
	require.Equal(t, "digests", digest.Job.Queue)
	require.Equal(t, 9, digest.Job.Priority)

	batch, err := b.client.EnqueueMany(ctx, []hopper.EnqueueParams{
		{Args: Email{To: "d@example.com"}, Opts: &hopper.InsertOpts{Queue: "mail"}},
		{Args: Email{To: "e@example.com"}, Opts: &hopper.InsertOpts{Queue: "mail"}},
	})
	require.NoError(t, err)
	require.Len(t, batch, 2)
	none, err := b.client.EnqueueMany(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, none)

	page, err := b.client.List(ctx, &hopper.ListParams{Queues: []string{"mail"}, States: []hopper.JobState{hopper.StateQueued},
		Ascending: true, Limit: 1})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 1)
	require.Equal(t, batch[0].Job.ID, page.Jobs[0].ID)
	require.NotEmpty(t, page.NextCursor)
	page, err = b.client.List(ctx, &hopper.ListParams{Queues: []string{"mail"}, States: []hopper.JobState{hopper.StateQueued},
		Ascending: true, Cursor: page.NextCursor})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 1)
	require.Equal(t, batch[1].Job.ID, page.Jobs[0].ID)
	require.Empty(t, page.NextCursor)
	all, err := b.client.List(ctx, nil)
	require.NoError(t, err)
	require.Len(t, all.Jobs, 5)
}

func TestCancelEventsAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	res, err := b.client.Enqueue(ctx, Email{To: "a@example.com"}, nil)
	require.NoError(t, err)

	job, err := b.client.Cancel(ctx, res.Job.ID, "sent by hand")
	require.NoError(t, err)
	require.Equal(t, hopper.StateCanceled, job.State)
	_, err = b.client.Cancel(ctx, res.Job.ID, "")
	require.ErrorIs(t, err, hopper.ErrInvalidTransition)

	events, err := b.client.Events(ctx, res.Job.ID)
	require.NoError(t, err)
	require.Len(t, events, 2)
	require.Equal(t, res.Job.ID, events[1].JobID)
	require.Equal(t, hopper.StateQueued, events[1].From)
	require.Equal(t, hopper.StateCanceled, events[1].To)
	require.Equal(t, hopper.ActorOperator, events[1].Actor)
	require.Equal(t, "sent by hand", events[1].Reason)

	// A job that ran has attempts.
	refund, err := b.client.Enqueue(ctx, Refund{Order: 1}, &hopper.InsertOpts{MaxAttempts: 1})
	require.NoError(t, err)
	b.waitState(t, refund.Job.ID, hopper.StateFailed)
	attempts, err := b.client.Attempts(ctx, refund.Job.ID)
	require.NoError(t, err)
	require.Len(t, attempts, 1)
	require.Equal(t, refund.Job.ID, attempts[0].JobID)
	require.Equal(t, hopper.OutcomeError, attempts[0].Outcome)
	require.Contains(t, attempts[0].Error, "card declined")
	require.Equal(t, "servertest", attempts[0].WorkerID)
	require.False(t, attempts[0].EndedAt.IsZero())
}

func TestResume(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	res, err := b.client.Enqueue(ctx, Approval{}, nil)
	require.NoError(t, err)
	b.waitState(t, res.Job.ID, hopper.StateSuspended)

	job, err := b.client.Resume(ctx, res.Job.ID, map[string]bool{"approved": true}, "approved by ops")
	require.NoError(t, err)
	require.JSONEq(t, `{"approved":true}`, string(job.ResumeData))
	done := b.waitState(t, res.Job.ID, hopper.StateCompleted)
	require.JSONEq(t, `{"approved":true}`, string(done.Result))

	_, err = b.client.Resume(ctx, res.Job.ID, nil, "")
	require.ErrorIs(t, err, hopper.ErrInvalidTransition)
	_, err = b.client.Resume(ctx, res.Job.ID, func() {}, "")
	requireField(t, err, "data")
}

func TestQueues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	_, err := b.client.Enqueue(ctx, Email{}, &hopper.InsertOpts{Queue: "mail"})
	require.NoError(t, err)

	require.NoError(t, b.client.PauseQueue(ctx, "mail"))
	require.NoError(t, b.client.SetQueueWeight(ctx, "mail", 3))
	require.NoError(t, b.client.SetLimit(ctx, hopper.Limit{Queue: "mail", MaxRunning: 4}))
	require.NoError(t, b.client.SetRateLimit(ctx, hopper.RateLimit{Queue: "mail", Rate: hopper.Rate{Limit: 10, Period: time.Second}}))
	qs, err := b.client.Queues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, &hopper.QueueInfo{Name: "mail", Paused: true, Weight: 3, MaxRunning: 4,
		Rate: hopper.Rate{Limit: 10, Period: time.Second}, Counts: map[hopper.JobState]int64{hopper.StateQueued: 1},
		AwaitingCompute: 1}, qs[0])

	require.NoError(t, b.client.ResumeQueue(ctx, "mail"))
	zero := 0
	require.NoError(t, b.client.SetQueue(ctx, "mail", hopperclient.QueueSettings{Weight: &zero, MaxRunning: &zero,
		Rate: &hopper.Rate{}}))
	qs, err = b.client.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, &hopper.QueueInfo{Name: "mail", Counts: map[hopper.JobState]int64{hopper.StateQueued: 1},
		AwaitingCompute: 1}, qs[0])

	// A refused setting changes nothing, and is named.
	bad, weight := -1, 5
	err = b.client.SetQueue(ctx, "mail", hopperclient.QueueSettings{Weight: &weight, MaxRunning: &bad})
	requireField(t, err, "max_running")
	qs, err = b.client.Queues(ctx)
	require.NoError(t, err)
	require.Zero(t, qs[0].Weight)
	requireField(t, b.client.SetQueueWeight(ctx, "mail", 5000), "weight")
	requireField(t, b.client.SetLimit(ctx, hopper.Limit{MaxRunning: 1}), "limit")
	requireField(t, b.client.SetRateLimit(ctx, hopper.RateLimit{Queue: "a", Kind: "b"}), "rate_limit")
}

func TestKinds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	_, err := b.client.Enqueue(ctx, Email{}, nil)
	require.NoError(t, err)

	require.NoError(t, b.client.DisableKind(ctx, "email"))
	require.NoError(t, b.client.SetLimit(ctx, hopper.Limit{Kind: "email", MaxRunning: 2}))
	require.NoError(t, b.client.SetRateLimit(ctx, hopper.RateLimit{Kind: "email", Rate: hopper.Rate{Limit: 5, Period: time.Minute}}))
	ks, err := b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, []*hopper.KindInfo{{Name: "email", Disabled: true, MaxRunning: 2, Rate: hopper.Rate{Limit: 5, Period: time.Minute},
		Counts: map[hopper.JobState]int64{hopper.StateQueued: 1}}}, ks)
	qs, err := b.client.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(1), qs[0].Disabled)

	require.NoError(t, b.client.EnableKind(ctx, "email"))
	zero := 0
	require.NoError(t, b.client.SetKind(ctx, "email", hopperclient.KindSettings{MaxRunning: &zero, Rate: &hopper.Rate{}}))
	ks, err = b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, []*hopper.KindInfo{{Name: "email", Counts: map[hopper.JobState]int64{hopper.StateQueued: 1}}}, ks)

	requireField(t, b.client.SetKind(ctx, "email", hopperclient.KindSettings{}), "settings")
	requireField(t, b.client.SetKind(ctx, "email", hopperclient.KindSettings{Rate: &hopper.Rate{Limit: 1}}), "rate")

	// Limits per key, of a kind and of a queue.
	require.NoError(t, b.client.SetLimit(ctx, hopper.Limit{Kind: "email", MaxRunning: 2, PerKey: true}))
	require.NoError(t, b.client.SetRateLimit(ctx, hopper.RateLimit{Kind: "email", Rate: hopper.Rate{Limit: 3, Period: time.Second}, PerKey: true}))
	require.NoError(t, b.client.SetLimit(ctx, hopper.Limit{Queue: "default", MaxRunning: 4, PerKey: true}))
	require.NoError(t, b.client.SetRateLimit(ctx, hopper.RateLimit{Queue: "default", Rate: hopper.Rate{Limit: 5, Period: time.Second}, PerKey: true}))
	ks, err = b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, ks[0].CapPerKey)
	require.Equal(t, hopper.Rate{Limit: 3, Period: time.Second}, ks[0].RatePerKey)
	require.Zero(t, ks[0].MaxRunning, "not the kind's own cap")
	qs, err = b.client.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, 4, qs[0].CapPerKey)
	require.Equal(t, hopper.Rate{Limit: 5, Period: time.Second}, qs[0].RatePerKey)
	bad := -1
	requireField(t, b.client.SetKind(ctx, "email", hopperclient.KindSettings{CapPerKey: &bad}), "cap_per_key")
	requireField(t, b.client.SetQueue(ctx, "default", hopperclient.QueueSettings{RatePerKey: &hopper.Rate{Limit: 1}}), "rate_per_key")
}

func TestCompactKind(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	require.NoError(t, b.client.DisableKind(ctx, "email")) // its jobs wait
	var replaced []string
	for range 3 {
		res, err := b.client.Enqueue(ctx, Email{}, &hopper.InsertOpts{GroupKey: "user-7"})
		require.NoError(t, err)
		replaced = append(replaced, res.Job.ID)
	}
	res, err := b.client.CompactKind(ctx, "email", &hopper.CompactOpts{Over: 3})
	require.NoError(t, err)
	require.Zero(t, res.Groups)
	res, err = b.client.CompactKind(ctx, "email", nil)
	require.NoError(t, err)
	require.Equal(t, 1, res.Groups)
	require.Equal(t, 3, res.Jobs)
	require.Len(t, res.Compacted, 1)
	require.Equal(t, replaced, res.Compacted[0].Replaced)
	from, into, err := b.client.Lineage(ctx, res.Compacted[0].NewJobID)
	require.NoError(t, err)
	require.Equal(t, replaced, from)
	require.Empty(t, into)
	_, into, err = b.client.Lineage(ctx, replaced[0])
	require.NoError(t, err)
	require.Equal(t, res.Compacted[0].NewJobID, into)

	require.NoError(t, b.client.SetKind(ctx, "email", hopperclient.KindSettings{Compaction: &hopper.Compaction{Over: 4, Merge: hopper.MergeAppend}}))
	ks, err := b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, hopper.Compaction{Over: 4, Merge: hopper.MergeAppend}, ks[0].Compaction)
	requireField(t, b.client.SetKind(ctx, "email", hopperclient.KindSettings{Compaction: &hopper.Compaction{Over: -1}}), "compact_over")
	requireField(t, b.client.SetKind(ctx, "email", hopperclient.KindSettings{Compaction: &hopper.Compaction{Over: math.MaxInt32 + 1}}), "compact_over")

	_, err = b.client.CompactKind(ctx, "email", &hopper.CompactOpts{Merge: "squash"})
	requireField(t, err, "merge")
	_, err = b.client.CompactKind(ctx, "email", &hopper.CompactOpts{Over: -1})
	requireField(t, err, "over")
	_, err = b.client.CompactKind(ctx, "email", &hopper.CompactOpts{Over: math.MaxInt32 + 1})
	requireField(t, err, "over")
}

func TestDeadLettersAndReplays(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	var ids []string
	for i := range 3 {
		res, err := b.client.Enqueue(ctx, Refund{Order: i}, &hopper.InsertOpts{MaxAttempts: 1})
		require.NoError(t, err)
		b.waitState(t, res.Job.ID, hopper.StateFailed)
		ids = append(ids, res.Job.ID)
	}

	page, err := b.client.DeadLetters(ctx, &hopper.DeadLetterParams{DeadLetterFilter: hopper.DeadLetterFilter{Kinds: []string{"refund"}}})
	require.NoError(t, err)
	require.Len(t, page.DeadLetters, 3)
	require.Contains(t, page.DeadLetters[0].LastError, "card declined")
	st, err := b.client.DeadLetterStats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), st.Count)
	require.False(t, st.Oldest.IsZero())

	replayed, err := b.client.Replay(ctx, ids[0])
	require.NoError(t, err)
	require.Equal(t, ids[0], replayed.OriginalID)
	require.Equal(t, "admin", replayed.ReplayedBy, "recorded as done by the API key's name")
	require.Equal(t, 1, replayed.ReplayCount)
	_, err = b.client.Replay(ctx, "01a20c25-204c-75dd-9586-33351e006867")
	require.ErrorIs(t, err, hopper.ErrNotFound)
	_, err = b.client.Replay(ctx, ids[0])
	require.ErrorIs(t, err, hopper.ErrAlreadyReplayed, "a dead letter is replayed once")
	require.NotErrorIs(t, err, hopper.ErrDuplicate)
	require.Contains(t, err.Error(), replayed.ID, "the refusal names the earlier replay")

	// The replay fails too. Then the dead letters never replayed, oldest first: the other
	// two, then the replay.
	b.waitState(t, replayed.ID, hopper.StateFailed)
	res, err := b.client.ReplayMany(ctx, hopper.DeadLetterFilter{Queues: []string{"default"}, Kinds: []string{"refund"}}, 10)
	require.NoError(t, err)
	require.Equal(t, 1, res.Skipped, "the dead letter replayed before")
	many := res.Jobs
	require.Len(t, many, 3)
	require.Equal(t, []string{ids[1], ids[2], ids[0]}, []string{many[0].OriginalID, many[1].OriginalID, many[2].OriginalID})
	require.Equal(t, 2, many[2].ReplayCount)
	require.Equal(t, "admin", many[1].ReplayedBy)

	log, err := b.client.Replays(ctx, &hopper.ReplayListParams{SourceJobID: ids[0]})
	require.NoError(t, err)
	require.Len(t, log.Replays, 1)
	require.Equal(t, replayed.ID, log.Replays[0].NewJobID)
	require.Equal(t, "admin", log.Replays[0].ReplayedBy)
	all, err := b.client.Replays(ctx, nil)
	require.NoError(t, err)
	require.Len(t, all.Replays, 4)

	// The four replayed dead letters are dealt with: left out, counted apart, listed on request
	// and marked. Their three replays, failed again, are what is left.
	for _, j := range many {
		b.waitState(t, j.ID, hopper.StateFailed)
	}
	page, err = b.client.DeadLetters(ctx, nil)
	require.NoError(t, err)
	require.Equal(t, []string{many[2].ID, many[1].ID, many[0].ID}, deadLetterIDs(page))
	st, err = b.client.DeadLetterStats(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), st.Count)
	require.Equal(t, int64(4), st.Replayed)
	page, err = b.client.DeadLetters(ctx, &hopper.DeadLetterParams{IncludeReplayed: true})
	require.NoError(t, err)
	require.Equal(t, []string{many[2].ID, many[1].ID, many[0].ID, replayed.ID, ids[2], ids[1], ids[0]}, deadLetterIDs(page))
	require.Zero(t, page.DeadLetters[0].Replays)
	marked := page.DeadLetters[3]
	require.Equal(t, 1, marked.Replays)
	require.Equal(t, many[2].ID, marked.LastReplayID)
	require.Equal(t, many[2].CreatedAt, marked.LastReplayedAt)
}

// Contract 18 through the server: a dead letter retried in place is the same job, with more
// attempts, audited as done by the API key's name; set-retries changes a waiting job's budget.
func TestRetryInPlaceAndSetRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	res, err := b.client.Enqueue(ctx, Refund{Order: 9}, &hopper.InsertOpts{MaxAttempts: 1})
	require.NoError(t, err)
	dead := b.waitState(t, res.Job.ID, hopper.StateFailed)

	_, err = b.client.RetryJob(ctx, dead.ID, hopper.RetryOpts{Args: json.RawMessage(`{"order":`)})
	requireField(t, err, "args")
	job, err := b.client.RetryJob(ctx, dead.ID, hopper.RetryOpts{Retries: 2, Args: json.RawMessage(`{"order":10}`),
		Reason: "card replaced"})
	require.NoError(t, err)
	require.Equal(t, dead.ID, job.ID)
	require.Equal(t, dead.Attempt+2, job.MaxAttempts)
	again := b.waitState(t, dead.ID, hopper.StateFailed) // the refund says NoRetry again
	require.Equal(t, 2, again.Attempt, "the second attempt of the same job")
	require.JSONEq(t, `{"order":10}`, string(again.Args))
	log, err := b.client.Replays(ctx, &hopper.ReplayListParams{SourceJobID: dead.ID})
	require.NoError(t, err)
	require.Len(t, log.Replays, 1)
	require.Equal(t, hopper.ActionRetry, log.Replays[0].Action)
	require.Equal(t, "admin", log.Replays[0].ReplayedBy)
	require.Equal(t, "card replaced", log.Replays[0].Reason)

	_, err = b.client.UpdateRetries(ctx, dead.ID, 5)
	require.ErrorIs(t, err, hopper.ErrInvalidTransition, "an ended job")
	waiting, err := b.client.Enqueue(ctx, Email{}, &hopper.InsertOpts{Queue: "nobody-works-here"})
	require.NoError(t, err)
	set, err := b.client.UpdateRetries(ctx, waiting.Job.ID, 9)
	require.NoError(t, err)
	require.Equal(t, 9, set.MaxAttempts)
	_, err = b.client.UpdateRetries(ctx, waiting.Job.ID, 0)
	requireField(t, err, "max_attempts")

	more, err := b.client.RetryMany(ctx, hopper.DeadLetterFilter{Kinds: []string{"refund"}}, hopper.RetryManyOpts{Limit: 5})
	require.NoError(t, err)
	require.Equal(t, []string{dead.ID}, []string{more.Jobs[0].ID})
	require.Zero(t, more.Skipped)
}

func deadLetterIDs(p *hopper.DeadLetterPage) []string {
	out := make([]string, len(p.DeadLetters))
	for i, d := range p.DeadLetters {
		out[i] = d.ID
	}
	return out
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	info, err := b.client.AddSchedule(ctx, hopper.Schedule{Name: "nightly", Cron: "0 3 * * *", TZ: "Europe/Paris",
		Args: Email{To: "ops@example.com"}, Queue: "mail", Headers: map[string]string{"h": "v"}})
	require.NoError(t, err)
	require.Equal(t, "email", info.Kind, "the kind of the args")
	require.JSONEq(t, `{"to":"ops@example.com"}`, string(info.Args.(json.RawMessage)))
	require.Equal(t, hopper.ScheduleSourceAPI, info.Source)
	require.False(t, info.NextFireAt.IsZero())

	require.NoError(t, b.client.PauseSchedule(ctx, "nightly"))
	list, err := b.client.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.True(t, list[0].Paused)
	require.Equal(t, "Europe/Paris", list[0].TZ)
	require.NoError(t, b.client.ResumeSchedule(ctx, "nightly"))
	list, err = b.client.Schedules(ctx)
	require.NoError(t, err)
	require.False(t, list[0].Paused)

	require.NoError(t, b.client.RemoveSchedule(ctx, "nightly"))
	require.ErrorIs(t, b.client.RemoveSchedule(ctx, "nightly"), hopper.ErrNotFound)
	_, err = b.client.AddSchedule(ctx, hopper.Schedule{Name: "both", Cron: "* * * * *", Every: time.Minute, Kind: "email"})
	require.ErrorIs(t, err, hopper.ErrInvalid)
	_, err = b.client.AddSchedule(ctx, hopper.Schedule{Name: "bad", Every: time.Minute, Args: func() {}})
	requireField(t, err, "args")
}

func TestNodes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	nodes, err := b.client.Nodes(t.Context())
	require.NoError(t, err)
	require.Len(t, nodes, 1)
	require.Equal(t, "servertest", nodes[0].ID)
	require.False(t, nodes[0].StartedAt.IsZero())
	workers, err := b.client.Workers(t.Context())
	require.NoError(t, err)
	require.Empty(t, workers)

	// A remote worker on a stream.
	handlers := hopper.NewWorkers()
	hopper.AddWorkerFunc(handlers, func(ctx context.Context, job *hopper.Job[Email]) error { return nil })
	w, err := remote.New(remote.Config{URL: b.srv.URL, APIKey: b.srv.AdminKey, Workers: handlers, Queue: "mail",
		Name: "mailer", Concurrency: 3})
	require.NoError(t, err)
	require.NoError(t, w.Start(t.Context()))
	t.Cleanup(func() { stoptest.Within(t, w, 10*time.Second) })
	var streams []*hopperclient.StreamInfo
	require.Eventually(t, func() bool {
		streams, err = b.client.Streams(t.Context())
		require.NoError(t, err)
		return len(streams) == 1
	}, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, "mailer", streams[0].Worker)
	require.Equal(t, []string{"mail"}, streams[0].Queues)
	require.Equal(t, 3, streams[0].Credit)
	workers, err = b.client.Workers(t.Context())
	require.NoError(t, err)
	require.Len(t, workers, 1)
	require.Equal(t, "mailer", workers[0].Name)
	require.Equal(t, "mail", workers[0].Queue)
	require.Equal(t, []string{"email"}, workers[0].Kinds)
	require.Equal(t, 1, workers[0].OpenStreams)
}

func TestKeys(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	plain, key, err := b.client.CreateKey(ctx, "reader", "read")
	require.NoError(t, err)
	require.Equal(t, "reader", key.Name)
	require.Equal(t, []string{"read"}, key.Scopes)
	require.False(t, key.CreatedAt.IsZero())
	_, _, err = b.client.CreateKey(ctx, "reader", "read")
	require.ErrorIs(t, err, hopper.ErrDuplicate)
	_, _, err = b.client.CreateKey(ctx, "nobody")
	requireField(t, err, "scopes")

	keys, err := b.client.Keys(ctx)
	require.NoError(t, err)
	require.Len(t, keys, 2)
	require.Equal(t, []string{"admin", "reader"}, []string{keys[0].Name, keys[1].Name})

	// A read key reads, and may not change anything.
	reader := newClient(t, b.srv.URL, plain)
	_, err = reader.Queues(ctx)
	require.NoError(t, err)
	_, err = reader.Enqueue(ctx, Email{}, nil)
	require.ErrorIs(t, err, hopperclient.ErrPermissionDenied)

	revoked, err := b.client.RevokeKey(ctx, "reader")
	require.NoError(t, err)
	require.False(t, revoked.RevokedAt.IsZero())
	_, err = reader.Queues(ctx)
	require.ErrorIs(t, err, hopperclient.ErrUnauthenticated)
	_, err = b.client.RevokeKey(ctx, "nope")
	require.ErrorIs(t, err, hopper.ErrNotFound)
	_, err = b.client.RevokeKey(ctx, "no\x00pe")
	requireField(t, err, "id_or_name")
}

// A key made elsewhere is imported with its secret, works at once, and imports again as a
// no-op; conflicts and bad input are refused by field.
func TestImportKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	plain, err := apikey.Generate()
	require.NoError(t, err)
	id, secret, err := apikey.Parse(plain)
	require.NoError(t, err)

	key, created, err := b.client.ImportKey(ctx, plain, "importer", "read")
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, id, key.ID)
	require.Equal(t, "importer", key.Name)
	require.Equal(t, []string{"read"}, key.Scopes)
	require.False(t, key.CreatedAt.IsZero())
	reader := newClient(t, b.srv.URL, plain)
	_, err = reader.Queues(ctx)
	require.NoError(t, err, "the imported key is accepted")

	again, created, err := b.client.ImportKey(ctx, plain, "importer", "read")
	require.NoError(t, err)
	require.False(t, created, "the same import again changes nothing")
	require.True(t, key.CreatedAt.Equal(again.CreatedAt))

	_, _, err = b.client.ImportKey(ctx, plain, "importer", "admin")
	require.ErrorIs(t, err, hopper.ErrDuplicate)
	require.ErrorContains(t, err, "conflicting scopes: key "+id+" is stored with scopes read")
	_, _, err = b.client.ImportKey(ctx, plain, "importer", "write")
	requireField(t, err, "scopes")
	_, _, err = b.client.ImportKey(ctx, "hop_"+secret, "importer", "read")
	requireField(t, err, "key")
	require.NotContains(t, err.Error(), secret, "an error never shows a secret")
	_, _, err = b.client.ImportKey(ctx, plain, "has space", "read")
	requireField(t, err, "name")

	_, err = b.client.RevokeKey(ctx, id)
	require.NoError(t, err)
	_, _, err = b.client.ImportKey(ctx, plain, "importer", "read")
	require.ErrorIs(t, err, hopper.ErrDuplicate)
	require.ErrorContains(t, err, "never imported again")
	_, err = reader.Queues(ctx)
	require.ErrorIs(t, err, hopperclient.ErrUnauthenticated, "a revoked key is not brought back")
}

// ServerInfo needs no key: a client without one, or with a bad one, learns which server it
// reaches, whose other calls refuse it.
func TestServerInfo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, key := range []string{"", "hop_x"} {
		anon := newClient(t, b.srv.URL, key)
		info, err := anon.ServerInfo(t.Context())
		require.NoError(t, err)
		own := buildinfo.Read() // the server runs in this test binary
		require.Equal(t, &hopperclient.ServerInfo{Version: own.Version, Commit: own.Commit, Modified: own.Modified,
			GoVersion: own.Go, Platform: own.Platform, Store: "sqlite", SchemaVersion: sqlite.LatestVersion(),
			InputLimits: b.srv.Client.InputLimits()}, info)
		require.Equal(t, hopper.MaxErrorBytes, info.InputLimits.MaxErrorBytes, "the limits a worker clips its reports to")
		_, err = anon.Queues(t.Context())
		require.ErrorIs(t, err, hopperclient.ErrUnauthenticated)
	}
}
