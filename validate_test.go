package hopper

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Bytes no store and no wire can carry as text.
const (
	nul     = "a\x00b"
	notUTF8 = "caf\xe9"
)

// Every Client method that takes text from outside refuses a NUL byte and bytes that are not
// UTF-8 with a *ValidationError naming the field, before anything reaches the store.
func TestEveryClientMethodRefusesBadText(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	good, err := b.client.Enqueue(ctx, sendEmail{To: "a"}, nil)
	require.NoError(t, err)
	id := good.Job.ID
	raw := func(kind, args string) RawArgs { return RawArgs{KindName: kind, JSON: json.RawMessage(args)} }
	enqueue := func(args JobArgs, o *InsertOpts) func() error {
		return func() error { _, err := b.client.Enqueue(ctx, args, o); return err }
	}
	var zero int
	cases := []struct {
		name, field string
		call        func(bad string) error
	}{
		{"enqueue kind", "kind", func(bad string) error { return enqueue(raw(bad, `{}`), nil)() }},
		{"enqueue args", "args", func(bad string) error { return enqueue(raw("k", `{"a":"`+bad+`"}`), nil)() }},
		{"enqueue idempotency key", "idempotency_key", func(bad string) error {
			return enqueue(sendEmail{}, &InsertOpts{IdempotencyKey: bad})()
		}},
		{"enqueue group key", "group_key", func(bad string) error { return enqueue(sendEmail{}, &InsertOpts{GroupKey: bad})() }},
		{"enqueue fairness key", "fairness_key", func(bad string) error {
			return enqueue(sendEmail{}, &InsertOpts{FairnessKey: bad})()
		}},
		{"enqueue merge key", "merge_key", func(bad string) error { return enqueue(sendEmail{}, &InsertOpts{MergeKey: bad})() }},
		{"enqueue header name", "headers", func(bad string) error {
			return enqueue(sendEmail{}, &InsertOpts{Headers: map[string]string{bad: "v"}})()
		}},
		{"enqueue header value", "headers", func(bad string) error {
			return enqueue(sendEmail{}, &InsertOpts{Headers: map[string]string{"h": bad}})()
		}},
		{"enqueue queue", "queue", func(bad string) error { return enqueue(sendEmail{}, &InsertOpts{Queue: bad})() }},
		{"get", "id", func(bad string) error { _, err := b.client.Get(ctx, bad); return err }},
		{"events", "id", func(bad string) error { _, err := b.client.Events(ctx, bad); return err }},
		{"attempts", "id", func(bad string) error { _, err := b.client.Attempts(ctx, bad); return err }},
		{"cancel id", "id", func(bad string) error { _, err := b.client.Cancel(ctx, bad); return err }},
		{"cancel reason", "reason", func(bad string) error { _, err := b.client.CancelBy(ctx, id, ActorAPI, bad); return err }},
		{"resume id", "id", func(bad string) error { _, err := b.client.Resume(ctx, bad, nil); return err }},
		{"resume data", "data", func(bad string) error {
			_, err := b.client.Resume(ctx, id, json.RawMessage(`"`+bad+`"`))
			return err
		}},
		{"resume reason", "reason", func(bad string) error { _, err := b.client.ResumeBy(ctx, id, nil, ActorAPI, bad); return err }},
		{"replay id", "id", func(bad string) error { _, err := b.client.Replay(ctx, bad, ""); return err }},
		{"replayed by", "replayed_by", func(bad string) error { _, err := b.client.Replay(ctx, id, bad); return err }},
		{"retry id", "id", func(bad string) error { _, err := b.client.RetryJob(ctx, bad, RetryOpts{}); return err }},
		{"retry reason", "reason", func(bad string) error { _, err := b.client.RetryJob(ctx, id, RetryOpts{Reason: bad}); return err }},
		{"retried by", "replayed_by", func(bad string) error { _, err := b.client.RetryJob(ctx, id, RetryOpts{By: bad}); return err }},
		{"retry args", "args", func(bad string) error {
			_, err := b.client.RetryJob(ctx, id, RetryOpts{Args: json.RawMessage(`"` + bad + `"`)})
			return err
		}},
		{"retry many queues", "queues[0]", func(bad string) error {
			_, err := b.client.RetryMany(ctx, DeadLetterFilter{Queues: []string{bad}}, RetryManyOpts{})
			return err
		}},
		{"update retries id", "id", func(bad string) error { _, err := b.client.UpdateRetries(ctx, bad, 3); return err }},
		{"replay reason", "reason", func(bad string) error {
			_, err := b.client.ReplayWith(ctx, id, ReplayOpts{Reason: bad})
			return err
		}},
		{"list kinds", "kinds[1]", func(bad string) error {
			_, err := b.client.List(ctx, &ListParams{Kinds: []string{"k", bad}})
			return err
		}},
		{"list queues", "queues[0]", func(bad string) error { _, err := b.client.List(ctx, &ListParams{Queues: []string{bad}}); return err }},
		{"list fairness keys", "fairness_keys", func(bad string) error {
			_, err := b.client.List(ctx, &ListParams{FairnessKeys: []string{bad}})
			return err
		}},
		{"list cursor", "cursor", func(bad string) error { _, err := b.client.List(ctx, &ListParams{Cursor: bad}); return err }},
		{"dead letters kinds", "kinds[0]", func(bad string) error {
			_, err := b.client.DeadLetters(ctx, &DeadLetterParams{DeadLetterFilter: DeadLetterFilter{Kinds: []string{bad}}})
			return err
		}},
		{"dead letters cursor", "cursor", func(bad string) error {
			_, err := b.client.DeadLetters(ctx, &DeadLetterParams{Cursor: bad})
			return err
		}},
		{"replay many queues", "queues[0]", func(bad string) error {
			_, err := b.client.ReplayMany(ctx, DeadLetterFilter{Queues: []string{bad}}, 0, "")
			return err
		}},
		{"replays source", "source_job_id", func(bad string) error {
			_, err := b.client.Replays(ctx, &ReplayListParams{SourceJobID: bad})
			return err
		}},
		{"activate worker", "worker", func(bad string) error {
			_, err := b.client.workerAPI.Activate(ctx, workerapi.ActivateParams{Worker: bad})
			return err
		}},
		{"activate kinds", "kind", func(bad string) error {
			_, err := b.client.workerAPI.Activate(ctx, workerapi.ActivateParams{Worker: "w", Kinds: []string{bad}})
			return err
		}},
		{"activate queue", "queue", func(bad string) error {
			_, err := b.client.workerAPI.Activate(ctx, workerapi.ActivateParams{Worker: "w", Queue: bad})
			return err
		}},
		{"complete id", "id", func(bad string) error { return b.client.workerAPI.CompleteJob(ctx, bad, 1, nil) }},
		{"complete result", "result", func(bad string) error {
			return b.client.workerAPI.CompleteJob(ctx, id, 1, json.RawMessage(`"`+bad+`"`))
		}},
		{"fail id", "id", func(bad string) error {
			_, err := b.client.workerAPI.FailJob(ctx, bad, 1, workerapi.FailParams{Error: "x"})
			return err
		}},
		{"fail error", "error", func(bad string) error {
			_, err := b.client.workerAPI.FailJob(ctx, id, 1, workerapi.FailParams{Error: bad, RetriesLeft: &zero})
			return err
		}},
		{"release id", "id", func(bad string) error { return b.client.workerAPI.ReleaseJob(ctx, bad, 1, "") }},
		{"release reason", "reason", func(bad string) error { return b.client.workerAPI.ReleaseJob(ctx, id, 1, bad) }},
		{"snooze id", "id", func(bad string) error { return b.client.workerAPI.SnoozeJob(ctx, bad, 1, time.Second) }},
		{"suspend id", "id", func(bad string) error {
			return b.client.workerAPI.SuspendJob(ctx, bad, 1, nil, workerapi.SuspendParams{})
		}},
		{"suspend checkpoint", "checkpoint", func(bad string) error {
			return b.client.workerAPI.SuspendJob(ctx, id, 1, json.RawMessage(`"`+bad+`"`), workerapi.SuspendParams{})
		}},
		{"extend id", "id", func(bad string) error {
			_, err := b.client.workerAPI.ExtendJobLease(ctx, bad, 1, time.Minute)
			return err
		}},
		{"heartbeat id", "id", func(bad string) error { return b.client.workerAPI.HeartbeatJob(ctx, bad, 1) }},
		{"progress id", "id", func(bad string) error { return b.client.workerAPI.ReportJobProgress(ctx, bad, 1, 5, "") }},
		{"progress message", "message", func(bad string) error { return b.client.workerAPI.ReportJobProgress(ctx, id, 1, 5, bad) }},
		{"schedule kind", "kind", func(bad string) error {
			_, err := b.client.AddSchedule(ctx, Schedule{Name: "s", Every: time.Minute, Kind: bad})
			return err
		}},
		{"schedule args", "args", func(bad string) error {
			_, err := b.client.AddSchedule(ctx, Schedule{Name: "s", Every: time.Minute, Kind: "k", Args: json.RawMessage(`"` + bad + `"`)})
			return err
		}},
		{"schedule header", "headers", func(bad string) error {
			_, err := b.client.AddSchedule(ctx, Schedule{Name: "s", Every: time.Minute, Kind: "k", Headers: map[string]string{"h": bad}})
			return err
		}},
		{"schedule tz", "tz", func(bad string) error {
			_, err := b.client.AddSchedule(ctx, Schedule{Name: "s", Cron: "* * * * *", TZ: bad, Kind: "k"})
			return err
		}},
		{"schedule cron", "cron", func(bad string) error {
			_, err := b.client.AddSchedule(ctx, Schedule{Name: "s", Cron: bad, Kind: "k"})
			return err
		}},
		{"schedule name", "name", func(bad string) error { return b.client.PauseSchedule(ctx, bad) }},
		{"get schedule", "name", func(bad string) error { _, err := b.client.GetSchedule(ctx, bad); return err }},
		{"remove schedule", "name", func(bad string) error { return b.client.RemoveSchedule(ctx, bad) }},
		{"pause queue", "queue", func(bad string) error { return b.client.PauseQueue(ctx, bad) }},
		{"limit kind", "kind", func(bad string) error { return b.client.SetLimit(ctx, Limit{Kind: bad, MaxRunning: 1}) }},
	}
	for _, tc := range cases {
		for what, bad := range map[string]string{"NUL": nul, "not UTF-8": notUTF8} {
			err := tc.call(bad)
			var ve *ValidationError
			require.ErrorAs(t, err, &ve, "%s with %s", tc.name, what)
			require.ErrorIs(t, err, ErrInvalid)
			require.Equal(t, tc.field, ve.Field, "%s with %s: %v", tc.name, what, err)
			require.True(t, validText(err.Error()), "the message itself is text: %q", err.Error())
		}
	}
	all, err := b.client.List(ctx, nil)
	require.NoError(t, err)
	require.Len(t, all.Jobs, 1, "nothing stored but the good job")
	require.Equal(t, StateQueued, all.Jobs[0].State, "and it was not changed")
	scheds, err := b.client.Schedules(ctx)
	require.NoError(t, err)
	require.Empty(t, scheds)
}

