package server_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/remote"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"
)

// runs records which worker ran each job, every time one ran.
type runs struct {
	mu sync.Mutex
	by map[string][]string // job id → the workers that ran it
}

type sendEmail struct{}

func (sendEmail) Kind() string { return "send-email" }

func (r *runs) workers(name string) *hopper.Workers {
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[sendEmail]) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.by[job.ID] = append(r.by[job.ID], name)
		return nil
	})
	return ws
}

// Streams follow the keys (contract 16): a worker streaming while the server had no API key
// gets nothing pushed once the first key is created, its stream ends with UNAUTHENTICATED and
// it stops, saying why once; a worker whose key is revoked likewise. Every job enqueued after
// runs exactly once, by a worker that holds a valid key, and none is lost to a lapsed lease.
func TestStreamsFollowTheKeys(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) *backend{"SQLite": sqliteBackend, "PostgreSQL": postgresBackend} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := open(t)
			keys := b.store.(store.KeyStore)
			s := serve(t, nil, func(c *hopper.Config) { c.Store = b.store }, func(c *server.Config, _ *sqlitestore.Store) {
				c.Auth, c.Keys = &server.KeyAuth{Keys: keys, OpenWithoutKeys: true}, keys
			})
			r := &runs{by: map[string][]string{}}
			startWorker := func(name, key string) (*remote.Worker, *lockedBuffer) {
				logs := &lockedBuffer{}
				w, err := remote.New(remote.Config{URL: s.ts.URL, APIKey: key, Name: name, Workers: r.workers(name),
					Logger: slog.New(slog.NewTextHandler(logs, nil))})
				require.NoError(t, err)
				require.NoError(t, w.Start(context.Background()))
				t.Cleanup(func() { stoptest.Within(t, w, 10*time.Second) })
				return w, logs
			}
			streaming := func(worker, key string) {
				require.Eventually(t, func() bool { return openStreams(t, s, key, worker) > 0 }, 10*time.Second, 5*time.Millisecond,
					"%s's stream is open", worker)
			}
			enqueueAndWait := func(n int) []string {
				ids := make([]string, n)
				for i := range ids {
					res, err := s.client.Enqueue(t.Context(), sendEmail{}, nil)
					require.NoError(t, err)
					ids[i] = res.Job.ID
				}
				for _, id := range ids {
					require.Eventually(t, func() bool {
						job, err := s.client.Get(t.Context(), id)
						return err == nil && job.State == hopper.StateCompleted
					}, 10*time.Second, 5*time.Millisecond, "job %s completes", id)
				}
				return ids
			}

			anon, anonLogs := startWorker("anonymous", "")
			streaming("anonymous", "")
			admin := createKey(t, s, "", "first", "admin") // keyless, from this machine: the first key
			keyed, keyedLogs := startWorker("keyed", admin)
			streaming("keyed", admin)
			for _, id := range enqueueAndWait(20) {
				requireRanOnceBy(t, s.client, r, id, "keyed")
			}
			require.Eventually(t, func() bool { return anon.Err() != nil }, 10*time.Second, 5*time.Millisecond)
			require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(anon.Err()))
			require.Equal(t, 1, strings.Count(anonLogs.String(), "refused the worker's API key"), anonLogs.String())

			// A key revoked through the server ends its streams at once.
			second := createKey(t, s, admin, "second", "admin")
			_, other := startWorker("other", second)
			streaming("other", second)
			revoke(t, s, second, "first")
			for _, id := range enqueueAndWait(20) {
				requireRanOnceBy(t, s.client, r, id, "other")
			}
			require.Eventually(t, func() bool { return keyed.Err() != nil }, 10*time.Second, 5*time.Millisecond)
			require.Equal(t, 1, strings.Count(keyedLogs.String(), "refused the worker's API key"), keyedLogs.String())
			require.NotContains(t, other.String(), "refused")
		})
	}
}

// openStreams counts the open streams of worker, asking with key.
func openStreams(t *testing.T, s *served, key, worker string) int {
	t.Helper()
	res, err := adminClient(s, key).ListStreams(t.Context(), &hopperv1.ListStreamsRequest{})
	require.NoError(t, err)
	n := 0
	for _, st := range res.GetStreams() {
		if st.GetWorker() == worker {
			n++
		}
	}
	return n
}

// requireRanOnceBy checks that job id ran once, by worker, in its first attempt.
func requireRanOnceBy(t *testing.T, c *hopper.Client, r *runs, id, worker string) {
	t.Helper()
	r.mu.Lock()
	ran := r.by[id]
	r.mu.Unlock()
	require.Equal(t, []string{worker}, ran, "job %s", id)
	job, err := c.Get(t.Context(), id)
	require.NoError(t, err)
	require.Equal(t, 1, job.Attempt, "job %s", id)
	require.Zero(t, job.Rescues, "job %s", id)
}

// createKey creates an API key through the server's admin API, with key (none: keyless) and
// returns its secret.
func createKey(t *testing.T, s *served, key, name string, scopes ...string) string {
	t.Helper()
	res, err := adminClient(s, key).CreateKey(t.Context(), &hopperv1.CreateKeyRequest{Name: name, Scopes: scopes})
	require.NoError(t, err)
	return res.GetPlaintext()
}

