package apiview

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

var (
	at    = time.Date(2026, 11, 24, 6, 0, 0, 123456789, time.UTC)
	later = at.Add(90 * time.Minute)
)

// fullRow has every field the API's Job carries set, each to a value of its own.
func fullRow() *hoppertype.JobRow {
	return &hoppertype.JobRow{
		ID: "01a20c25-204c-75dd-9586-33351e006867", Kind: "k", Queue: "q", Priority: -5,
		Args: json.RawMessage(`{"a":1}`), Headers: map[string]string{"h": "v"}, State: hoppertype.StateRunning,
		Attempt: 2, MaxAttempts: 3, Token: 7, Rescues: 1, MaxRescues: -1,
		RunAt: at, Timeout: time.Minute, WorkerID: "w", LeaseExpiresAt: later, HeartbeatAt: at.Add(time.Second),
		ProgressPercent: 40, ProgressMessage: "m", Result: json.RawMessage(`"r"`), LastError: "e", LastErrorCode: "c",
		Checkpoint: json.RawMessage(`{"c":1}`), ResumeData: json.RawMessage(`[1]`),
		IdempotencyKey: "i", GroupKey: "g", MergeKey: "mk", FairnessKey: "f", OriginalID: "o", ReplayCount: 2, ReplayedBy: "api",
		HasChildren: true, WorkflowID: "wf", Step: "fetch",
		CreatedAt: at.Add(-time.Hour), StartedAt: at.Add(2 * time.Second), FinishedAt: at.Add(3 * time.Second),
		UpdatedAt: at.Add(4 * time.Second), ExpiresAt: at.Add(24 * time.Hour), DeadlineAt: at.Add(48 * time.Hour),
	}
}

// requireAllSet fails when a field of v (a struct) other than those named in unset is zero: a
// field the API carries that a conversion forgets.
func requireAllSet(t *testing.T, v any, unset ...string) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		name := rv.Type().Field(i).Name
		if !slices.Contains(unset, name) {
			require.False(t, rv.Field(i).IsZero(), "%s.%s is zero", rv.Type().Name(), name)
		}
	}
}

// A job read back from the API is the job shown, for every field the API carries: a field
// added to the message and to Job but not to FromJob would be lost by every client.
func TestJobRoundTrip(t *testing.T) {
	t.Parallel()
	row := fullRow()
	back := FromJob(Job(row, false))
	requireAllSet(t, *back, "RetryPolicy", "ResultTTL", "ScheduleID") // not carried by the API
	require.Equal(t, row, back)

	// Zero times and durations are not set on the wire, and read back as zero.
	bare := &hoppertype.JobRow{ID: "x", Kind: "k", Queue: "q", State: hoppertype.StateQueued}
	msg := Job(bare, false)
	require.Nil(t, msg.GetRunAt())
	require.Nil(t, msg.GetTimeout())
	require.Equal(t, bare, FromJob(msg))
	require.Nil(t, FromJob(nil))
}

// A workflow read back from the API is the workflow shown.
func TestWorkflowRoundTrip(t *testing.T) {
	t.Parallel()
	w := &hoppertype.WorkflowRow{ID: "wf", Name: "nightly", State: hoppertype.WorkflowFailed, Steps: 3,
		StepStates: map[hoppertype.JobState]int{hoppertype.StateFailed: 1, hoppertype.StateCanceled: 2},
		CreatedAt:  time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), StartedAt: time.Date(2026, 3, 1, 12, 0, 1, 0, time.UTC),
		FinishedAt: time.Date(2026, 3, 1, 12, 0, 2, 0, time.UTC)}
	requireAllSet(t, *w)
	require.Equal(t, w, FromWorkflow(Workflow(w)))
	require.Nil(t, FromWorkflow(nil))
}

func TestActivatedJobRoundTrip(t *testing.T) {
	t.Parallel()
	row := fullRow()
	row.RetryPolicy = &hoppertype.RetryPolicy{Base: time.Second, Multiplier: 2, Cap: time.Minute, Jitter: 0.1,
		RetryBusinessErrors: true}
	requireAllSet(t, *row.RetryPolicy) // a policy field the conversions forget is lost
	msg := ActivatedJob(row, 5*time.Minute)
	require.Equal(t, 5*time.Minute, FromDuration(msg.GetDefaultTimeout()))
	back := FromActivatedJob(msg, "w")
	// What a worker is handed of the job: the rest stays with the server.
	want := &hoppertype.JobRow{ID: row.ID, Kind: row.Kind, Queue: row.Queue, Args: row.Args, Headers: row.Headers,
		State: hoppertype.StateRunning, Attempt: row.Attempt, MaxAttempts: row.MaxAttempts, Token: row.Token,
		WorkerID: "w", LeaseExpiresAt: row.LeaseExpiresAt, Timeout: row.Timeout, CreatedAt: row.CreatedAt,
		RetryPolicy: row.RetryPolicy, Checkpoint: row.Checkpoint, ResumeData: row.ResumeData}
	require.Equal(t, want, back)

	bare := FromActivatedJob(ActivatedJob(&hoppertype.JobRow{ID: "x", Args: json.RawMessage(`{}`)}, 0), "w")
	require.Nil(t, bare.RetryPolicy)
	require.Nil(t, bare.Checkpoint)
	require.Zero(t, bare.Timeout)
	require.True(t, bare.LeaseExpiresAt.IsZero())
}

