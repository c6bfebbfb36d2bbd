package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hopperprom"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// openStream opens a stream of worker with credit on the default queue and returns the jobs
// it receives, one at a time, and the keepalives it receives on the other channel.
func openPushStream(t *testing.T, e *env, worker string, credit int32) (jobs <-chan *hopperv1.ActivatedJob, keepalives <-chan time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	st, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: worker, Credit: credit,
		LeaseTimeout: durationpb.New(time.Hour)})
	require.NoError(t, err)
	jc, kc := make(chan *hopperv1.ActivatedJob, 16), make(chan time.Duration, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := st.Receive()
			if err != nil {
				return
			}
			if k := msg.GetKeepalive(); k != nil {
				kc <- k.AsDuration()
			}
			for _, j := range msg.GetJobs() {
				jc <- j
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		st.Close()
		<-done
	})
	return jc, kc
}

// waitStreams waits until n streams are open.
func waitStreams(t *testing.T, e *env, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		res, err := e.admin.ListStreams(t.Context(), &hopperv1.ListStreamsRequest{})
		return err == nil && len(res.GetStreams()) == n
	}, 10*time.Second, 5*time.Millisecond, "%d streams open", n)
}

// A push that fails hands its job to another open stream of its queue with credit free: the
// job reaches the other worker at once, under the same attempt and lease, instead of waiting
// for the lease to expire (an hour here) or going back to the queue; the failure and the
// re-route are counted.
func TestFailedPushIsReroutedToAnotherStream(t *testing.T) {
	m := hopperprom.New()
	s := serve(t, nil, func(c *hopper.Config) { c.Observers = []hopper.Observer{m} },
		func(c *server.Config, _ *sqlitestore.Store) { c.Metrics = m })
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	pushing, fail := make(chan struct{}, 1), make(chan struct{})
	s.srv.SetPushFault(func(worker string) error {
		if worker != "broken" {
			return nil
		}
		pushing <- struct{}{}
		<-fail
		return errors.New("connection reset by peer")
	})
	_, _ = openPushStream(t, e, "broken", 1)
	waitStreams(t, e, 1)
	id := e.enqueue(t, "report", `{}`).GetId()
	recv(t, pushing) // the broken stream claimed the job and is pushing it
	claimed := e.get(t, id).GetLeaseToken()

	healthy, _ := openPushStream(t, e, "healthy", 1)
	waitStreams(t, e, 2)
	close(fail)
	got := recv(t, healthy)
	require.Equal(t, id, got.GetId())
	job := e.get(t, id)
	require.Equal(t, "running", job.GetState())
	require.Equal(t, claimed, got.GetLeaseToken(), "the attempt claimed for the broken stream, not a new claim")
	require.Equal(t, claimed, job.GetLeaseToken())
	require.Equal(t, int32(1), job.GetAttempt())

	_, err := e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: id, LeaseToken: got.GetLeaseToken()})
	require.NoError(t, err)
	body := scrape(t, s.ts.URL)
	require.Contains(t, body, `hopper_stream_push_failed_total{reason="send_error"} 1`)
	require.Contains(t, body, `hopper_stream_push_failed_total{reason="worker_too_slow"} 0`)
	require.Contains(t, body, "hopper_stream_push_rerouted_total 1")
}

// Jobs that no other stream can take (none open, or none with credit free) go back to their
// queue at once when their push fails.
func TestFailedPushWithNowhereToGoReturnsToTheQueue(t *testing.T) {
	s := serve(t, nil, nil, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	s.srv.SetPushFault(func(worker string) error {
		if worker == "broken" {
			return errors.New("connection reset by peer")
		}
		return nil
	})
	_, _ = openPushStream(t, e, "broken", 1)
	waitStreams(t, e, 1)
	id := e.enqueue(t, "report", `{}`).GetId()
	require.Eventually(t, func() bool {
		return strings.Contains(scrape(t, s.ts.URL), `hopper_stream_push_failed_total{reason="send_error"} 1`)
	}, 10*time.Second, 10*time.Millisecond, "the failed push is counted")
	waitStreams(t, e, 0)
	e.waitJob(t, id, "queued", 0)
	require.Contains(t, scrape(t, s.ts.URL), "hopper_stream_push_rerouted_total 0")
}

// A push that blocks (the worker does not read what it is sent) counts its jobs as held up by
// a worker too slow once it has blocked for a second, on the server's clock, while it still
// blocks; the jobs arrive when it ends.
func TestBlockedPushCountsAWorkerTooSlow(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := serve(t, clk, func(c *hopper.Config) { c.DisableMaintenance = true }, nil)
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	pushing, unblock := make(chan struct{}, 1), make(chan struct{})
	s.srv.SetPushFault(func(string) error {
		pushing <- struct{}{}
		<-unblock
		return nil
	})
	jobs, _ := openPushStream(t, e, "sluggish", 1)
	waitStreams(t, e, 1)
	id := e.enqueue(t, "report", `{}`).GetId()
	recv(t, pushing)
	tooSlow := `hopper_stream_push_failed_total{reason="worker_too_slow"} 1`
	clk.Advance(999 * time.Millisecond)
	require.NotContains(t, scrape(t, s.ts.URL), tooSlow, "not blocked for a second yet")
	clk.Advance(time.Millisecond)
	require.Eventually(t, func() bool { return strings.Contains(scrape(t, s.ts.URL), tooSlow) },
		10*time.Second, 10*time.Millisecond, "counted while the push still blocks")
	close(unblock)
	require.Equal(t, id, recv(t, jobs).GetId(), "the job arrives late")
}

// An idle stream sends a keepalive as it opens, naming the period, and again after each
// period without a message, on the server's clock.
func TestIdleStreamSendsKeepalives(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := serve(t, clk, func(c *hopper.Config) { c.DisableMaintenance = true },
		func(c *server.Config, _ *sqlitestore.Store) { c.StreamKeepalive = 20 * time.Second })
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	_, keepalives := openPushStream(t, e, "quiet", 1)
	require.Equal(t, 20*time.Second, recv(t, keepalives), "the first tells the period")
	for range 2 {
		waitOnClockAtLeast(t, clk, 1)
		clk.Advance(20 * time.Second)
		require.Equal(t, 20*time.Second, recv(t, keepalives))
	}
	select {
	case <-keepalives:
		t.Fatal("a keepalive before the period passed")
	default:
	}
}

// waitOnClockAtLeast waits (in real time, up to 10 s) until at least n timers wait on clk.
func waitOnClockAtLeast(t *testing.T, clk *clock.Fake, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return clk.Pending() >= n }, 10*time.Second, time.Millisecond)
}
