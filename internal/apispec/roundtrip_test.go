package apispec

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
)

var (
	at    = time.Date(2026, 11, 24, 6, 0, 0, 123456789, time.UTC)
	later = at.Add(90 * time.Minute)
)

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

// Options sent to a server are the options the server enqueues with.
func TestJobSpecRoundTrip(t *testing.T) {
	t.Parallel()
	opts := &hopper.InsertOpts{Queue: "q", Priority: 3, RunAt: at, Delay: time.Minute, MaxAttempts: 4, MaxRescues: -1,
		Timeout: time.Hour, RetryPolicy: &hopper.RetryPolicy{Base: time.Second, Multiplier: 1.5, Cap: time.Minute, Jitter: -1,
			RetryBusinessErrors: true},
		Headers: map[string]string{"h": "v"}, IdempotencyKey: "i", IdempotencyRetention: 48 * time.Hour,
		GroupKey: "g", MergeKey: "m", Merge: hopper.MergeAppend, FairnessKey: "f",
		After: []string{"p1", "p2"}, OnParentFailure: hopper.ParentSkip}
	requireAllSet(t, *opts, "ResultTTL")
	spec, err := JobSpec("k", json.RawMessage(`{"a":1}`), opts)
	require.NoError(t, err)
	p, err := FromJobSpec(spec)
	require.NoError(t, err)
	require.Equal(t, hopper.RawArgs{KindName: "k", JSON: json.RawMessage(`{"a":1}`)}, p.Args)
	require.Equal(t, opts, p.Opts)

	// No options: nothing set, and the server's defaults; no args: {}.
	spec, err = JobSpec("k", nil, nil)
	require.NoError(t, err)
	require.True(t, proto.Equal(&hopperv1.JobSpec{Kind: "k"}, spec))
	p, err = FromJobSpec(spec)
	require.NoError(t, err)
	require.Equal(t, hopper.RawArgs{KindName: "k", JSON: json.RawMessage(`{}`)}, p.Args)
	require.Equal(t, &hopper.InsertOpts{}, p.Opts)

	_, err = FromJobSpec(nil)
	requireField(t, err, "job")
	_, err = JobSpec("k", nil, &hopper.InsertOpts{ResultTTL: time.Hour})
	requireField(t, err, "result_ttl")
}

// A number out of int32's range is held at its bound, so that the server refuses it by
// name rather than take a number that wrapped around.
func TestNumbersOutOfRangeAreHeldAtTheirBound(t *testing.T) {
	t.Parallel()
	spec, err := JobSpec("k", nil, &hopper.InsertOpts{Priority: 1 << 40, MaxAttempts: -(1 << 40)})
	require.NoError(t, err)
	require.Equal(t, int32(1<<31-1), spec.GetPriority())
	require.Equal(t, int32(-1<<31), spec.GetMaxAttempts())
	n := 1<<32 + 5
	require.Equal(t, int32(1<<31-1), *apiview.OptionalInt(&n))
	require.Nil(t, apiview.OptionalInt(nil))
}

func requireField(t *testing.T, err error, field string) {
	t.Helper()
	var ve *hopper.ValidationError
	require.ErrorAs(t, err, &ve)
	require.Equal(t, field, ve.Field)
}

func TestListRequestRoundTrip(t *testing.T) {
	t.Parallel()
	p := &hopper.ListParams{States: []hopper.JobState{hopper.StateFailed, hopper.StateQueued}, Queues: []string{"q"},
		Kinds: []string{"k"}, CreatedAfter: at, CreatedBefore: later, Cursor: "c", Limit: 10, Ascending: true,
		ErrorCodes: []string{"card_declined"}, FairnessKeys: []string{"tenant-1"}}
	requireAllSet(t, *p, "ArgsContains")
	req, err := ListRequest(p)
	require.NoError(t, err)
	require.Equal(t, p, FromListRequest(req))

	req, err = ListRequest(nil)
	require.NoError(t, err)
	require.Equal(t, &hopper.ListParams{}, FromListRequest(req))
	_, err = ListRequest(&hopper.ListParams{ArgsContains: "x"})
	requireField(t, err, "args_contains")
}

