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
