package server_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hopperprom"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// batchEvents keeps the batch of each JobStarted event, by job id.
type batchEvents struct {
	mu      sync.Mutex
	batches map[string]hopper.BatchInfo
}

func (b *batchEvents) ObserveJob(_ context.Context, ev hopper.JobEvent) {
	if ev.Type != hopper.JobStarted {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.batches[ev.JobID] = ev.Batch
}

func (b *batchEvents) of(id string) hopper.BatchInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.batches[id]
}

// Batches claimed for remote workers are counted once each, by queue and kind, with their
// size and linger; each job's JobStarted names its batch as the worker's batch_id does, its
// size and its place in it. Jobs claimed alone are in no batch.
func TestBatchMetricsCountRemoteBatches(t *testing.T) {
	t.Parallel()
	m, seen := hopperprom.New(), &batchEvents{batches: map[string]hopper.BatchInfo{}}
	s := serve(t, nil, func(c *hopper.Config) { c.Observers = []hopper.Observer{m, seen} },
		func(c *server.Config, _ *sqlitestore.Store) { c.Metrics = m })
	e := newEnv(s.ts.URL, s.ts.Client(), s.client, s.store, s.srv)
	g := fillGroup(t, e, "bulk", "g", 3)
	h := fillGroup(t, e, "bulk", "h", 2)
	fillKind(t, e, "one", 2)
	bk := []*hopperv1.BatchKind{{Kind: "bulk", MaxJobs: 10}}
	var got []*hopperv1.ActivatedJob
	for len(got) < 7 {
		jobs := e.activate(t, &hopperv1.ActivateRequest{Kinds: []string{"bulk", "one"}, MaxJobs: 10, BatchKinds: bk})
		require.NotEmpty(t, jobs)
		got = append(got, jobs...)
	}
	require.Len(t, got, 7)
	for _, j := range got {
		b := seen.of(j.GetId())
		require.Equal(t, j.GetBatchId(), b.ID, "the event names the batch the worker was told of")
		if j.GetKind() == "one" {
			require.Zero(t, b, "a job claimed alone is in no batch")
		}
	}
	for _, group := range [][]string{g, h} {
		for i, id := range group {
			b := seen.of(id)
			require.Equal(t, len(group), b.Size)
			require.Equal(t, i, b.Index, "the group's order")
			require.GreaterOrEqual(t, b.Linger, time.Duration(0))
		}
	}
	body := scrape(t, e.url)
	for _, want := range []string{
		`hopper_batches_started_total{kind="bulk",queue="default"} 2`,
		`hopper_batch_jobs_sum{kind="bulk",queue="default"} 5`,
		`hopper_batch_jobs_count{kind="bulk",queue="default"} 2`,
		`hopper_batch_jobs_bucket{kind="bulk",queue="default",le="2"} 1`,
		`hopper_batch_linger_seconds_count{kind="bulk",queue="default"} 2`,
		`hopper_job_wait_seconds_count{queue="default"} 7`,
	} {
		require.Contains(t, body, want)
	}
	require.NotContains(t, body, `hopper_batches_started_total{kind="one"`, "a kind without batches has no batch series")
}

// bulkArgs is the kind of the in-process batch worker's jobs.
type bulkArgs struct {
	N int `json:"n"`
}

func (bulkArgs) Kind() string { return "bulk-local" }

// An in-process batch worker's batches are counted through the same observer as a remote
// worker's.
func TestBatchMetricsCountInProcessBatches(t *testing.T) {
	t.Parallel()
	m := hopperprom.New()
	ws := hopper.NewWorkers()
	hopper.AddBatchWorkerFunc(ws, hopper.BatchOpts{MaxJobs: 10}, func(context.Context, *hopper.Batch[bulkArgs]) error { return nil })
	s := serve(t, nil, func(c *hopper.Config) {
		c.Observers, c.Workers, c.Queues = []hopper.Observer{m}, ws, map[string]hopper.QueueConfig{"local": {}}
	}, func(c *server.Config, _ *sqlitestore.Store) { c.Metrics = m })
	jobs := make([]hopper.EnqueueParams, 4)
	for i := range jobs {
		jobs[i] = hopper.EnqueueParams{Args: bulkArgs{N: i}, Opts: &hopper.InsertOpts{Queue: "local", GroupKey: "g"}}
	}
	_, err := s.client.EnqueueMany(t.Context(), jobs) // one transaction: the group is whole when claimed
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return strings.Contains(scrape(t, s.ts.URL), `hopper_jobs_completed_total{kind="bulk-local",queue="local"} 4`)
	}, 10*time.Second, 5*time.Millisecond)
	body := scrape(t, s.ts.URL)
	for _, want := range []string{
		`hopper_batches_started_total{kind="bulk-local",queue="local"} 1`,
		`hopper_batch_jobs_sum{kind="bulk-local",queue="local"} 4`,
		`hopper_batch_linger_seconds_count{kind="bulk-local",queue="local"} 1`,
	} {
		require.Contains(t, body, want)
	}
}