func validText(s string) bool { return badText(s) < 0 }

func TestTextErrorsSayWhereTheBadByteIs(t *testing.T) {
	t.Parallel()
	require.EqualError(t, checkText("idempotency_key", "ab\x00"), "invalid idempotency_key: contains a NUL byte at byte 2")
	require.EqualError(t, checkText("kind", "🚀\xff"), "invalid kind: not valid UTF-8 at byte 4")
	require.EqualError(t, checkJSON("args", []byte("{\"a\":\"\xff\"}")), "invalid args: not valid UTF-8 at byte 6")
	require.EqualError(t, checkJSON("args", []byte(`{"a":`)), "invalid args: not valid JSON")
	require.NoError(t, checkText("kind", "📨 \uFFFD שלום"), "valid text of any script")
	require.NoError(t, checkJSON("args", []byte(`{"nul":"\u0000"}`)), "an escaped NUL is JSON, not a NUL byte")
}

// The long values at the limits still pass; one byte more does not.
func TestTextLimits(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	key := strings.Repeat("é", maxKeyLen/2) // 512 bytes of two-byte characters
	res, err := b.client.Enqueue(t.Context(), RawArgs{KindName: strings.Repeat("k", maxKindLen), JSON: json.RawMessage(`{}`)},
		&InsertOpts{IdempotencyKey: key, GroupKey: key})
	require.NoError(t, err)
	got, err := b.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, key, got.IdempotencyKey)
	_, err = b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{IdempotencyKey: key + "x"})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "idempotency_key", ve.Field)
	_, err = b.client.Get(t.Context(), strings.Repeat("x", maxIDLen+1))
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "id", ve.Field)

	// A fairness key: 1–128 bytes of text without control characters.
	tenant := strings.Repeat("é", 64) // 128 bytes, the limit
	res2, err := b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{FairnessKey: tenant})
	require.NoError(t, err)
	got, err = b.client.Get(t.Context(), res2.Job.ID)
	require.NoError(t, err)
	require.Equal(t, tenant, got.FairnessKey)
	for _, bad := range []string{tenant + "x", "tenant\t1"} {
		_, err = b.client.Enqueue(t.Context(), sendEmail{}, &InsertOpts{FairnessKey: bad})
		require.ErrorAs(t, err, &ve, "%q", bad)
		require.Equal(t, "fairness_key", ve.Field)
	}

	// What a remote worker reports about an attempt: the limits remote workers cut their text to.
	for field, call := range map[string]func(text string) error{
		"error": func(text string) error {
			_, err := b.client.workerAPI.FailJob(t.Context(), res.Job.ID, 1, workerapi.FailParams{Error: text})
			return err
		},
		"reason": func(text string) error { return b.client.workerAPI.ReleaseJob(t.Context(), res.Job.ID, 1, text) },
		"message": func(text string) error {
			return b.client.workerAPI.ReportJobProgress(t.Context(), res.Job.ID, 1, 5, text)
		},
	} {
		limit := map[string]int{"error": MaxErrorBytes, "reason": MaxReasonBytes, "message": MaxProgressMessageBytes}[field]
		require.ErrorIs(t, call(strings.Repeat("x", limit)), ErrLeaseLost, "%s at its limit passes the check", field)
		require.ErrorAs(t, call(strings.Repeat("x", limit+1)), &ve, field)
		require.Equal(t, field, ve.Field)
	}
}

func TestGetWithoutAnIDIsInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	_, err := b.client.Get(t.Context(), "")
	require.EqualError(t, err, "invalid id: is required")
	require.False(t, errors.Is(err, ErrNotFound))
}

// A batch naming one idempotency key twice: the same payload is one job for both entries,
// another payload is refused naming the entry, before anything is stored.
func TestEnqueueManyRepeatingAKey(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	opts := &InsertOpts{IdempotencyKey: "order-1"}
	_, err := b.client.EnqueueMany(ctx, []EnqueueParams{
		{Args: sendEmail{To: "x"}}, {Args: sendEmail{To: "a"}, Opts: opts}, {Args: sendEmail{To: "b"}, Opts: opts},
	})
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "jobs[2].idempotency_key", ve.Field)
	require.Contains(t, ve.Reason, "jobs[1]")
	all, err := b.client.List(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, all.Jobs)

	res, err := b.client.EnqueueMany(ctx, []EnqueueParams{{Args: sendEmail{To: "a"}, Opts: opts}, {Args: sendEmail{To: "a"}, Opts: opts}})
	require.NoError(t, err)
	require.Equal(t, res[0].Job.ID, res[1].Job.ID)
	require.True(t, res[1].Existing)
}

// badMarshal is args whose MarshalJSON returns bytes that are not UTF-8 (json.Marshal keeps them).
type badMarshal struct{}

