package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/remote"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

var schedStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// schedEnv is a real server over HTTP on a fresh SQLite store whose client (the leader) runs
// on a fake clock, with API keys required.
type schedEnv struct {
	url    string
	client *hopper.Client
	clock  *clock.Fake
	keys   *sqlitestore.Store
}

func startSchedules(t *testing.T, declared ...hopper.Schedule) *schedEnv {
	t.Helper()
	clk := clock.NewFake(schedStart)
	s := serve(t, clk, func(c *hopper.Config) { c.WorkerID, c.Schedules = "sched-test", declared },
		func(c *server.Config, st *sqlitestore.Store) { c.Auth = &server.KeyAuth{Keys: st} })
	require.Eventually(t, s.client.IsLeader, 5*time.Second, time.Millisecond)
	return &schedEnv{url: s.ts.URL, client: s.client, clock: clk, keys: s.store}
}

// as returns a ScheduleService client that presents a new key with scopes.
func (e *schedEnv) as(t *testing.T, scopes ...apikey.Scope) hopperv1connect.ScheduleServiceClient {
	t.Helper()
	plain, k, err := apikey.New("key-"+strings.Join(scopesText(scopes), "-"), scopes)
	require.NoError(t, err)
	require.NoError(t, e.keys.KeyCreate(t.Context(), k))
	cc := connect.NewClient(connecthttp.NewTransport(http.DefaultClient, e.url), remote.Bearer(plain))
	return hopperv1connect.NewScheduleServiceClient(cc)
}

func scopesText(ss []apikey.Scope) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}

func TestScheduleServiceAddListPauseResumeRemove(t *testing.T) {
	t.Parallel()
	e := startSchedules(t)
	admin := e.as(t, apikey.ScopeAdmin)
	add, err := admin.Add(t.Context(), &hopperv1.ScheduleServiceAddRequest{Schedule: &hopperv1.Schedule{
		Name: "nightly", Cron: "30 2 * * *", Tz: "America/New_York", Kind: "report", Args: `{"list":"ops"}`,
		Queue: "reports", Priority: 3, MaxAttempts: 4, Timeout: durationpb.New(time.Minute),
		Headers: map[string]string{"team": "ops"}, CatchUp: "last", Overlap: "allow", Jitter: durationpb.New(time.Minute),
	}})
	require.NoError(t, err)
	s := add.GetSchedule()
	require.Equal(t, "nightly", s.GetName())
	require.Equal(t, "30 2 * * *", s.GetCron())
	require.Equal(t, "America/New_York", s.GetTz())
	require.JSONEq(t, `{"list":"ops"}`, s.GetArgs())
	require.Equal(t, "reports", s.GetQueue())
	require.EqualValues(t, 3, s.GetPriority())
	require.EqualValues(t, 4, s.GetMaxAttempts())
	require.Equal(t, time.Minute, s.GetTimeout().AsDuration())
	require.Equal(t, map[string]string{"team": "ops"}, s.GetHeaders())
	require.Equal(t, "last", s.GetCatchUp())
	require.Equal(t, "allow", s.GetOverlap())
	require.Equal(t, time.Minute, s.GetJitter().AsDuration())
	require.Equal(t, "api", s.GetSource())
	require.Equal(t, "2026-03-02T07:30:00Z", s.GetNextFireAt().AsTime().Format(time.RFC3339), "02:30 EST")
	require.Nil(t, s.GetLastFireAt(), "never fired: no last fire (not the time it was saved)")
	require.Nil(t, s.GetLastManualFireAt())

	_, err = admin.Add(t.Context(), &hopperv1.ScheduleServiceAddRequest{Schedule: &hopperv1.Schedule{
		Name: "cleanup", FixedDelay: durationpb.New(5 * time.Minute), Kind: "cleanup"}})
	require.NoError(t, err)
	_, err = admin.Add(t.Context(), &hopperv1.ScheduleServiceAddRequest{Schedule: &hopperv1.Schedule{
		Name: "poll", Every: durationpb.New(90 * time.Second), Kind: "poll"}})
	require.NoError(t, err)

	reader := e.as(t, apikey.ScopeRead)
	list, err := reader.List(t.Context(), &hopperv1.ScheduleServiceListRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetSchedules(), 3)
	byName := map[string]*hopperv1.Schedule{}
	for _, s := range list.GetSchedules() {
		byName[s.GetName()] = s
	}
	require.Equal(t, 5*time.Minute, byName["cleanup"].GetFixedDelay().AsDuration())
	require.Equal(t, schedStart.Add(5*time.Minute), byName["cleanup"].GetNextFireAt().AsTime())
	require.Equal(t, 90*time.Second, byName["poll"].GetEvery().AsDuration())
	require.Empty(t, byName["poll"].GetCron())
	require.Equal(t, "{}", byName["poll"].GetArgs())

	_, err = admin.Pause(t.Context(), &hopperv1.ScheduleServicePauseRequest{Name: "poll"})
	require.NoError(t, err)
	info, err := e.client.GetSchedule(t.Context(), "poll")
	require.NoError(t, err)
	require.True(t, info.Paused)
	_, err = admin.Resume(t.Context(), &hopperv1.ScheduleServiceResumeRequest{Name: "poll"})
	require.NoError(t, err)
	info, err = e.client.GetSchedule(t.Context(), "poll")
	require.NoError(t, err)
	require.False(t, info.Paused)

	_, err = admin.Remove(t.Context(), &hopperv1.ScheduleServiceRemoveRequest{Name: "poll"})
	require.NoError(t, err)
	_, err = admin.Remove(t.Context(), &hopperv1.ScheduleServiceRemoveRequest{Name: "poll"})
	requireCode(t, connect.CodeNotFound, err)
	_, err = admin.Pause(t.Context(), &hopperv1.ScheduleServicePauseRequest{Name: "poll"})
	requireCode(t, connect.CodeNotFound, err)
	list, err = reader.List(t.Context(), &hopperv1.ScheduleServiceListRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetSchedules(), 2)
}

