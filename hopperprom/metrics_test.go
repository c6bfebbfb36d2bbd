package hopperprom_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperprom"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// The queue and kind labels take a bounded number of values: past the bound, new ones are
// counted under "other", so a kind invented per job cannot grow a series per job.
func TestJobMetricsLabelsAreBounded(t *testing.T) {
	t.Parallel()
	m := hopperprom.New()
	for i := range hopperprom.MaxQueueLabels + 10 {
		m.ObserveJob(t.Context(), hopper.JobEvent{Type: hopper.JobEnqueued, Queue: fmt.Sprintf("q%d", i), Kind: "k"})
	}
	for i := range hopperprom.MaxKindLabels + 10 {
		m.ObserveJob(t.Context(), hopper.JobEvent{Type: hopper.JobEnqueued, Queue: "q0", Kind: fmt.Sprintf("k%d", i)})
	}
	m.ObserveJob(t.Context(), hopper.JobEvent{Type: hopper.JobEnded, State: hopper.StateCompleted})
	n := testutil.CollectAndCount(m, "hopper_jobs_enqueued_total")
	// q0..q49 with k; q0 with k0..k198 (k counts among the kinds); other with k, q0 with
	// other; and unknown with unknown at 0, from the JobEnded without kind and queue (every
	// family gets the pair's series).
	require.Equal(t, hopperprom.MaxQueueLabels+hopperprom.MaxKindLabels-1+3, n)
	require.Equal(t, 10.0, counter(t, m, "hopper_jobs_enqueued_total", "other", "k"))
	require.Equal(t, 11.0, counter(t, m, "hopper_jobs_enqueued_total", "q0", "other"), "k199 to k209 (k is one of the kinds)")
	require.Equal(t, 1.0, counter(t, m, "hopper_jobs_enqueued_total", "q7", "k"))
	require.Equal(t, 1.0, counter(t, m, "hopper_jobs_completed_total", "unknown", "unknown"))
	require.Equal(t, 0.0, counter(t, m, "hopper_jobs_completed_total", "q7", "k"), "a pair's counters start at 0")
	lint, err := testutil.CollectAndLint(m)
	require.NoError(t, err)
	require.Empty(t, lint)
}

// counter reads the counter name of (queue, kind).
func counter(t *testing.T, m *hopperprom.Metrics, name, queue, kind string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range mt.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["queue"] == queue && labels["kind"] == kind {
				return mt.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no series queue=%q kind=%q", queue, kind)
	return 0
}

// Each event lands in its metric: an outcome by the state it led to, a failure with
// attempts left as a retry, snoozes in none of the counters but in the run time.
func TestEventsLandInTheirMetrics(t *testing.T) {
	t.Parallel()
	m := hopperprom.New()
	ev := func(e hopper.JobEvent) {
		e.Queue, e.Kind = "q", "k"
		m.ObserveJob(t.Context(), e)
	}
	ev(hopper.JobEvent{Type: hopper.JobEnqueued, State: hopper.StateQueued})
	ev(hopper.JobEvent{Type: hopper.JobStarted, Wait: 2 * time.Second})
	ev(hopper.JobEvent{Type: hopper.JobEnded, State: hopper.StateCompleted, Outcome: hopper.OutcomeOK, Run: time.Second})
	ev(hopper.JobEvent{Type: hopper.JobEnded, State: hopper.StateFailed, Outcome: hopper.OutcomeError, Run: time.Second})
	ev(hopper.JobEvent{Type: hopper.JobEnded, State: hopper.StateScheduled, Outcome: hopper.OutcomePanic, Run: time.Second})
	ev(hopper.JobEvent{Type: hopper.JobEnded, State: hopper.StateScheduled, Outcome: hopper.OutcomeSnoozed, Run: time.Second})
	ev(hopper.JobEvent{Type: hopper.JobRescued, State: hopper.StateQueued})
	for name, want := range map[string]float64{"hopper_jobs_enqueued_total": 1, "hopper_jobs_completed_total": 1,
		"hopper_jobs_failed_total": 1, "hopper_jobs_retried_total": 1, "hopper_jobs_rescued_total": 1} {
		require.Equal(t, want, counter(t, m, name, "q", "k"), name)
	}
	require.NoError(t, testutil.CollectAndCompare(m, strings.NewReader(`
# HELP hopper_job_wait_seconds Time from when a job became due (enqueued, or its delay or backoff ended) to the start of its attempt.
# TYPE hopper_job_wait_seconds histogram
hopper_job_wait_seconds_bucket{queue="q",le="0.001"} 0
hopper_job_wait_seconds_bucket{queue="q",le="0.005"} 0
hopper_job_wait_seconds_bucket{queue="q",le="0.01"} 0
hopper_job_wait_seconds_bucket{queue="q",le="0.05"} 0
hopper_job_wait_seconds_bucket{queue="q",le="0.1"} 0
hopper_job_wait_seconds_bucket{queue="q",le="0.25"} 0
hopper_job_wait_seconds_bucket{queue="q",le="0.5"} 0
hopper_job_wait_seconds_bucket{queue="q",le="1"} 0
hopper_job_wait_seconds_bucket{queue="q",le="2.5"} 1
hopper_job_wait_seconds_bucket{queue="q",le="5"} 1
hopper_job_wait_seconds_bucket{queue="q",le="10"} 1
hopper_job_wait_seconds_bucket{queue="q",le="30"} 1
hopper_job_wait_seconds_bucket{queue="q",le="60"} 1
hopper_job_wait_seconds_bucket{queue="q",le="300"} 1
hopper_job_wait_seconds_bucket{queue="q",le="900"} 1
hopper_job_wait_seconds_bucket{queue="q",le="3600"} 1
hopper_job_wait_seconds_bucket{queue="q",le="+Inf"} 1
hopper_job_wait_seconds_sum{queue="q"} 2
hopper_job_wait_seconds_count{queue="q"} 1
`), "hopper_job_wait_seconds"))
	require.Equal(t, 1, testutil.CollectAndCount(m, "hopper_job_run_seconds"), "one series")
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "hopper_job_run_seconds" {
			require.Equal(t, uint64(4), f.GetMetric()[0].GetHistogram().GetSampleCount(), "every ended attempt's run time")
		}
	}
}

