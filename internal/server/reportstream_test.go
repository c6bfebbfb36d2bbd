package server_test

import (
	"errors"
	"io"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// reportStreams opens report streams to e over HTTP/2.
func reportStreams(t *testing.T, e *env) hopperv1connect.WorkerServiceClient {
	return hopperv1connect.NewWorkerServiceClient(connect.NewClient(connecthttp.NewTransport(h2cClient(t), e.url)))
}

func completeOutcome(j *hopperv1.ActivatedJob, token int64) *hopperv1.Outcome {
	return &hopperv1.Outcome{Outcome: &hopperv1.Outcome_Complete{Complete: &hopperv1.CompleteRequest{
		Id: j.GetId(), LeaseToken: token, Result: `"done"`}}}
}

// A report stream takes batches one after another, without waiting for the answers of the
// earlier ones, and answers each under its id, each item on its own as Report does.
func TestReportStreamAnswersEachBatchUnderItsID(t *testing.T) {
	e := start(t)
	for range 4 {
		e.enqueue(t, "demo", `{}`)
	}
	jobs := e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 4})
	require.Len(t, jobs, 4)
	ok, stale, failed, renewed := jobs[0], jobs[1], jobs[2], jobs[3]

	s, err := reportStreams(t, e).ReportStream(t.Context())
	require.NoError(t, err)
	require.NoError(t, s.Send(&hopperv1.ReportStreamRequest{Id: 7, Report: &hopperv1.ReportRequest{
		Outcomes: []*hopperv1.Outcome{completeOutcome(ok, ok.GetLeaseToken()), completeOutcome(stale, stale.GetLeaseToken()+1)}}}))
	require.NoError(t, s.Send(&hopperv1.ReportStreamRequest{Id: 9, Report: &hopperv1.ReportRequest{
		Outcomes: []*hopperv1.Outcome{{Outcome: &hopperv1.Outcome_Fail{Fail: &hopperv1.FailRequest{Id: failed.GetId(),
			LeaseToken: failed.GetLeaseToken(), Error: "boom", NoRetry: true}}}},
		Renewals: []*hopperv1.ExtendLeaseRequest{{Id: renewed.GetId(), LeaseToken: renewed.GetLeaseToken(),
			Duration: durationpb.New(time.Hour)}}}}))
	answers := map[uint64]*hopperv1.ReportResponse{}
	for range 2 {
		res, err := s.Receive()
		require.NoError(t, err)
		answers[res.GetId()] = res.GetReport()
	}
	require.NoError(t, s.CloseSend())
	_, err = s.Receive()
	require.ErrorIs(t, err, io.EOF, "the server ends the stream once the worker has closed its side")
	require.NoError(t, s.Close())

	require.Len(t, answers, 2)
	first, second := answers[7], answers[9]
	require.NotNil(t, first)
	require.NotNil(t, second)
	require.Equal(t, "ok", first.GetOutcomes()[0].GetCode())
	require.Equal(t, "failed_precondition", first.GetOutcomes()[1].GetCode(), "a stale token refuses its item only")
	require.Equal(t, "ok", second.GetOutcomes()[0].GetCode())
	require.Equal(t, "failed", second.GetOutcomes()[0].GetFail().GetState())
	require.Equal(t, "ok", second.GetRenewals()[0].GetCode())
	require.WithinDuration(t, time.Now().Add(time.Hour), second.GetRenewals()[0].GetLeaseExpiresAt().AsTime(), time.Minute)

	require.Equal(t, "completed", e.get(t, ok.GetId()).GetState())
	require.Equal(t, "running", e.get(t, stale.GetId()).GetState())
	require.Equal(t, "failed", e.get(t, failed.GetId()).GetState())
}

// A batch over the limit ends the stream with INVALID_ARGUMENT, naming the limit.
func TestReportStreamRefusesABatchOfMoreThanAThousandItems(t *testing.T) {
	e := start(t)
	s, err := reportStreams(t, e).ReportStream(t.Context())
	require.NoError(t, err)
	req := &hopperv1.ReportRequest{Renewals: make([]*hopperv1.ExtendLeaseRequest, 1001)}
	for i := range req.Renewals {
		req.Renewals[i] = &hopperv1.ExtendLeaseRequest{Id: "x", LeaseToken: 1, Duration: durationpb.New(time.Hour)}
	}
	require.NoError(t, s.Send(&hopperv1.ReportStreamRequest{Id: 1, Report: req}))
	_, err = s.Receive()
	requireCode(t, connect.CodeInvalidArgument, err)
	require.ErrorContains(t, err, "more than 1000")
	require.NoError(t, s.Close())
}

// A server that shuts down answers what it received, then ends its report streams with
// UNAVAILABLE; their workers send what follows elsewhere (or as requests).
func TestReportStreamEndsUnavailableAtShutdown(t *testing.T) {
	e := start(t)
	e.enqueue(t, "demo", `{}`)
	jobs := e.activate(t, &hopperv1.ActivateRequest{MaxJobs: 1})
	require.Len(t, jobs, 1)
	s, err := reportStreams(t, e).ReportStream(t.Context())
	require.NoError(t, err)
	require.NoError(t, s.Send(&hopperv1.ReportStreamRequest{Id: 1, Report: &hopperv1.ReportRequest{
		Outcomes: []*hopperv1.Outcome{completeOutcome(jobs[0], jobs[0].GetLeaseToken())}}}))
	res, err := s.Receive()
	require.NoError(t, err)
	require.Equal(t, "ok", res.GetReport().GetOutcomes()[0].GetCode())
	e.srv.Shutdown()
	_, err = s.Receive()
	requireCode(t, connect.CodeUnavailable, err)
	require.NoError(t, s.Close())
}

// Over HTTP/1.1 a report stream cannot be opened (505 HTTP Version Not Supported): the worker
// reports with requests instead (package remote).
func TestReportStreamNeedsHTTP2(t *testing.T) {
	e := start(t)
	s, err := e.workers.ReportStream(t.Context())
	require.NoError(t, err)
	err = s.Send(&hopperv1.ReportStreamRequest{Id: 1, Report: &hopperv1.ReportRequest{}})
	if err == nil || errors.Is(err, io.EOF) {
		_, err = s.Receive()
	}
	require.ErrorContains(t, err, "505")
	require.NoError(t, s.Close())
}
