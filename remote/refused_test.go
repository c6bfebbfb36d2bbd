package remote_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/stretchr/testify/require"
)

// refuser answers 401 to the procedures it is told to, once refuse is set: a key revoked
// while the worker runs.
type refuser struct {
	refuse atomic.Bool
	paths  []string
}

func (r *refuser) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		for _, p := range r.paths {
			if r.refuse.Load() && req.URL.Path == p {
				http.Error(w, "unauthenticated", http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, req)
	})
}

// A worker that is refused on its outcome reports or its lease renewals (its key was revoked
// while it ran a job) stops as when a poll or its stream is refused: one log line, Err set,
// no retries for ever. Renewals go in Report requests and, over h2c, outcomes on the report
// stream, so refusing one path tells which call was refused.
func TestRemoteWorkerStopsWhenAReportOrRenewalIsRefused(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		paths []string
		lease time.Duration
	}{
		// The outcome is reported at once; the first renewal would come after 10 s.
		"report": {paths: []string{hopperv1connect.WorkerServiceReportStreamProcedure, hopperv1connect.WorkerServiceReportProcedure}},
		// Only renewals are refused (outcomes go on the stream); one comes every third of a second.
		"renewal": {paths: []string{hopperv1connect.WorkerServiceReportProcedure}, lease: time.Second},
	}
	for name, c := range cases {
		for mname, mode := range map[string]remote.Mode{"stream": remote.Stream, "poll": remote.Poll} {
			t.Run(name+"/"+mname, func(t *testing.T) {
				t.Parallel()
				ref := &refuser{paths: c.paths}
				ts, client := remote.ServeForTest(t, remote.ServeOptions{Handler: ref.wrap})
				started, release := make(chan struct{}), make(chan struct{})
				ws := hopper.NewWorkers()
				hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
					close(started)
					select {
					case <-release:
					case <-ctx.Done():
					}
					return nil
				})
				var logs lockedLog
				w, err := remote.New(remote.Config{URL: ts.URL, Workers: ws, Mode: mode, LeaseDuration: c.lease,
					Logger: slog.New(slog.NewTextHandler(&logs, nil))})
				require.NoError(t, err)
				require.NoError(t, w.Start(context.Background()))
				defer stoptest.Within(t, w, 10*time.Second)
				_, err = client.Enqueue(context.Background(), resize{Width: 1}, &hopper.InsertOpts{})
				require.NoError(t, err)
				<-started
				ref.refuse.Store(true)
				if name == "report" {
					close(release)
				} else {
					defer close(release)
				}
				require.Eventually(t, func() bool { return w.Err() != nil }, 10*time.Second, 5*time.Millisecond)
				require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(w.Err()))
				require.Equal(t, 1, strings.Count(logs.String(), "refused the worker's API key"), logs.String())
			})
		}
	}
}
