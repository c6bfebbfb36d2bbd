package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// gatedClaims is the test's SQLite store whose first claim waits for proceed, then claims as
// PostgreSQL does when its client is canceled during the commit: the jobs are claimed, but a
// caller whose context has ended hears only that it ended.
type gatedClaims struct {
	*sqlitestore.Store
	entered, proceed chan struct{}
}

func (g *gatedClaims) JobClaim(ctx context.Context, p *store.ClaimParams) (jobs []*hopper.JobRow, hold store.Hold, err error) {
	select {
	case <-g.entered:
	default:
		close(g.entered)
		<-g.proceed
	}
	jobs, hold, err = g.Store.JobClaim(context.WithoutCancel(ctx), p)
	if ctx.Err() != nil {
		return nil, store.Hold{}, ctx.Err() // committed, but the answer is lost with the canceled client
	}
	return jobs, hold, err
}

// A worker that gives up its Activate while the claim commits: the claim is not cut off by
// the worker's leaving, and the server gives the jobs it claimed back at once, instead of
// leaving them running, with nobody on them, until their leases expire (and a rescue that
// counts against their max_rescues).
func TestAnActivationAbandonedDuringItsClaimGivesTheJobsBack(t *testing.T) {
	t.Parallel()
	gate := &gatedClaims{entered: make(chan struct{}), proceed: make(chan struct{})}
	s := serve(t, nil, func(c *hopper.Config) {
		gate.Store = c.Store.(*sqlitestore.Store)
		c.Store = gate
	}, nil)
	res, err := s.client.Enqueue(t.Context(), hopper.RawArgs{KindName: "k", JSON: []byte(`{}`)}, nil)
	require.NoError(t, err)

	// The worker's request, as the server sees it: gone tells when the server knows the
	// worker left.
	gone := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		context.AfterFunc(r.Context(), func() { close(gone) })
		s.srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	workers := hopperv1connect.NewWorkerServiceClient(connect.NewClient(connecthttp.NewTransport(ts.Client(), ts.URL)))
	ctx, cancel := context.WithCancel(t.Context())
	answered := make(chan error, 1)
	go func() {
		_, err := workers.Activate(ctx, &hopperv1.ActivateRequest{Worker: "w1", LeaseTimeout: durationpb.New(time.Hour)})
		answered <- err
	}()
	<-gate.entered
	cancel() // the worker gives up while its claim runs
	<-gone
	close(gate.proceed)
	require.Error(t, <-answered)

	var attempts []*hopper.AttemptRecord
	require.Eventually(t, func() bool {
		attempts, err = s.client.Attempts(t.Context(), res.Job.ID)
		require.NoError(t, err)
		return len(attempts) > 0
	}, 10*time.Second, 5*time.Millisecond, "the claimed job is given back, not left running")
	require.Len(t, attempts, 1)
	require.Equal(t, hopper.OutcomeCanceled, attempts[0].Outcome)
	require.Contains(t, attempts[0].Error, "activation abandoned by the worker")
	job, err := s.client.Get(t.Context(), res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.StateQueued, job.State)
	require.Equal(t, 0, job.Attempt, "its attempt given back")
	require.Equal(t, 0, job.Rescues)
}