// Failures count by business error code, bounded as the kinds are: past MaxErrorCodeLabels
// codes, new ones count under "other"; a failure without a code has an empty error_code.
func TestFailedCountsByErrorCodeBounded(t *testing.T) {
	t.Parallel()
	m := hopperprom.New()
	failed := func(code string) {
		m.ObserveJob(t.Context(), hopper.JobEvent{Type: hopper.JobEnded, State: hopper.StateFailed,
			Outcome: hopper.OutcomeError, Queue: "q", Kind: "k", ErrorCode: code})
	}
	failed("")
	for i := range hopperprom.MaxErrorCodeLabels + 10 {
		failed(fmt.Sprintf("c%d", i))
	}
	failed("c3")
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	families, err := reg.Gather()
	require.NoError(t, err)
	byCode := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "hopper_jobs_failed_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "error_code" {
					byCode[l.GetValue()] = mt.GetCounter().GetValue()
				}
			}
		}
	}
	require.Len(t, byCode, hopperprom.MaxErrorCodeLabels+2, "the codes kept, other, and none")
	require.Equal(t, 1.0, byCode[""])
	require.Equal(t, 2.0, byCode["c3"])
	require.Equal(t, 10.0, byCode[hopperprom.OtherLabel])
	lint, err := testutil.CollectAndLint(m)
	require.NoError(t, err)
	require.Empty(t, lint)
}

// A batch is counted once, on its first job's start, with its size and linger; its other
// jobs and the jobs started alone count only as starts. A kind without batches has no batch
// series, and the batch series' labels are bounded as the others are.
func TestBatchesCountOncePerBatch(t *testing.T) {
	t.Parallel()
	m := hopperprom.New()
	start := func(kind string, b hopper.BatchInfo) {
		m.ObserveJob(t.Context(), hopper.JobEvent{Type: hopper.JobStarted, Queue: "q", Kind: kind, Batch: b})
	}
	for i := range 3 {
		start("bulk", hopper.BatchInfo{ID: "a.1", Size: 3, Index: i, Linger: 2 * time.Second})
	}
	start("bulk", hopper.BatchInfo{ID: "b.1", Size: 1, Linger: 0})
	start("single", hopper.BatchInfo{})
	require.NoError(t, testutil.CollectAndCompare(m, strings.NewReader(`
# HELP hopper_batches_started_total Batches claimed to run together (a batch kind's jobs, in this process or for a remote worker through the server).
# TYPE hopper_batches_started_total counter
hopper_batches_started_total{kind="bulk",queue="q"} 2
`), "hopper_batches_started_total"))
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	families, err := reg.Gather()
	require.NoError(t, err)
	histograms := map[string]bool{}
	for _, f := range families {
		switch f.GetName() {
		case "hopper_batch_jobs":
			require.Len(t, f.GetMetric(), 1, "bulk's alone")
			h := f.GetMetric()[0].GetHistogram()
			require.Equal(t, uint64(2), h.GetSampleCount())
			require.Equal(t, 4.0, h.GetSampleSum())
			histograms[f.GetName()] = true
		case "hopper_batch_linger_seconds":
			require.Len(t, f.GetMetric(), 1, "bulk's alone")
			h := f.GetMetric()[0].GetHistogram()
			require.Equal(t, uint64(2), h.GetSampleCount())
			require.Equal(t, 2.0, h.GetSampleSum())
			histograms[f.GetName()] = true
		case "hopper_job_wait_seconds":
			require.Equal(t, uint64(5), f.GetMetric()[0].GetHistogram().GetSampleCount(), "every start's wait")
		}
	}
	require.Len(t, histograms, 2)

	for i := range hopperprom.MaxKindLabels + 5 {
		start(fmt.Sprintf("k%d", i), hopper.BatchInfo{ID: fmt.Sprintf("%d.1", i), Size: 2})
	}
	require.LessOrEqual(t, testutil.CollectAndCount(m, "hopper_batches_started_total"), hopperprom.MaxKindLabels+1,
		"the kinds kept and other")
	require.Equal(t, 7.0, counter(t, m, "hopper_batches_started_total", "q", hopperprom.OtherLabel),
		"bulk and single took two of the kinds' labels: the last 7 kinds count as other")
	lint, err := testutil.CollectAndLint(m)
	require.NoError(t, err)
	require.Empty(t, lint)
}