func TestHistoryRoundTrip(t *testing.T) {
	t.Parallel()
	e := &hoppertype.Event{JobID: "j", Seq: 3, At: at, From: hoppertype.StateQueued, To: hoppertype.StateRunning,
		Actor: hoppertype.ActorWorker, Reason: "claimed"}
	requireAllSet(t, *e)
	require.Equal(t, e, FromEvent("j", Event(e)))
	first := &hoppertype.Event{JobID: "j", Seq: 1, At: at, To: hoppertype.StateQueued, Actor: hoppertype.ActorAPI}
	require.Equal(t, first, FromEvent("j", Event(first)))

	a := &hoppertype.AttemptRecord{JobID: "j", Token: 4, Attempt: 1, WorkerID: "w", StartedAt: at, EndedAt: later,
		Outcome: hoppertype.OutcomeError, Error: "boom", Stack: "main.go:1", ErrorCode: "c"}
	requireAllSet(t, *a)
	require.Equal(t, a, FromAttempt("j", Attempt(a)))
	running := &hoppertype.AttemptRecord{JobID: "j", Token: 5, Attempt: 2, WorkerID: "w", StartedAt: at}
	require.Equal(t, running, FromAttempt("j", Attempt(running)))
}

func TestScalars(t *testing.T) {
	t.Parallel()
	require.Nil(t, Time(time.Time{}))
	require.True(t, FromTime(nil).IsZero())
	require.Equal(t, at, FromTime(Time(at)))
	// A time in another zone is the same instant, read back in UTC.
	paris := at.In(time.FixedZone("CET", 3600))
	require.True(t, paris.Equal(FromTime(Time(paris))))

	require.Nil(t, Duration(0))
	require.Zero(t, FromDuration(nil))
	require.Equal(t, -time.Second, FromDuration(Duration(-time.Second)))

	require.Nil(t, FromPayload(""))
	require.Equal(t, json.RawMessage(`null`), FromPayload("null"))

	require.Empty(t, Rate(hoppertype.Rate{}))
	require.Equal(t, hoppertype.Rate{}, FromRate(""))
	r := hoppertype.Rate{Limit: 100, Period: time.Second}
	require.Equal(t, r, FromRate(Rate(r)))
	require.Equal(t, hoppertype.Rate{}, FromRate("not a rate"), "a newer server's rate reads as none")
	require.Nil(t, OptionalRate(nil))
	require.Equal(t, "0", *OptionalRate(&hoppertype.Rate{}))
	back, err := FromOptionalRate(OptionalRate(&r))
	require.NoError(t, err)
	require.Equal(t, r, *back)
	none, err := FromOptionalRate(nil)
	require.NoError(t, err)
	require.Nil(t, none)
	_, err = FromOptionalRate(proto.String("0/1s"))
	requireField(t, err, "rate")

	require.Nil(t, RetryPolicy(nil))
	require.Nil(t, FromRetryPolicy(nil))
	require.Equal(t, map[hoppertype.JobState]int64{}, FromCounts(nil))
}

func requireField(t *testing.T, err error, field string) {
	t.Helper()
	var ve *hoppertype.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, field, ve.Field)
}

// A job's parents read back from the API are the parents shown, every field of each, in order;
// an expired parent keeps its id and outcome alone.
func TestParentResultsRoundTrip(t *testing.T) {
	t.Parallel()
	full := &hoppertype.ParentResult{ID: "p1", Kind: "k", Step: "fan-in", Outcome: hoppertype.ParentFailed, State: hoppertype.StateFailed,
		Result: json.RawMessage(`{"n":1}`), Error: "boom", FinishedAt: at, Expired: true}
	requireAllSet(t, *full)
	gone := &hoppertype.ParentResult{ID: "p2", Outcome: hoppertype.ParentCompleted, Expired: true}
	ps := []*hoppertype.ParentResult{full, gone}
	back := FromParentResults(ParentResults(ps))
	require.Equal(t, ps, back)
	require.Empty(t, FromParentResults(ParentResults(nil)))
}
