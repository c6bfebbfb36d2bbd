package bench

import (
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/internal/servertest"
	"github.com/stretchr/testify/require"
)

// A run through a server whose key is revoked midway ends with the refusal instead of
// waiting for ever for jobs that its stopped worker will never take.
func TestRemoteRunEndsWhenTheServerRefusesItsKey(t *testing.T) {
	t.Parallel()
	srv := servertest.StartTB(t, servertest.Options{Keys: true})
	admin, err := hopperclient.New(hopperclient.Config{URL: srv.URL, APIKey: srv.AdminKey})
	require.NoError(t, err)
	key, _, err := admin.CreateKey(t.Context(), "bench", "work", "enqueue")
	require.NoError(t, err)

	done := make(chan error, 1)
	go func() {
		_, err := Run(t.Context(), Config{Server: srv.URL, APIKey: key, Mode: "stream", Jobs: 500, Workers: 2,
			Batch: 500, Work: 100 * time.Millisecond, LatencyJobs: -1, Rate: 1})
		done <- err
	}()
	require.Eventually(t, func() bool { // the run's worker has its stream
		select {
		case err := <-done:
			require.FailNow(t, "the run ended before its key was revoked", "err: %v", err)
		default:
		}
		streams, err := admin.Streams(t.Context())
		require.NoError(t, err)
		return len(streams) > 0
	}, 30*time.Second, 10*time.Millisecond)
	_, err = admin.RevokeKey(t.Context(), "bench")
	require.NoError(t, err)
	select {
	case err := <-done:
		require.Error(t, err)
		require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "err: %v", err)
	case <-time.After(30 * time.Second): // far beyond the worker's stop and the 100 ms check
		t.Fatal("the run did not end after its key was revoked")
	}
}