func TestScheduleServiceErrorsAndScopes(t *testing.T) {
	t.Parallel()
	e := startSchedules(t, hopper.Schedule{Name: "declared", Cron: "@hourly", Kind: "k"})
	admin, reader := e.as(t, apikey.ScopeAdmin), e.as(t, apikey.ScopeRead)
	worker := e.as(t, apikey.ScopeWork, apikey.ScopeEnqueue)

	for _, bad := range []*hopperv1.Schedule{
		nil,
		{Name: "x", Kind: "k"},
		{Name: "x", Cron: "61 * * * *", Kind: "k"},
		{Name: "x", Cron: "@daily", Tz: "Mars/Base", Kind: "k"},
		{Name: "x", Cron: "@daily", Kind: "k", Args: "{"},
		{Name: "x", Cron: "@daily", Kind: "k", CatchUp: "most"},
		{Name: "x", FixedDelay: durationpb.New(-time.Second), Kind: "k"},
	} {
		_, err := admin.Add(t.Context(), &hopperv1.ScheduleServiceAddRequest{Schedule: bad})
		requireCode(t, connect.CodeInvalidArgument, err)
	}
	_, err := admin.Add(t.Context(), &hopperv1.ScheduleServiceAddRequest{Schedule: &hopperv1.Schedule{
		Name: "declared", Cron: "@daily", Kind: "k"}})
	requireCode(t, connect.CodeAlreadyExists, err)
	require.Contains(t, err.Error(), "declared in code")
	_, err = admin.Remove(t.Context(), &hopperv1.ScheduleServiceRemoveRequest{Name: "declared"})
	requireCode(t, connect.CodeAlreadyExists, err)

	list, err := reader.List(t.Context(), &hopperv1.ScheduleServiceListRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetSchedules(), 1)
	require.Equal(t, "code", list.GetSchedules()[0].GetSource())

	ok := &hopperv1.Schedule{Name: "x", Cron: "@daily", Kind: "k"}
	_, err = reader.Add(t.Context(), &hopperv1.ScheduleServiceAddRequest{Schedule: ok})
	requireCode(t, connect.CodePermissionDenied, err)
	_, err = worker.Add(t.Context(), &hopperv1.ScheduleServiceAddRequest{Schedule: ok})
	requireCode(t, connect.CodePermissionDenied, err)
	_, err = reader.Pause(t.Context(), &hopperv1.ScheduleServicePauseRequest{Name: "declared"})
	requireCode(t, connect.CodePermissionDenied, err)
	_, err = reader.Resume(t.Context(), &hopperv1.ScheduleServiceResumeRequest{Name: "declared"})
	requireCode(t, connect.CodePermissionDenied, err)
	_, err = reader.Remove(t.Context(), &hopperv1.ScheduleServiceRemoveRequest{Name: "declared"})
	requireCode(t, connect.CodePermissionDenied, err)
	_, err = worker.List(t.Context(), &hopperv1.ScheduleServiceListRequest{})
	requireCode(t, connect.CodePermissionDenied, err)
}