func TestQueueAndKindRoundTrip(t *testing.T) {
	t.Parallel()
	q := &hopper.QueueInfo{Name: "q", Paused: true, Weight: 3, MaxRunning: 10, Rate: hopper.Rate{Limit: 100, Period: time.Second},
		Counts: map[hopper.JobState]int64{hopper.StateQueued: 4, hopper.StateFailed: 1}, Computing: 3, AwaitingCompute: 2,
		HeldByGovernor: true, Disabled: 1, CapPerKey: 2, RatePerKey: hopper.Rate{Limit: 10, Period: time.Second},
		KeyWeights: map[string]int{"customer-42": 3}}
	requireAllSet(t, *q)
	require.Equal(t, q, FromQueue(Queue(q)))
	empty := &hopper.QueueInfo{Name: "e", Counts: map[hopper.JobState]int64{}}
	require.Equal(t, empty, FromQueue(Queue(empty)))

	k := &hopper.KindInfo{Name: "k", Disabled: true, MaxRunning: 2, Rate: hopper.Rate{Limit: 5, Period: time.Minute},
		Compaction: hopper.Compaction{Over: 10, Merge: hopper.MergeAppend}, Counts: map[hopper.JobState]int64{hopper.StateRunning: 2},
		CapPerKey: 1, RatePerKey: hopper.Rate{Limit: 3, Period: time.Hour}}
	requireAllSet(t, *k)
	require.Equal(t, k, FromKind(Kind(k)))
}

func TestCompactRoundTrip(t *testing.T) {
	t.Parallel()
	opts := &hopper.CompactOpts{GroupKey: "g", Over: 3, Merge: hopper.MergeReplace}
	requireAllSet(t, *opts)
	kind, got := FromCompactRequest(CompactRequest("k", opts))
	require.Equal(t, "k", kind)
	require.Equal(t, opts, got)
	res := &hopper.CompactResult{Groups: 1, Jobs: 2,
		Compacted: []*hopper.CompactedGroup{{GroupKey: "g", NewJobID: "n", Replaced: []string{"a", "b"}}},
		Refused:   []*hopper.RefusedGroup{{GroupKey: "h", JobID: "c", Reason: "not a list"}}}
	requireAllSet(t, *res)
	requireAllSet(t, *res.Compacted[0])
	requireAllSet(t, *res.Refused[0])
	require.Equal(t, res, FromCompactResponse(CompactResponse(res)))
}

func TestFleetRoundTrip(t *testing.T) {
	t.Parallel()
	n := &hoppertype.Node{ID: "n", Host: "h", PID: 42, StartedAt: at, HeartbeatAt: later, Holding: true, Idle: true}
	requireAllSet(t, *n, "Queues", "HeldQueues") // not carried by the API
	require.Equal(t, n, FromNode(Node(n, true)))
	require.True(t, Node(n, true).GetLeader())

	w := &hoppertype.WorkerInfo{Name: "w", Queue: "q", Kinds: []string{"k"}, LastSeenAt: at, OpenStreams: 1,
		WaitingPolls: 2, Activated: 30, Held: true, BatchKinds: []string{"k"}}
	requireAllSet(t, *w)
	require.Equal(t, w, FromWorker(Worker(w)))

	s := &hoppertype.StreamInfo{ID: "s", Worker: "w", Queues: []string{"a", "b"}, Kinds: []string{"k"}, Credit: 10,
		InFlight: 3, Pushed: 100, Completed: 90, Failed: 5, Released: 2, OpenedAt: at}
	requireAllSet(t, *s)
	msg := Stream(s)
	require.Equal(t, "a", msg.GetQueue())
	require.Equal(t, s, FromStream(msg))
	// A server that knows of one queue per stream sends only queue.
	require.Equal(t, []string{"a"}, FromStream(&hopperv1.Stream{Queue: "a"}).Queues)

	k := &hoppertype.APIKey{ID: "id", Name: "ops", Scopes: []string{"admin"}, CreatedAt: at, LastUsedAt: later,
		RevokedAt: later.Add(time.Hour)}
	requireAllSet(t, *k)
	require.Equal(t, k, FromAPIKey(APIKey(k)))
	live := &hoppertype.APIKey{ID: "id", Name: "ops", Scopes: []string{"read"}, CreatedAt: at}
	require.Equal(t, live, FromAPIKey(APIKey(live)))
	require.Nil(t, FromAPIKey(nil))

	limits := hoppertype.InputLimits{MaxIDLen: 1, MaxKindLen: 2, MaxQueueLen: 3, MaxKeyLen: 4, MaxNameLen: 5,
		MaxErrorCodeLen: 6, MaxReasonBytes: 7, MaxProgressMessageBytes: 8, MaxErrorBytes: 9, MaxArgsBytes: 10,
		MaxHeaderBytes: 11, MaxPriority: 12, MaxAttempts: 13, MaxRescues: 14, MaxCap: 15, MaxFilterCodes: 16,
		MaxRunAtPast: 17 * time.Second, MaxRunAtFuture: 18 * time.Second, MaxTimeout: 19 * time.Second,
		MaxRetention: 20 * time.Second, MaxResultTTL: 21 * time.Second, MaxActivateJobs: 22,
		MaxActivateWait: 23 * time.Second, MaxActivateQueues: 24, MaxStreamCredit: 25, MaxStreamKindCaps: 26,
		MaxParents: 27, MaxSpawn: 28, MaxWorkflowSteps: 29}
	requireAllSet(t, limits)
	si := &hoppertype.ServerInfo{Version: "v0.1.0", Commit: "0123abcd", CommitTime: at, Modified: true, GoVersion: "go1.26.8",
		Platform: "linux/amd64", Store: "postgres", SchemaVersion: 9, InputLimits: limits}
	requireAllSet(t, *si)
	require.Equal(t, si, FromServerInfo(ServerInfo(si)))
	require.Nil(t, FromServerInfo(nil))
}