// Crash is a job that always fails.
type Crash struct{}

func (Crash) Kind() string { return "crash" }

// A workflow counts once as started, by name, when it is enqueued; once as canceled however
// often its cancel is asked; once, when the leader marks it ended, as completed, failed or (a
// step canceled, the workflow not canceled whole) canceled; and each of its steps' waits
// (from its release for a step with parents) lands in the step wait histogram, beside the
// jobs' own wait.
func TestWorkflowMetrics(t *testing.T) {
	t.Parallel()
	m := hopperprom.New()
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(context.Context, *hopper.Job[Resize]) error { return nil })
	hopper.AddWorkerFunc(ws, func(context.Context, *hopper.Job[Crash]) error { return errors.New("boom") })
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Observers: []hopper.Observer{m},
		PollInterval: 50 * time.Millisecond, RescueInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, c.Start(t.Context()))
	t.Cleanup(func() {
		stoptest.Within(t, c, 10*time.Second)
		require.NoError(t, st.Close())
	})
	ctx := t.Context()

	// Canceled whole first: the passes that count the others below see it too, and leave it.
	later, err := c.EnqueueWorkflow(ctx, hopper.Workflow{Name: "later", Steps: []hopper.WorkflowStep{
		{Name: "x", Args: Resize{}, Opts: &hopper.InsertOpts{Delay: time.Hour}}}})
	require.NoError(t, err)
	_, err = c.CancelWorkflow(ctx, later.Workflow.ID, "")
	require.NoError(t, err)
	_, err = c.CancelWorkflow(ctx, later.Workflow.ID, "")
	require.ErrorIs(t, err, hopper.ErrInvalidTransition)

	res, err := c.EnqueueWorkflow(ctx, hopper.Workflow{Name: "album", Steps: []hopper.WorkflowStep{
		{Name: "fetch", Args: Resize{}}, {Name: "small", Args: Resize{}, After: []string{"fetch"}},
		{Name: "large", Args: Resize{}, After: []string{"fetch"}}}})
	require.NoError(t, err)
	_, err = c.EnqueueWorkflow(ctx, hopper.Workflow{Name: "broken", Steps: []hopper.WorkflowStep{
		{Name: "crash", Args: Crash{}, Opts: &hopper.InsertOpts{MaxAttempts: 1}},
		{Name: "after", Args: Resize{}, After: []string{"crash"}}}})
	require.NoError(t, err)
	stopped, err := c.EnqueueWorkflow(ctx, hopper.Workflow{Name: "stopped", Steps: []hopper.WorkflowStep{
		{Name: "x", Args: Resize{}, Opts: &hopper.InsertOpts{Delay: time.Hour}}}})
	require.NoError(t, err)
	_, err = c.Cancel(ctx, stopped.Job("x").ID) // the step, not the workflow
	require.NoError(t, err)

	ended := func(name, state string) float64 {
		mt := metricOrNil(t, m, "hopper_workflows_"+state+"_total", "name", name)
		if mt == nil {
			return 0
		}
		return mt.GetCounter().GetValue()
	}
	require.Eventually(t, func() bool {
		return ended("album", "completed") == 1 && ended("broken", "failed") == 1 && ended("stopped", "canceled") == 1
	}, 10*time.Second, 10*time.Millisecond, "the leader counts each when it marks it ended")

	d, err := c.Workflow(ctx, res.Workflow.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.WorkflowCompleted, d.Workflow.State)
	require.Equal(t, 1.0, metric(t, m, "hopper_workflows_started_total", "name", "album").GetCounter().GetValue())
	require.Equal(t, uint64(4), metric(t, m, "hopper_workflow_step_wait_seconds", "queue", "default").GetHistogram().GetSampleCount(),
		"every step's start, once: album's three and broken's crash")
	require.Equal(t, uint64(4), metric(t, m, "hopper_job_wait_seconds", "queue", "default").GetHistogram().GetSampleCount())

	require.Equal(t, 1.0, ended("later", "canceled"), "counted by its cancel, not again by the leader")
	require.Equal(t, 1.0, metric(t, m, "hopper_workflows_started_total", "name", "later").GetCounter().GetValue())
	require.Equal(t, 2, testutil.CollectAndCount(m, "hopper_workflows_canceled_total"), "later and stopped")
	require.Equal(t, 1, testutil.CollectAndCount(m, "hopper_workflows_completed_total"), "album")
	require.Equal(t, 1, testutil.CollectAndCount(m, "hopper_workflows_failed_total"), "broken")
	lint, err := testutil.CollectAndLint(m)
	require.NoError(t, err)
	require.Empty(t, lint)
}

