package hopperclient_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/stretchr/testify/require"
)

// The server's refusals are the errors of package hopper, with the server's message, and
// still carry their Connect code.
func TestErrorsAreHoppers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()

	_, err := b.client.Get(ctx, "01a20c25-204c-75dd-9586-33351e006867")
	require.ErrorIs(t, err, hopper.ErrNotFound)
	require.Equal(t, connect.CodeNotFound, connect.CodeOf(err))
	require.Contains(t, err.Error(), "get job 01a20c25-204c-75dd-9586-33351e006867: ")

	// The server names the field; so does the error.
	_, err = b.client.Enqueue(ctx, Email{}, &hopper.InsertOpts{Queue: "no spaces"})
	requireField(t, err, "queue")
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err))
	_, err = b.client.Enqueue(ctx, Email{}, &hopper.InsertOpts{MaxAttempts: 5000})
	requireField(t, err, "max_attempts")
	_, err = b.client.Get(ctx, "")
	requireField(t, err, "id")
	_, err = b.client.EnqueueMany(ctx, []hopper.EnqueueParams{{Args: Email{}}, {Args: Email{}, Opts: &hopper.InsertOpts{Priority: 5000}}})
	requireField(t, err, "jobs[1].priority")

	// What the API does not carry is refused here, not dropped.
	_, err = b.client.Enqueue(ctx, Email{}, &hopper.InsertOpts{ResultTTL: time.Hour})
	requireField(t, err, "result_ttl")
	_, err = b.client.EnqueueMany(ctx, []hopper.EnqueueParams{{Args: Email{}}, {Args: nil}})
	requireField(t, err, "jobs[1].args")
	_, err = b.client.List(ctx, &hopper.ListParams{ArgsContains: "x"})
	requireField(t, err, "args_contains")
	_, err = b.client.Enqueue(ctx, badArgs{}, nil)
	requireField(t, err, "args")
	all, err := b.client.List(ctx, nil)
	require.NoError(t, err)
	require.Empty(t, all.Jobs, "no refused enqueue stored a job")

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.client.Queues(canceled)
	require.ErrorIs(t, err, context.Canceled)
}

// badArgs cannot be encoded as JSON.
type badArgs struct{ C chan int }

func (badArgs) Kind() string { return "bad" }

func TestAuthErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, key := range map[string]string{"no key": "", "a bad key": "hop_aaaaaaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"} {
		c := newClient(t, b.srv.URL, key)
		_, err := c.List(t.Context(), nil)
		require.ErrorIs(t, err, hopperclient.ErrUnauthenticated, name)
		require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), name)
	}
}

func TestUnreachableServerIsUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	_, err = newClient(t, url, "").Get(t.Context(), "x")
	require.ErrorIs(t, err, hopper.ErrUnavailable)
}

// One client serves many goroutines at once (run with -race).
func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Go(func() {
			res, err := b.client.Enqueue(t.Context(), Email{To: "x@example.com"}, &hopper.InsertOpts{Priority: i})
			if err == nil {
				_, err = b.client.Get(t.Context(), res.Job.ID)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	all, err := b.client.List(t.Context(), &hopper.ListParams{Limit: 100})
	require.NoError(t, err)
	require.Len(t, all.Jobs, 20)
}
