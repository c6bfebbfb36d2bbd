package server_test

import (
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// A disabled kind's jobs are handed to no remote worker, stay queued and show as disabled in
// the queue listing; its cap is kept; enabling it hands them out again.
func TestKindServiceDisablesAKindForRemoteWorkers(t *testing.T) {
	e := start(t)
	kinds := e.kinds
	ctx := t.Context()
	pdf := e.enqueue(t, "pdf", `{}`)
	_, err := kinds.Disable(ctx, &hopperv1.KindServiceDisableRequest{Kind: "pdf"})
	require.NoError(t, err)
	mail := e.enqueue(t, "mail", `{}`)
	got := e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 10})
	require.Len(t, got, 1)
	require.Equal(t, mail.GetId(), got[0].GetId())
	require.Equal(t, "queued", e.get(t, pdf.GetId()).GetState())

	qs, err := e.queues.List(ctx, &hopperv1.QueueServiceListRequest{})
	require.NoError(t, err)
	require.Equal(t, int64(1), qs.GetQueues()[0].GetDisabled())
	_, err = kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf", MaxRunning: proto.Int32(3), Rate: proto.String("5000/1h")})
	require.NoError(t, err)
	list, err := kinds.List(ctx, &hopperv1.KindServiceListRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetKinds(), 2)
	require.Equal(t, "mail", list.GetKinds()[0].GetName())
	require.Equal(t, map[string]int64{"running": 1}, list.GetKinds()[0].GetCounts())
	off := list.GetKinds()[1]
	require.Equal(t, "pdf", off.GetName())
	require.True(t, off.GetDisabled())
	require.Equal(t, int32(3), off.GetMaxRunning())
	require.Equal(t, "5000/1h", off.GetRate())
	require.Equal(t, map[string]int64{"queued": 1}, off.GetCounts())

	_, err = kinds.Enable(ctx, &hopperv1.KindServiceEnableRequest{Kind: "pdf"})
	require.NoError(t, err)
	got = e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 10})
	require.Len(t, got, 1)
	require.Equal(t, pdf.GetId(), got[0].GetId())
	_, err = kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf"})
	require.NoError(t, err, "a request with neither field removes the cap, as max_running 0 did before it was optional")
	list, err = kinds.List(ctx, &hopperv1.KindServiceListRequest{})
	require.NoError(t, err)
	require.Zero(t, list.GetKinds()[1].GetMaxRunning())
	require.Equal(t, "5000/1h", list.GetKinds()[1].GetRate(), "an unset rate is left as it is")
	require.False(t, list.GetKinds()[1].GetDisabled())
	_, err = kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf", Rate: proto.String("0")})
	require.NoError(t, err, "0 removes the rate limit")
	list, err = kinds.List(ctx, &hopperv1.KindServiceListRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetKinds(), 2, "pdf has jobs: it is listed without settings")
	require.Empty(t, list.GetKinds()[1].GetRate())
}

// A long poll waiting for a disabled kind's job gets it as soon as the kind is enabled: the
// wake-up is pushed, not polled. The server runs on a fake clock that stands still, so neither
// the store poll (every second) nor the poll's timeout can have ended the wait.
func TestEnablingAKindWakesALongPoll(t *testing.T) {
	e, clk := startOnClock(t)
	kinds := e.kinds
	_, err := kinds.Disable(t.Context(), &hopperv1.KindServiceDisableRequest{Kind: "pdf"})
	require.NoError(t, err)
	job := e.enqueue(t, "pdf", `{}`)
	type result struct {
		jobs []*hopperv1.ActivatedJob
		err  error
	}
	done := make(chan result, 1)
	go func() {
		res, err := e.workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "poller",
			Kinds: []string{"pdf"}, RequestTimeout: durationpb.New(30 * time.Second)})
		done <- result{res.GetJobs(), err}
	}()
	waitOnClock(t, clk, 1) // the poll found nothing and waits
	_, err = kinds.Enable(t.Context(), &hopperv1.KindServiceEnableRequest{Kind: "pdf"})
	require.NoError(t, err)
	r := recv(t, done)
	require.NoError(t, r.err)
	require.Len(t, r.jobs, 1, "woken by the enable, the clock standing still")
	require.Equal(t, job.GetId(), r.jobs[0].GetId())
}

func TestKindServiceNamesTheBadField(t *testing.T) {
	e := start(t)
	kinds := e.kinds
	ctx := t.Context()
	for _, tc := range []struct {
		call  func() error
		field string
	}{
		{func() error { _, err := kinds.Disable(ctx, &hopperv1.KindServiceDisableRequest{}); return err }, "kind"},
		{func() error {
			_, err := kinds.Disable(ctx, &hopperv1.KindServiceDisableRequest{Kind: "two words"})
			return err
		}, "kind"},
		{func() error { _, err := kinds.Enable(ctx, &hopperv1.KindServiceEnableRequest{}); return err }, "kind"},
		{func() error {
			_, err := kinds.Set(ctx, &hopperv1.KindServiceSetRequest{MaxRunning: proto.Int32(2)})
			return err
		}, "kind"},
		{func() error {
			_, err := kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf", MaxRunning: proto.Int32(-1)})
			return err
		}, "max_running"},
		{func() error {
			_, err := kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf", MaxRunning: proto.Int32(2), Rate: proto.String("0/1s")})
			return err
		}, "rate"},
		{func() error {
			_, err := kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf", Rate: proto.String("abc")})
			return err
		}, "rate"},
		{func() error {
			_, err := kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf", CapPerKey: proto.Int32(-1)})
			return err
		}, "cap_per_key"},
		{func() error {
			_, err := kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf", RatePerKey: proto.String("0/1s")})
			return err
		}, "rate_per_key"},
	} {
		err := tc.call()
		requireCode(t, connect.CodeInvalidArgument, err)
		require.Contains(t, err.Error(), "invalid "+tc.field+":")
	}
	_, err := kinds.Enable(ctx, &hopperv1.KindServiceEnableRequest{Kind: "never-seen"})
	require.NoError(t, err, "enabling an unknown kind changes nothing")
	list, err := kinds.List(ctx, &hopperv1.KindServiceListRequest{})
	require.NoError(t, err)
	require.Empty(t, list.GetKinds())

	_, err = kinds.Set(ctx, &hopperv1.KindServiceSetRequest{Kind: "pdf", CapPerKey: proto.Int32(2), RatePerKey: proto.String("10/1s")})
	require.NoError(t, err)
	list, err = kinds.List(ctx, &hopperv1.KindServiceListRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetKinds(), 1)
	require.Equal(t, int32(2), list.GetKinds()[0].GetCapPerKey())
	require.Equal(t, "10/1s", list.GetKinds()[0].GetRatePerKey())
}