// A WorkflowEnded counts in the counter of its state, by name, under the names' bound; an
// event without an ended state counts nowhere.
func TestWorkflowEndedCounters(t *testing.T) {
	t.Parallel()
	m := hopperprom.New()
	for _, st := range []hopper.WorkflowState{hopper.WorkflowCompleted, hopper.WorkflowCompleted, hopper.WorkflowFailed,
		hopper.WorkflowCanceled, hopper.WorkflowRunning, ""} {
		m.ObserveJob(t.Context(), hopper.JobEvent{Type: hopper.WorkflowEnded, Workflow: "nightly", WorkflowState: st})
	}
	m.ObserveJob(t.Context(), hopper.JobEvent{Type: hopper.WorkflowCancel, Workflow: "nightly", WorkflowState: hopper.WorkflowFailed})
	require.Equal(t, 2.0, metric(t, m, "hopper_workflows_completed_total", "name", "nightly").GetCounter().GetValue())
	require.Equal(t, 1.0, metric(t, m, "hopper_workflows_failed_total", "name", "nightly").GetCounter().GetValue())
	require.Equal(t, 2.0, metric(t, m, "hopper_workflows_canceled_total", "name", "nightly").GetCounter().GetValue(),
		"one ended canceled, one canceled whole (a step had failed: it reads failed, counted as canceled)")
	for i := range hopperprom.MaxWorkflowLabels + 3 {
		m.ObserveJob(t.Context(), hopper.JobEvent{Type: hopper.WorkflowEnded, Workflow: fmt.Sprintf("w%d", i),
			WorkflowState: hopper.WorkflowFailed})
	}
	require.LessOrEqual(t, testutil.CollectAndCount(m, "hopper_workflows_failed_total"), hopperprom.MaxWorkflowLabels+1)
	require.Positive(t, metric(t, m, "hopper_workflows_failed_total", "name", hopperprom.OtherLabel).GetCounter().GetValue())
}

// metricOrNil returns the series of family name whose label is value, or nil.
func metricOrNil(t *testing.T, m *hopperprom.Metrics, name, label, value string) *dto.Metric {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return mt
				}
			}
		}
	}
	return nil
}

// metric returns the series of family name whose label is value.
func metric(t *testing.T, m *hopperprom.Metrics, name, label, value string) *dto.Metric {
	t.Helper()
	mt := metricOrNil(t, m, name, label, value)
	if mt == nil {
		t.Fatalf("no series %s{%s=%q}", name, label, value)
	}
	return mt
}

// The workflow name label is bounded as the kinds are.
func TestWorkflowNameLabelIsBounded(t *testing.T) {
	t.Parallel()
	m := hopperprom.New()
	for i := range hopperprom.MaxWorkflowLabels + 5 {
		m.ObserveJob(t.Context(), hopper.JobEvent{Type: hopper.WorkflowEnqueued, Workflow: fmt.Sprintf("w%d", i)})
	}
	require.Equal(t, hopperprom.MaxWorkflowLabels+1, testutil.CollectAndCount(m, "hopper_workflows_started_total"))
	require.Equal(t, 5.0, metric(t, m, "hopper_workflows_started_total", "name", hopperprom.OtherLabel).GetCounter().GetValue())
	require.Zero(t, testutil.CollectAndCount(m, "hopper_jobs_enqueued_total"), "a workflow event makes no job series")
}