// revoke revokes the key named name through the server's admin API, with key.
func revoke(t *testing.T, s *served, key, name string) {
	t.Helper()
	_, err := adminClient(s, key).RevokeKey(t.Context(), &hopperv1.RevokeKeyRequest{IdOrName: name})
	require.NoError(t, err)
}

func adminClient(s *served, key string) hopperv1connect.AdminServiceClient {
	var opts []connect.ClientInterceptor
	if key != "" {
		opts = append(opts, remote.Bearer(key))
	}
	return hopperv1connect.NewAdminServiceClient(connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL), opts...))
}

// A job pushed to a stream that ends because its caller may no longer have it goes back to
// its queue at once, its attempt unspent and no rescue counted, instead of waiting an hour
// for its lease: its worker's report would be refused.
func TestAStreamThatLostItsKeyGivesBackWhatItPushed(t *testing.T) {
	t.Parallel()
	s := serve(t, nil, nil, func(c *server.Config, st *sqlitestore.Store) {
		c.Auth, c.Keys = &server.KeyAuth{Keys: st, OpenWithoutKeys: true}, st
	})
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	stream, err := e.workers.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: "w", Credit: 1,
		LeaseTimeout: durationpb.New(time.Hour)})
	require.NoError(t, err)
	defer stream.Close()
	job := e.enqueue(t, "k", `{}`)
	msg, err := stream.Receive()
	require.NoError(t, err)
	require.Equal(t, job.GetId(), msg.GetJobs()[0].GetId())

	createKey(t, s, "", "first", "admin")
	_, err = stream.Receive()
	requireCode(t, connect.CodeUnauthenticated, err)
	got, err := s.client.Get(t.Context(), job.GetId())
	require.NoError(t, err)
	require.Equal(t, hopper.StateQueued, got.State, "back at once, not after its lease")
	require.Zero(t, got.Attempt, "its attempt unspent")
	require.Zero(t, got.Rescues)
	_, err = e.workers.Complete(t.Context(), &hopperv1.CompleteRequest{Id: msg.GetJobs()[0].GetId(),
		LeaseToken: msg.GetJobs()[0].GetLeaseToken()})
	requireCode(t, connect.CodeUnauthenticated, err)
}

// A report stream follows the keys as a job stream does: once a key exists, a report stream
// opened without one applies nothing more and ends with UNAUTHENTICATED; so does one whose key
// is revoked. The jobs its reports would have completed stay as they were.
func TestAReportStreamFollowsTheKeys(t *testing.T) {
	t.Parallel()
	for _, revoked := range []bool{false, true} {
		name := map[bool]string{false: "opened without a key", true: "its key revoked"}[revoked]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, nil, nil, func(c *server.Config, st *sqlitestore.Store) {
				c.Auth, c.Keys = &server.KeyAuth{Keys: st, OpenWithoutKeys: true}, st
			})
			var key, admin string
			if revoked {
				admin = createKey(t, s, "", "admin", "admin")
				key = createKey(t, s, admin, "worker", "work", "enqueue")
			}
			var opts []connect.ClientInterceptor
			if key != "" {
				opts = append(opts, remote.Bearer(key))
			}
			cc := connect.NewClient(connecthttp.NewTransport(h2cClient(t), s.ts.URL), opts...)
			jobs, workers := hopperv1connect.NewJobServiceClient(cc), hopperv1connect.NewWorkerServiceClient(cc)
			var ids []string
			for range 2 {
				res, err := jobs.Enqueue(t.Context(), &hopperv1.EnqueueRequest{Job: &hopperv1.JobSpec{Kind: "k", Args: `{}`}})
				require.NoError(t, err)
				ids = append(ids, res.GetJob().GetId())
			}
			act, err := workers.Activate(t.Context(), &hopperv1.ActivateRequest{Worker: "w", MaxJobs: 2,
				LeaseTimeout: durationpb.New(time.Hour)})
			require.NoError(t, err)
			require.Len(t, act.GetJobs(), 2)
			first, second := act.GetJobs()[0], act.GetJobs()[1]

			rs, err := workers.ReportStream(t.Context())
			require.NoError(t, err)
			defer rs.Close()
			require.NoError(t, rs.Send(&hopperv1.ReportStreamRequest{Id: 1, Report: &hopperv1.ReportRequest{
				Outcomes: []*hopperv1.Outcome{completeOutcome(first, first.GetLeaseToken())}}}))
			res, err := rs.Receive()
			require.NoError(t, err)
			require.Equal(t, "ok", res.GetReport().GetOutcomes()[0].GetCode(), "applied while the caller may")

			if revoked {
				revoke(t, s, admin, "worker")
			} else {
				createKey(t, s, "", "first", "admin")
			}
			require.NoError(t, rs.Send(&hopperv1.ReportStreamRequest{Id: 2, Report: &hopperv1.ReportRequest{
				Outcomes: []*hopperv1.Outcome{completeOutcome(second, second.GetLeaseToken())}}}))
			_, err = rs.Receive()
			requireCode(t, connect.CodeUnauthenticated, err)
			got, err := s.client.Get(t.Context(), second.GetId())
			require.NoError(t, err)
			require.Equal(t, hopper.StateRunning, got.State, "the report after the key lapsed is not applied")
			got, err = s.client.Get(t.Context(), first.GetId())
			require.NoError(t, err)
			require.Equal(t, hopper.StateCompleted, got.State)
		})
	}
}