func (badMarshal) Kind() string                 { return "bad-marshal" }
func (badMarshal) MarshalJSON() ([]byte, error) { return []byte("\"\xff\""), nil }

func TestArgsFromAMarshalerAreChecked(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	_, err := b.client.Enqueue(t.Context(), badMarshal{}, nil)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, "args", ve.Field)
}

// A handler's error text is Hopper's own to record: nobody could be told it was refused, so it
// is made valid (U+FFFD) and the job moves on, on every store.
func TestHandlerErrorTextIsStoredAsValidText(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		require.NoError(t, ReportProgress(ctx, 50, "half \xff"))
		return NoRetry(errors.New("upstream said \xff\x00"))
	})
	b := setup(t, ws, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{To: "a"}, nil)
	require.NoError(t, err)
	b.clock.Advance(time.Second)
	job := b.waitFor(t, res.Job.ID, StateFailed)
	require.Equal(t, "not retryable: upstream said \uFFFD\uFFFD", job.LastError)
	require.Equal(t, "half \uFFFD", job.ProgressMessage)
	attempts, err := b.client.Attempts(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, job.LastError, attempts[0].Error)
}

// The audit trail records who made a change: CancelBy and ResumeBy take only known actors.
func TestCancelAndResumeTakeOnlyKnownActors(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	res, err := b.client.Enqueue(t.Context(), sendEmail{To: "a"}, nil)
	require.NoError(t, err)
	for _, call := range []func(Actor) error{
		func(a Actor) error { _, err := b.client.CancelBy(t.Context(), res.Job.ID, a, "r"); return err },
		func(a Actor) error { _, err := b.client.ResumeBy(t.Context(), res.Job.ID, nil, a, "r"); return err },
	} {
		var ve *ValidationError
		require.ErrorAs(t, call("robot"), &ve)
		require.Equal(t, "actor", ve.Field)
		require.ErrorAs(t, call(""), &ve)
	}
	_, err = b.client.CancelBy(t.Context(), res.Job.ID, ActorOperator, "r")
	require.NoError(t, err)
}