func TestScheduleRoundTrip(t *testing.T) {
	t.Parallel()
	info := &hopper.ScheduleInfo{
		Schedule: hopper.Schedule{Name: "s", Cron: "*/5 * * * *", Every: time.Minute, FixedDelay: time.Hour, TZ: "Europe/Paris",
			Kind: "k", Args: json.RawMessage(`{"a":1}`), Queue: "q", Priority: 2, MaxAttempts: 3, Timeout: time.Minute,
			Headers: map[string]string{"h": "v"}, CatchUp: "all", Overlap: "allow", Jitter: time.Second, Paused: true,
			Workflow: &hopper.Workflow{Name: "w", Steps: []hopper.WorkflowStep{
				{Name: "a", Args: hopper.RawArgs{KindName: "k", JSON: json.RawMessage(`{"x":1}`)},
					Opts: &hopper.InsertOpts{Queue: "q", Delay: time.Minute, MaxAttempts: 3}},
				{Name: "b", Args: hopper.RawArgs{KindName: "k2", JSON: json.RawMessage(`[]`)}, After: []string{"a"},
					OnParentFailure: hopper.ParentRun, Opts: &hopper.InsertOpts{Queue: "q"}},
			}}},
		Source: hopper.ScheduleSourceAPI, LastFireAt: at, NextFireAt: later, LastJobID: "j", CreatedAt: at, UpdatedAt: later,
		LastManualFireAt: later, LastManualJobID: "m", LastWorkflowID: "w1",
	}
	requireAllSet(t, info.Schedule)
	requireAllSet(t, *info)
	require.Equal(t, info, FromSchedule(Schedule(info)))

	// A schedule to add: its own fields only; no args send none.
	spec, err := ScheduleSpec(info.Schedule)
	require.NoError(t, err)
	require.Equal(t, info.Schedule, FromSchedule(spec).Schedule)
	spec, err = ScheduleSpec(hopper.Schedule{Name: "s", Every: time.Minute, Kind: "k"})
	require.NoError(t, err)
	require.Empty(t, spec.GetArgs())
	require.Nil(t, FromSchedule(spec).Args) // a nil interface, so that the client's default applies

	// Args of a Go type are encoded, and give the kind.
	spec, err = ScheduleSpec(hopper.Schedule{Name: "s", Every: time.Minute, Args: hopper.RawArgs{KindName: "raw", JSON: json.RawMessage(`[1]`)}})
	require.NoError(t, err)
	require.Equal(t, "raw", spec.GetKind())
	require.Equal(t, `[1]`, spec.GetArgs())
	_, err = ScheduleSpec(hopper.Schedule{Name: "s", Args: func() {}})
	requireField(t, err, "args")
}

