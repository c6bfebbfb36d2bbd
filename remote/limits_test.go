package remote_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// smallLimits is a ServerService that serves small input limits.
type smallLimits struct {
	hopperv1connect.UnimplementedServerServiceHandler
	asked atomic.Int32
}

func (s *smallLimits) Info(context.Context, *hopperv1.ServerServiceInfoRequest) (*hopperv1.ServerServiceInfoResponse, error) {
	s.asked.Add(1)
	return &hopperv1.ServerServiceInfoResponse{Server: &hopperv1.ServerInfo{
		InputLimits: &hopperv1.InputLimits{MaxErrorBytes: 100, MaxProgressMessageBytes: 20}}}, nil
}

// A remote worker clips what it reports to the limits its server serves, not to the ones it
// was built with: a server that takes 100 bytes of error text and 20 of progress message gets
// no more, in both modes.
func TestRemoteWorkerClipsToTheServedLimits(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			info := &smallLimits{}
			rpc := connect.NewServer()
			hopperv1connect.RegisterServerServiceHandler(rpc, info)
			ts, client := remote.ServeForTest(t, remote.ServeOptions{Handler: func(srv http.Handler) http.Handler {
				mux := http.NewServeMux()
				connecthttp.Mount(mux, rpc)
				mux.Handle("/hopper.v1.WorkerService/", srv)
				return mux
			}})
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				if err := hopper.ReportProgress(ctx, 10, strings.Repeat("p", 300)); err != nil {
					return err
				}
				return errors.New(strings.Repeat("é", 300)) // 600 bytes
			})
			w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Mode: mode, Concurrency: 2, Name: "clip-" + name})
			require.NoError(t, err)
			require.NoError(t, w.Start(context.Background()))
			defer stoptest.Within(t, w, 10*time.Second)

			res, err := client.Enqueue(t.Context(), resize{}, &hopper.InsertOpts{MaxAttempts: 1})
			require.NoError(t, err)
			job := waitFor(t, client, res.Job.ID, hopper.StateFailed)
			require.LessOrEqual(t, len(job.LastError), 100, "clipped to the served limit")
			require.True(t, strings.HasSuffix(job.LastError, "…"))
			require.True(t, utf8.ValidString(job.LastError))
			require.LessOrEqual(t, len(job.ProgressMessage), 20)
			require.Equal(t, int32(1), info.asked.Load(), "asked once")
		})
	}
}