// Run enqueues the schedule's job now, recorded as an operator's run by the caller's key, and
// the listing shows it as the last manual fire; it needs the admin scope.
func TestScheduleServiceRun(t *testing.T) {
	t.Parallel()
	e := startSchedules(t)
	admin, reader := e.as(t, apikey.ScopeAdmin), e.as(t, apikey.ScopeRead)
	_, err := admin.Add(t.Context(), &hopperv1.ScheduleServiceAddRequest{Schedule: &hopperv1.Schedule{
		Name: "nightly", Cron: "30 2 * * *", Kind: "report", Args: `{"n":1}`, Queue: "reports"}})
	require.NoError(t, err)
	_, err = reader.Run(t.Context(), &hopperv1.ScheduleServiceRunRequest{Name: "nightly"})
	requireCode(t, connect.CodePermissionDenied, err)
	_, err = admin.Run(t.Context(), &hopperv1.ScheduleServiceRunRequest{Name: "nope"})
	requireCode(t, connect.CodeNotFound, err)
	_, err = admin.Run(t.Context(), &hopperv1.ScheduleServiceRunRequest{Name: ""})
	requireCode(t, connect.CodeInvalidArgument, err)

	res, err := admin.Run(t.Context(), &hopperv1.ScheduleServiceRunRequest{Name: "nightly"})
	require.NoError(t, err)
	job := res.GetJob()
	require.Equal(t, "report", job.GetKind())
	require.Equal(t, "reports", job.GetQueue())
	require.Equal(t, "true", job.GetHeaders()[hopper.ManualFireHeader])
	events, err := e.client.Events(t.Context(), job.GetId())
	require.NoError(t, err)
	require.Equal(t, hopper.ActorOperator, events[0].Actor)
	require.Equal(t, "run now by key-admin", events[0].Reason)

	list, err := reader.List(t.Context(), &hopperv1.ScheduleServiceListRequest{})
	require.NoError(t, err)
	s := list.GetSchedules()[0]
	require.Equal(t, job.GetId(), s.GetLastManualJobId())
	require.Equal(t, schedStart, s.GetLastManualFireAt().AsTime())
	require.Nil(t, s.GetLastFireAt(), "a manual run is no fire")
	require.Empty(t, s.GetLastJobId())
}

// A schedule added through the API is fired by the server's leader, once per fire time, and
// the job is visible through JobService.
func TestScheduleServiceScheduleFires(t *testing.T) {
	t.Parallel()
	e := startSchedules(t)
	admin := e.as(t, apikey.ScopeAdmin)
	_, err := admin.Add(t.Context(), &hopperv1.ScheduleServiceAddRequest{Schedule: &hopperv1.Schedule{
		Name: "minutely", Cron: "* * * * *", Kind: "report", Args: `{"n":1}`, Overlap: "allow"}})
	require.NoError(t, err)
	e.clock.Advance(time.Minute)
	var s *hopperv1.Schedule
	require.Eventually(t, func() bool {
		list, err := admin.List(t.Context(), &hopperv1.ScheduleServiceListRequest{})
		require.NoError(t, err)
		s = list.GetSchedules()[0]
		if s.GetLastJobId() != "" {
			return true
		}
		e.clock.Advance(50 * time.Millisecond)
		return false
	}, 10*time.Second, time.Millisecond)
	require.Equal(t, schedStart.Add(time.Minute), s.GetLastFireAt().AsTime())
	require.Equal(t, schedStart.Add(2*time.Minute), s.GetNextFireAt().AsTime())

	job, err := e.client.Get(t.Context(), s.GetLastJobId())
	require.NoError(t, err)
	require.Equal(t, "report", job.Kind)
	require.Equal(t, "minutely", job.ScheduleID)
	require.Equal(t, "2026-03-01T12:01:00Z", job.Headers[hopper.FireTimeHeader])
}
