package remote_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperprom"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/remote"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// A remote worker's observers hear each attempt it runs start and end, with the outcome and
// the handler's time, so that hopperprom counts a remote worker's jobs activated, handled by
// outcome and their handler durations, as it does in process.
func TestRemoteWorkerObserversCountItsAttempts(t *testing.T) {
	t.Parallel()
	url, client := serve(t)
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[resize]) error {
		if job.Args.Fail != "" {
			return hopper.NoRetry(errors.New("bad image"))
		}
		return nil
	})
	m := hopperprom.New()
	events := make(chan hopper.JobEvent, 16)
	record := hopper.ObserverFunc(func(_ context.Context, ev hopper.JobEvent) { events <- ev })
	w, err := remote.New(remote.Config{URL: url, Workers: ws, Concurrency: 2, Observers: []hopper.Observer{m, record}})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)

	ok, err := client.Enqueue(t.Context(), resize{Width: 1}, nil)
	require.NoError(t, err)
	waitFor(t, client, ok.Job.ID, hopper.StateCompleted)
	bad, err := client.Enqueue(t.Context(), resize{Fail: "no-retry"}, nil)
	require.NoError(t, err)
	waitFor(t, client, bad.Job.ID, hopper.StateFailed)

	var got []hopper.JobEvent
	for range 4 {
		select {
		case ev := <-events:
			got = append(got, ev)
		case <-time.After(10 * time.Second):
			t.Fatalf("4 events expected, got %v", got)
		}
	}
	require.Equal(t, hopper.JobStarted, got[0].Type)
	require.Equal(t, ok.Job.ID, got[0].JobID)
	require.Equal(t, "resize", got[0].Kind)
	require.Equal(t, "default", got[0].Queue)
	require.True(t, got[0].Remote)
	require.Equal(t, hopper.JobEnded, got[1].Type)
	require.Equal(t, hopper.OutcomeOK, got[1].Outcome)
	require.Equal(t, hopper.StateCompleted, got[1].State)
	require.Positive(t, got[1].Run, "the handler's time")
	require.Equal(t, hopper.OutcomeError, got[3].Outcome)
	require.Empty(t, got[3].State, "the server decides what a failure does")

	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	require.Equal(t, 2, testutil.CollectAndCount(m, "hopper_jobs_handled_total"), "ok and error")
	require.Equal(t, 1.0, handled(t, reg, "ok"))
	require.Equal(t, 1.0, handled(t, reg, "error"))
}

// handled is hopper_jobs_handled_total of the default queue, kind resize and outcome.
func handled(t *testing.T, reg *prometheus.Registry, outcome string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "hopper_jobs_handled_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["queue"] == "default" && labels["kind"] == "resize" && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no hopper_jobs_handled_total for outcome %s", outcome)
	return 0
}

// A remote worker's observers hear each job of a batch it runs start with the batch
// (JobEvent.Batch: the server's batch id, its size and the job's place in it), as in process,
// so that hopperprom counts the batch once with its size.
func TestRemoteWorkerObserversSeeItsBatches(t *testing.T) {
	t.Parallel()
	url, client := serve(t)
	ids := enqueueGroup(t, client, resize{Width: 1}, resize{Width: 2}, resize{Width: 3})
	ws := hopper.NewWorkers()
	hopper.AddBatchWorkerFunc(ws, hopper.BatchOpts{MaxJobs: 10}, func(context.Context, *hopper.Batch[resize]) error {
		return nil
	})
	m := hopperprom.New()
	events := make(chan hopper.JobEvent, 16)
	record := hopper.ObserverFunc(func(_ context.Context, ev hopper.JobEvent) {
		if ev.Type == hopper.JobStarted {
			events <- ev
		}
	})
	w, err := remote.New(remote.Config{URL: url, Workers: ws, Mode: remote.Poll, Concurrency: 10,
		Observers: []hopper.Observer{m, record}})
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	defer stoptest.Within(t, w, 10*time.Second)
	for _, id := range ids {
		waitFor(t, client, id, hopper.StateCompleted)
	}

	for i, id := range ids {
		ev := <-events
		require.Equal(t, id, ev.JobID)
		require.NotEmpty(t, ev.Batch.ID)
		require.Equal(t, hopper.BatchInfo{ID: ev.Batch.ID, Size: 3, Index: i}, ev.Batch)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			switch f.GetName() {
			case "hopper_batches_started_total":
				got[f.GetName()] += s.GetCounter().GetValue()
			case "hopper_batch_jobs", "hopper_batch_linger_seconds":
				got[f.GetName()] += float64(s.GetHistogram().GetSampleCount())
				got[f.GetName()+"_sum"] += s.GetHistogram().GetSampleSum()
			}
		}
	}
	require.Equal(t, map[string]float64{"hopper_batches_started_total": 1, "hopper_batch_jobs": 1,
		"hopper_batch_jobs_sum": 3, "hopper_batch_linger_seconds": 1, "hopper_batch_linger_seconds_sum": 0}, got)
}