func TestDeadLetterRoundTrip(t *testing.T) {
	t.Parallel()
	p := &hopper.DeadLetterParams{DeadLetterFilter: hopper.DeadLetterFilter{Queues: []string{"q"}, Kinds: []string{"k"},
		Since: at, Until: later}, IncludeReplayed: true, Cursor: "c", Limit: 5, ErrorCodes: []string{"card_declined"}}
	requireAllSet(t, p.DeadLetterFilter)
	requireAllSet(t, *p)
	require.Equal(t, p, FromDeadLetterListRequest(DeadLetterListRequest(p)))
	require.Equal(t, &hopper.DeadLetterParams{}, FromDeadLetterListRequest(DeadLetterListRequest(nil)))
	require.Equal(t, hopper.DeadLetterFilter{}, FromDeadLetterFilter(nil))

	st := &hopper.DeadLetterStats{Count: 3, Oldest: at, Replayed: 2}
	requireAllSet(t, *st)
	msg := DeadLetterStats(st, later)
	require.Equal(t, 90*time.Minute, apiview.FromDuration(msg.GetOldestAge()))
	require.Equal(t, st, FromDeadLetterStats(msg))
	require.Positive(t, apiview.FromDuration(DeadLetterStats(st, at).GetOldestAge()), "set, however young")
	none := DeadLetterStats(&hopper.DeadLetterStats{}, later)
	require.Nil(t, none.GetOldestFailedAt())
	require.Nil(t, none.GetOldestAge())
	require.Equal(t, &hopper.DeadLetterStats{}, FromDeadLetterStats(none))

	// A page of dead letters: the replayed ones marked by id, the others not.
	marked := &hopper.DeadLetter{JobRow: &hopper.JobRow{ID: "a", Kind: "k", State: hopper.StateFailed}, Replays: 2,
		LastReplayID: "b", LastReplayedAt: at}
	requireAllSet(t, *marked)
	plain := &hopper.DeadLetter{JobRow: &hopper.JobRow{ID: "c", Kind: "k", State: hopper.StateFailed}}
	page := &hopper.DeadLetterPage{DeadLetters: []*hopper.DeadLetter{marked, plain}, NextCursor: "n"}
	replays := DeadLetterReplays(page.DeadLetters)
	require.Len(t, replays, 1)
	require.Equal(t, page, FromDeadLetterList(&hopperv1.DeadLetterServiceListResponse{
		Jobs:    []*hopperv1.Job{apiview.Job(marked.JobRow, false), apiview.Job(plain.JobRow, false)},
		Replays: replays, NextCursor: "n"}))
	require.NotNil(t, DeadLetterReplays(nil), "never nil: the CLI prints {} for none")

	r := &hopper.Replay{ID: 9, SourceJobID: "s", NewJobID: "n", OriginalID: "o", ReplayedBy: "ops", ReplayedAt: at, Reason: "why",
		Action: hopper.ActionRetry, Forced: true}
	requireAllSet(t, *r)
	require.Equal(t, r, FromReplayRecord(ReplayRecord(r)))

	rp := &hopper.ReplayListParams{SourceJobID: "s", OriginalID: "o", ReplayedBy: "ops", Since: at, Until: later, Cursor: "c", Limit: 7}
	requireAllSet(t, *rp)
	require.Equal(t, rp, FromListReplaysRequest(ListReplaysRequest(rp)))
	require.Equal(t, &hopper.ReplayListParams{}, FromListReplaysRequest(ListReplaysRequest(nil)))
}

// A retry in place sent to a server is the retry the server makes (who retried is the
// server's to say: By and Actor are not sent).
func TestRetryRoundTrip(t *testing.T) {
	t.Parallel()
	o := hopper.RetryOpts{Retries: 3, Args: json.RawMessage(`{"a":1}`), RunAt: at, Reason: "fixed", Again: true}
	requireAllSet(t, o, "By", "Actor")
	id, got := FromRetryRequest(RetryRequest("j", o))
	require.Equal(t, "j", id)
	require.Equal(t, o, got)
	_, none := FromRetryRequest(RetryRequest("j", hopper.RetryOpts{}))
	require.Equal(t, hopper.RetryOpts{}, none, "no args stay no args")

	f := hopper.DeadLetterFilter{Queues: []string{"q"}, Kinds: []string{"k"}, Since: at, Until: later}
	m := hopper.RetryManyOpts{Limit: 5, Retries: 2, Reason: "bulk"}
	requireAllSet(t, m, "By", "Actor")
	gotF, gotM := FromRetryManyRequest(RetryManyRequest(f, m))
	require.Equal(t, f, gotF)
	require.Equal(t, m, gotM)
}

