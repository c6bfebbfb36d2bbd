package hopper

import (
	"context"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// Limits per key go in through SetLimit and SetRateLimit with PerKey (or Config), refuse bad
// values naming cap_per_key and rate_per_key, and show in Limits, RateLimits, Queues and Kinds.
func TestLimitsPerKeyThroughTheGoAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, func(c *Config) {
		c.Limits = []Limit{{Kind: "pdf", MaxRunning: 2, PerKey: true}}
		c.RateLimits = []RateLimit{{Kind: "pdf", Rate: Rate{Limit: 10, Period: time.Second}, PerKey: true}}
	})
	ctx := t.Context()
	require.NoError(t, b.client.SetLimit(ctx, Limit{Queue: "emails", MaxRunning: 3, PerKey: true}))
	require.NoError(t, b.client.SetLimit(ctx, Limit{Queue: "emails", MaxRunning: 20}))
	require.NoError(t, b.client.SetRateLimit(ctx, RateLimit{Queue: "emails", Rate: Rate{Limit: 5, Period: time.Minute}, PerKey: true}))

	for want, err := range map[string]error{
		"cap_per_key":  b.client.SetLimit(ctx, Limit{Queue: "emails", MaxRunning: -1, PerKey: true}),
		"rate_per_key": b.client.SetRateLimit(ctx, RateLimit{Queue: "emails", Rate: Rate{Limit: 0, Period: time.Second}, PerKey: true}),
		"limit":        b.client.SetLimit(ctx, Limit{MaxRunning: 1, PerKey: true}),
	} {
		var ve *ValidationError
		require.ErrorAs(t, err, &ve, want)
		require.Equal(t, want, ve.Field)
	}

	caps, err := b.client.Limits(ctx)
	require.NoError(t, err)
	require.Equal(t, []Limit{{Queue: "emails", MaxRunning: 20}, {Queue: "emails", MaxRunning: 3, PerKey: true},
		{Kind: "pdf", MaxRunning: 2, PerKey: true}}, caps)
	rates, err := b.client.RateLimits(ctx)
	require.NoError(t, err)
	require.Equal(t, []RateLimit{{Queue: "emails", Rate: Rate{Limit: 5, Period: time.Minute}, PerKey: true},
		{Kind: "pdf", Rate: Rate{Limit: 10, Period: time.Second}, PerKey: true}}, rates)
	qs, err := b.client.Queues(ctx)
	require.NoError(t, err)
	require.Len(t, qs, 1)
	require.Equal(t, 3, qs[0].CapPerKey)
	require.Equal(t, 20, qs[0].MaxRunning)
	require.Equal(t, Rate{Limit: 5, Period: time.Minute}, qs[0].RatePerKey)
	ks, err := b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Equal(t, []*KindInfo{{Name: "pdf", CapPerKey: 2, RatePerKey: Rate{Limit: 10, Period: time.Second},
		Counts: map[JobState]int64{}}}, ks)

	require.NoError(t, b.client.SetLimit(ctx, Limit{Kind: "pdf", PerKey: true}))
	require.NoError(t, b.client.SetRateLimit(ctx, RateLimit{Kind: "pdf", PerKey: true}))
	ks, err = b.client.Kinds(ctx)
	require.NoError(t, err)
	require.Empty(t, ks, "removed")
}

type tenantJob struct{}

func (tenantJob) Kind() string { return "tenant-job" }

// Workers of two clients sharing the store (on PostgreSQL, two store handles: two processes),
// with a cap of 1 running job per fairness key on the queue: with 6 slots and 3 keys of 4 jobs each, exactly one job of each key runs at once
// (the others stay queued, not claimed), unkeyed jobs fill the other slots, and every job
// ends once the handlers let go. On both stores.
func TestCapPerKeyAcrossProcesses(t *testing.T) {
	t.Parallel()
	stores := map[string]func(t *testing.T) (Store, Store){
		"sqlite": func(t *testing.T) (Store, Store) { // one file, one writer: two clients of one handle
			st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			return st, st
		},
		"postgres": func(t *testing.T) (Store, Store) {
			pgtest.Require(t)
			schema := pgtest.FreshSchema(t, "hopper_perkey_")
			a, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.URL(), Schema: schema, MaxConns: 4})
			require.NoError(t, err)
			b, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.URL(), Schema: schema, MaxConns: 4})
			require.NoError(t, err)
			t.Cleanup(func() { a.Close(); b.Close() })
			return a, b
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := &kindGauge{running: map[string]int{}, peak: map[string]int{}, started: make(chan string, 100)}
			release := make(chan struct{})
			ws := NewWorkers()
			AddWorkerFunc(ws, func(ctx context.Context, job *Job[tenantJob]) error {
				g.enter(job.FairnessKey)
				defer g.leave(job.FairnessKey)
				<-release
				return nil
			})
			sa, sb := open(t)
			var clients []*Client
			for _, st := range []Store{sa, sb} {
				c, err := NewClient(Config{Store: st, Workers: ws, MaxWorkers: 3, PollInterval: 20 * time.Millisecond})
				require.NoError(t, err)
				clients = append(clients, c)
			}
			require.NoError(t, clients[0].SetLimit(t.Context(), Limit{Queue: DefaultQueue, MaxRunning: 1, PerKey: true}))
			var batch []EnqueueParams
			for _, key := range []string{"a", "b", "c"} {
				for range 4 {
					batch = append(batch, EnqueueParams{Args: tenantJob{}, Opts: &InsertOpts{FairnessKey: key}})
				}
			}
			for range 3 {
				batch = append(batch, EnqueueParams{Args: tenantJob{}})
			}
			res, err := clients[0].EnqueueMany(t.Context(), batch)
			require.NoError(t, err)
			for _, c := range clients {
				require.NoError(t, c.Start(t.Context()))
				t.Cleanup(func() { stoptest.Within(t, c, 10*time.Second) })
			}

			started := map[string]int{}
			for range 6 { // one of each key and the 3 unkeyed fill the 6 slots
				started[<-g.started]++
			}
			require.Equal(t, map[string]int{"a": 1, "b": 1, "c": 1, "": 3}, started)
			running, err := clients[0].List(t.Context(), &ListParams{States: []JobState{StateRunning}})
			require.NoError(t, err)
			require.Len(t, running.Jobs, 6, "no keyed job is claimed beyond its key's cap")

			close(release)
			defer func() {
				if t.Failed() { // what was left, for the log
					all, _ := clients[0].List(context.Background(), &ListParams{})
					for _, j := range all.Jobs {
						t.Logf("left: %s key=%q state=%s attempt=%d worker=%s", j.ID, j.FairnessKey, j.State, j.Attempt, j.WorkerID)
					}
				}
			}()
			for _, r := range res {
				require.Eventually(t, func() bool {
					job, err := clients[0].Get(context.Background(), r.Job.ID)
					require.NoError(t, err)
					return job.State == StateCompleted
				}, 20*time.Second, 5*time.Millisecond)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, key := range []string{"a", "b", "c"} {
				require.Equal(t, 1, g.peak[key], "key %s: one at a time", key)
			}
		})
	}
}
