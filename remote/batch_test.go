package remote

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/stretchr/testify/require"
)

// hangingStreams answers Report requests and takes report streams, but never answers a batch
// on a stream (a server whose store hangs).
type hangingStreams struct {
	hopperv1connect.UnimplementedWorkerServiceHandler
	requests, streams atomic.Int32
}

func (h *hangingStreams) Report(_ context.Context, req *hopperv1.ReportRequest) (*hopperv1.ReportResponse, error) {
	h.requests.Add(1)
	res := &hopperv1.ReportResponse{}
	for range req.GetOutcomes() {
		res.Outcomes = append(res.Outcomes, &hopperv1.Verdict{Code: "ok"})
	}
	return res, nil
}

func (h *hangingStreams) ReportStream(ctx context.Context, s hopperv1connect.WorkerServiceReportStreamServerStream) error {
	h.streams.Add(1)
	for {
		if _, err := s.Receive(); err != nil {
			return err
		}
	}
}

// A batch that a stream does not answer in time breaks the stream: the batch goes again as a
// request, and the report is answered, not left waiting.
func TestAnUnansweredBatchBreaksItsStream(t *testing.T) {
	h := &hangingStreams{}
	rpc := connect.NewServer()
	hopperv1connect.RegisterWorkerServiceHandler(rpc, h)
	mux := http.NewServeMux()
	connecthttp.Mount(mux, rpc)
	ts := httptest.NewUnstartedServer(mux)
	ts.Config.Protocols = server.Protocols()
	ts.Start()
	defer ts.Close()
	own := newOwnClients(ts.URL)
	defer own.close()
	client := func(hc *http.Client) hopperv1connect.WorkerServiceClient {
		return hopperv1connect.NewWorkerServiceClient(connect.NewClient(connecthttp.NewTransport(hc, ts.URL)))
	}
	b := &batcher{api: client(own.calls), stream: client(own.stream), clock: clock.Real{}, timeout: 200 * time.Millisecond}
	defer b.close()

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second) // fails, rather than hangs, if left waiting
	defer cancel()
	err := b.send(ctx, &hopperv1.Outcome{Outcome: &hopperv1.Outcome_Complete{Complete: &hopperv1.CompleteRequest{Id: "j", LeaseToken: 1}}})
	require.NoError(t, err, "answered by the request sent after the stream broke")
	require.EqualValues(t, 1, h.streams.Load())
	require.EqualValues(t, 1, h.requests.Load())
}