// A workflow sent to a server is the workflow the server enqueues: each step's name, job,
// parents and policy.
func TestWorkflowRequestRoundTrip(t *testing.T) {
	t.Parallel()
	raw := func(args hopper.JobArgs, o *hopper.InsertOpts) (*hopperv1.JobSpec, error) {
		b, err := json.Marshal(args)
		require.NoError(t, err)
		opts := hopper.InsertOptsFor(args, o)
		return JobSpec(args.Kind(), b, &opts)
	}
	wf := hopper.Workflow{Name: "publish", Steps: []hopper.WorkflowStep{
		{Name: "fetch", Args: hopper.RawArgs{KindName: "fetch", JSON: json.RawMessage(`{"id":7}`)},
			Opts: &hopper.InsertOpts{Queue: "io", Priority: 2}},
		{Name: "publish", Args: hopper.RawArgs{KindName: "publish", JSON: json.RawMessage(`{}`)},
			After: []string{"fetch"}, OnParentFailure: hopper.ParentRun},
	}}
	req, err := WorkflowRequest(wf, raw)
	require.NoError(t, err)
	require.Equal(t, []string{"fetch"}, req.GetSteps()[1].GetJob().GetAfter())
	back, err := FromWorkflowRequest(req)
	require.NoError(t, err)
	require.Equal(t, "publish", back.Name)
	require.Len(t, back.Steps, 2)
	require.Equal(t, &hopper.InsertOpts{Queue: "io", Priority: 2}, back.Steps[0].Opts)
	require.Equal(t, wf.Steps[0].Args, back.Steps[0].Args)
	require.Equal(t, hopper.WorkflowStep{Name: "publish", Args: wf.Steps[1].Args, Opts: &hopper.InsertOpts{},
		After: []string{"fetch"}, OnParentFailure: hopper.ParentRun}, back.Steps[1])

	// Job ids in a step's options are refused, named as the Go API names them; a step
	// without a job, as the API does.
	wf.Steps[1].Opts = &hopper.InsertOpts{After: []string{"0190f0e4-0000-7000-8000-000000000000"}}
	_, err = WorkflowRequest(wf, raw)
	requireField(t, err, "steps[1].after")
	_, err = FromWorkflowRequest(&hopperv1.EnqueueWorkflowRequest{Steps: []*hopperv1.WorkflowStep{{Name: "a"}}})
	requireField(t, err, "steps[0].job")
}

// The API names a step's job options under its job; the Go API names them on the step.
func TestWorkflowFieldsBothWays(t *testing.T) {
	t.Parallel()
	for goName, apiName := range map[string]string{
		"name": "name", "steps": "steps", "steps[2].name": "steps[2].name", "steps[2].queue": "steps[2].job.queue",
		"steps[2].after[1]": "steps[2].job.after[1]", "steps[10].on_parent_failure": "steps[10].job.on_parent_failure",
		"steps[0].job": "steps[0].job",
	} {
		require.Equal(t, apiName, WorkflowField(goName), goName)
		if goName != "steps[0].job" {
			require.Equal(t, goName, FromWorkflowField(apiName), apiName)
		}
	}
	err := WorkflowError(&hopper.ValidationError{Field: "steps[1].after[0]", Reason: "r"})
	requireField(t, err, "steps[1].job.after[0]")
	requireField(t, FromWorkflowError(err), "steps[1].after[0]")
	plain := errors.New("x")
	require.Same(t, plain, WorkflowError(plain))
}

func TestWorkflowListRequestRoundTrip(t *testing.T) {
	t.Parallel()
	p := &hopper.WorkflowListParams{Name: "n", States: []hopper.WorkflowState{hopper.WorkflowFailed}, Cursor: "c",
		Limit: 7, Ascending: true}
	requireAllSet(t, *p)
	require.Equal(t, p, FromWorkflowListRequest(WorkflowListRequest(p)))
	require.Equal(t, &hopper.WorkflowListParams{}, FromWorkflowListRequest(WorkflowListRequest(nil)))
}
