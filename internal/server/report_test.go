package server_test

import (
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// A Report's items are each fenced by their own lease token and answered on their own: one
// refused item (a stale token, an unknown job, an invalid value) never fails the others.
func TestReportAnswersEachItemOnItsOwn(t *testing.T) {
	e := start(t)
	for range 5 {
		e.enqueue(t, "demo", `{}`)
	}
	jobs := e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 5})
	require.Len(t, jobs, 5)
	ok, failed, stale, invalid, renewed := jobs[0], jobs[1], jobs[2], jobs[3], jobs[4]
	complete := func(j *hopperv1.ActivatedJob, token int64) *hopperv1.Outcome {
		return &hopperv1.Outcome{Outcome: &hopperv1.Outcome_Complete{Complete: &hopperv1.CompleteRequest{
			Id: j.GetId(), LeaseToken: token, Result: `"done"`}}}
	}
	res, err := e.workers.Report(t.Context(), &hopperv1.ReportRequest{
		Outcomes: []*hopperv1.Outcome{
			complete(ok, ok.GetLeaseToken()),
			{Outcome: &hopperv1.Outcome_Fail{Fail: &hopperv1.FailRequest{Id: failed.GetId(),
				LeaseToken: failed.GetLeaseToken(), Error: "boom", NoRetry: true}}},
			complete(stale, stale.GetLeaseToken()+1),
			{Outcome: &hopperv1.Outcome_Fail{Fail: &hopperv1.FailRequest{Id: invalid.GetId(),
				LeaseToken: invalid.GetLeaseToken()}}}, // no error text
			complete(&hopperv1.ActivatedJob{Id: "no-such-job"}, 1),
			{}, // no outcome set
		},
		Renewals: []*hopperv1.ExtendLeaseRequest{
			{Id: renewed.GetId(), LeaseToken: renewed.GetLeaseToken(), Duration: durationpb.New(time.Hour)},
			{Id: stale.GetId(), LeaseToken: stale.GetLeaseToken() + 1, Duration: durationpb.New(time.Hour)},
		},
	})
	require.NoError(t, err)
	codes := func(vs []*hopperv1.Verdict) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.GetCode())
		}
		return out
	}
	require.Equal(t, []string{"ok", "ok", "failed_precondition", "invalid_argument", "not_found", "invalid_argument"},
		codes(res.GetOutcomes()))
	require.Contains(t, res.GetOutcomes()[3].GetMessage(), "error")
	require.Equal(t, "failed", res.GetOutcomes()[1].GetFail().GetState())
	require.Equal(t, []string{"ok", "failed_precondition"}, codes(res.GetRenewals()))
	require.WithinDuration(t, time.Now().Add(time.Hour), res.GetRenewals()[0].GetLeaseExpiresAt().AsTime(), time.Minute)

	require.Equal(t, "completed", e.get(t, ok.GetId()).GetState())
	require.Equal(t, `"done"`, e.get(t, ok.GetId()).GetResult())
	require.Equal(t, "failed", e.get(t, failed.GetId()).GetState())
	for _, j := range []*hopperv1.ActivatedJob{stale, invalid, renewed} {
		require.Equal(t, "running", e.get(t, j.GetId()).GetState(), "a refused item changes nothing")
	}
}

func TestReportRefusesMoreThanAThousandItems(t *testing.T) {
	e := start(t)
	req := &hopperv1.ReportRequest{Renewals: make([]*hopperv1.ExtendLeaseRequest, 1001)}
	for i := range req.Renewals {
		req.Renewals[i] = &hopperv1.ExtendLeaseRequest{Id: "x", LeaseToken: 1, Duration: durationpb.New(time.Hour)}
	}
	_, err := e.workers.Report(t.Context(), req)
	require.ErrorContains(t, err, "invalid_argument")
	require.ErrorContains(t, err, "more than 1000")
}
