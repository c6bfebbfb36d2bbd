package remote_test

import (
	"context"
	"errors"
	"log/slog"
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
	"google.golang.org/protobuf/types/known/durationpb"
)

// smallLimits is a ServerService that serves small input limits (or those of limits, when set).
type smallLimits struct {
	hopperv1connect.UnimplementedServerServiceHandler
	asked  atomic.Int32
	limits *hopperv1.InputLimits
	none   bool // serve no input_limits
}

// testLimits are small limits for the tests: the worker has no limits of its own.
func testLimits() *hopperv1.InputLimits {
	return &hopperv1.InputLimits{MaxErrorBytes: 100, MaxReasonBytes: 50, MaxProgressMessageBytes: 20,
		MaxRunAtFuture: durationpb.New(48 * time.Hour)}
}

func (s *smallLimits) Info(context.Context, *hopperv1.ServerServiceInfoRequest) (*hopperv1.ServerServiceInfoResponse, error) {
	s.asked.Add(1)
	l := s.limits
	if l == nil && !s.none {
		l = testLimits()
	}
	return &hopperv1.ServerServiceInfoResponse{Server: &hopperv1.ServerInfo{InputLimits: l}}, nil
}

// serveInfo puts info in front of the worker service srv: a server whose ServerService is info.
func serveInfo(info hopperv1connect.ServerServiceHandler) func(srv http.Handler) http.Handler {
	return func(srv http.Handler) http.Handler {
		rpc := connect.NewServer()
		hopperv1connect.RegisterServerServiceHandler(rpc, info)
		mux := http.NewServeMux()
		connecthttp.Mount(mux, rpc)
		mux.Handle("/hopper.v1.WorkerService/", srv)
		return mux
	}
}

// A remote worker clips what it reports to the limits its server serves, not to the ones it
// was built with: a server that takes 100 bytes of error text and 20 of progress message gets
// no more, in both modes.
func TestRemoteWorkerClipsToTheServedLimits(t *testing.T) {
	for name, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			info := &smallLimits{}
			ts, client := remote.ServeForTest(t, remote.ServeOptions{Handler: serveInfo(info)})
			ws := hopper.NewWorkers()
			hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
				if err := hopper.ReportProgress(ctx, 10, strings.Repeat("p", 300)); err != nil {
					return err
				}
				if job.Args.Width == 1 {
					return hopper.Snooze(100 * 365 * 24 * time.Hour)
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

			// A snooze of 100 years is bounded by the served max_run_at_future (48 h).
			before := time.Now()
			res, err = client.Enqueue(t.Context(), resize{Width: 1}, &hopper.InsertOpts{})
			require.NoError(t, err)
			job = waitFor(t, client, res.Job.ID, hopper.StateScheduled)
			require.True(t, job.RunAt.Before(before.Add(49*time.Hour)), "snoozed until %v: past the served limit", job.RunAt)
			require.Equal(t, int32(1), info.asked.Load(), "asked once")
		})
	}
}

// A worker takes its limits only from its server: one that serves none (a server without
// ServerService, or whose ServerService.Info leaves out input_limits or a limit the worker
// needs) stops the worker before it takes any job, with a *NoLimitsError that Err reports
// and one log line, in both modes.
func TestRemoteWorkerTakesNoJobFromAServerWithoutLimits(t *testing.T) {
	partial := testLimits()
	partial.MaxReasonBytes = 0
	cases := map[string]struct {
		handler func(http.Handler) http.Handler
		limit   string
		rpcErr  bool
	}{
		"no input_limits": {handler: serveInfo(&smallLimits{none: true})},
		"a limit left 0":  {handler: serveInfo(&smallLimits{limits: partial}), limit: "max_reason_bytes"},
		"no ServerService": {handler: func(srv http.Handler) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/hopper.v1.WorkerService/", srv)
			return mux
		}, rpcErr: true},
	}
	for name, c := range cases {
		for mname, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
			t.Run(name+"/"+mname, func(t *testing.T) {
				t.Parallel()
				ts, client := remote.ServeForTest(t, remote.ServeOptions{Handler: c.handler})
				res, err := client.Enqueue(t.Context(), resize{}, &hopper.InsertOpts{})
				require.NoError(t, err)
				var ran atomic.Int32
				ws := hopper.NewWorkers()
				hopper.AddWorkerFunc(ws, func(context.Context, *hopper.Job[resize]) error { ran.Add(1); return nil })
				var logs lockedLog
				w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Mode: mode,
					Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				require.NoError(t, err)
				require.NoError(t, w.Start(context.Background()))
				defer stoptest.Within(t, w, 10*time.Second)
				require.Eventually(t, func() bool { return w.Err() != nil }, 10*time.Second, 5*time.Millisecond)

				var nl *remote.NoLimitsError
				require.ErrorAs(t, w.Err(), &nl)
				require.Equal(t, ts.URL, nl.URL)
				require.Equal(t, c.limit, nl.Limit)
				require.Equal(t, c.rpcErr, nl.Err != nil, "%v", nl.Err)
				require.Contains(t, w.Err().Error(), "the server at "+ts.URL+" serves no input limit")
				require.Contains(t, w.Err().Error(), "(ServerService.Info): upgrade it")
				// The intake never starts once Err is set: the job is still waiting, never run.
				job, err := client.Get(t.Context(), res.Job.ID)
				require.NoError(t, err)
				require.Equal(t, hopper.StateQueued, job.State)
				require.Zero(t, ran.Load())
				require.Equal(t, 1, strings.Count(logs.String(), "serves no input limit"), logs.String())
			})
		}
	}
}
