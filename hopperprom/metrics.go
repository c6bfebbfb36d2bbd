// Package hopperprom counts what happens to Hopper's jobs as Prometheus metrics: a
// hopper.Observer that is also a prometheus.Collector. `hopper serve` serves it on /metrics; a
// program that embeds Hopper registers it with its own registry:
//
//	m := hopperprom.New()
//	prometheus.MustRegister(m)
//	client, _ := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Observers: []hopper.Observer{m}})
//
// The metrics, their labels and the bound on the labels' values are listed in
// docs/observability.md.
package hopperprom

import (
	"context"
	"sync"

	"github.com/hopperjobs/hopper"
	"github.com/prometheus/client_golang/prometheus"
)

// Label bounds of Metrics: the queue label takes at most MaxQueueLabels values, the kind
// label MaxKindLabels, the error_code label MaxErrorCodeLabels and a workflow's name label
// MaxWorkflowLabels, the first seen; later ones
// are counted under OtherLabel, so that a bug that invents a kind or a business error code per
// job cannot make a series per job. A kind or queue the server does not know (an outcome
// reported to it for an attempt claimed through another node) is UnknownLabel.
const (
	MaxQueueLabels     = 50
	MaxKindLabels      = 200
	MaxErrorCodeLabels = 100
	MaxWorkflowLabels  = 200
	OtherLabel         = "other"
	UnknownLabel       = "unknown"
)

// durationBuckets are the buckets, in seconds, of the wait and run histograms: a millisecond
// to an hour.
var durationBuckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

// batchSizeBuckets are the buckets of the jobs-per-batch histogram: a batch holds 1 to
// BatchOpts.MaxJobs jobs (default 100), at most 1000 for a remote worker's.
var batchSizeBuckets = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}

// Metrics counts what happens to jobs, as Prometheus counters and histograms, from a
// client's job events: it is a hopper.Observer (give it to hopper.Config.Observers) and a
// prometheus.Collector (register it). Every attempt the client sees is counted, its own
// workers' and the remote workers' it serves as hopper serve. A (queue, kind) pair gets
// its series, at 0, when first seen. Safe for concurrent use; the zero value is not: use New.
type Metrics struct {
	enqueued, completed, failed, retried, rescued *prometheus.CounterVec
	handled                                       *prometheus.CounterVec
	wait, run                                     *prometheus.HistogramVec
	batches                                       *prometheus.CounterVec
	batchJobs, batchLinger                        *prometheus.HistogramVec
	workflowsStarted, workflowsCanceled           *prometheus.CounterVec // by name
	workflowsCompleted, workflowsFailed           *prometheus.CounterVec // by name
	stepWait                                      *prometheus.HistogramVec

	mu        sync.RWMutex
	queues    labelCap
	kinds     labelCap
	codes     labelCap
	workflows labelCap
	series    map[[2]string]*jobSeries // by (queue, kind) as the events name them
}

// jobSeries are the series of one (queue, kind), resolved once: an event costs a map read.
// failed is the series without a business error code; a coded failure resolves its own.
type jobSeries struct {
	queue, kind                                   string // the label values
	enqueued, completed, failed, retried, rescued prometheus.Counter
	handled                                       *prometheus.CounterVec // by outcome
	wait, run                                     prometheus.Observer
}

// New returns job metrics with no series yet.
func New() *Metrics {
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hopper_jobs_" + name + "_total", Help: help},
			append([]string{"queue", "kind"}, labels...))
	}
	histogram := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hopper_job_" + name + "_seconds", Help: help,
			Buckets: durationBuckets}, labels)
	}
	return &Metrics{
		enqueued:  counter("enqueued", "Jobs inserted: enqueued (not idempotent repeats nor merges), fired by schedules, replayed."),
		completed: counter("completed", "Attempts that completed their job."),
		failed: counter("failed", "Jobs that failed for good (the dead-letter queue): out of attempts, not retryable, a business error (its error_code; empty for the others), out of rescues, undeliverable.",
			"error_code"),
		retried: counter("retried", "Attempts that failed (error, panic, timeout) with attempts left: their job will be retried."),
		rescued: counter("rescued", "Jobs returned to their queue because their worker was lost (lease expired, node dead, stream closed)."),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hopper_jobs_handled_total",
			Help: "Attempts that ended, by outcome (ok, error, panic, timeout, snoozed, …): written by this client, or run by this remote worker."},
			[]string{"queue", "kind", "outcome"}),
		wait: histogram("wait", "Time from when a job became due (enqueued, or its delay or backoff ended) to the start of its attempt.",
			"queue"),
		run: histogram("run", "Time from an attempt's start to its outcome being written.", "queue", "kind"),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hopper_batches_started_total",
			Help: "Batches claimed to run together (a batch kind's jobs, in this process or for a remote worker through the server)."},
			[]string{"queue", "kind"}),
		batchJobs: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hopper_batch_jobs",
			Help: "Jobs per batch started.", Buckets: batchSizeBuckets}, []string{"queue", "kind"}),
		batchLinger: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hopper_batch_linger_seconds",
			Help:    "Time from when a batch's longest-waiting job became due to the batch's claim (held back to fill, BatchOpts.MaxWait, or for want of a worker).",
			Buckets: durationBuckets}, []string{"queue", "kind"}),
		workflowsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hopper_workflows_started_total",
			Help: "Workflows enqueued (Client.EnqueueWorkflow, WorkflowService.EnqueueWorkflow), by name."}, []string{"name"}),
		workflowsCanceled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hopper_workflows_canceled_total",
			Help: "Workflows canceled whole (Client.CancelWorkflow, WorkflowService.CancelWorkflow, the dashboard), and workflows the leader marked ended canceled (a step canceled or skipped, none failed), by name: once per workflow."}, []string{"name"}),
		workflowsCompleted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hopper_workflows_completed_total",
			Help: "Workflows whose steps all completed, counted by the leader that marked them ended, by name."}, []string{"name"}),
		workflowsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hopper_workflows_failed_total",
			Help: "Workflows whose steps have all ended, one at least failed, counted by the leader that marked them ended, by name."}, []string{"name"}),
		stepWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hopper_workflow_step_wait_seconds",
			Help:    "Time from when a workflow's step became due (released by the end of its last parent, or enqueued for a first step) to the start of its attempt.",
			Buckets: durationBuckets}, []string{"queue"}),
		queues: labelCap{max: MaxQueueLabels}, kinds: labelCap{max: MaxKindLabels},
		codes: labelCap{max: MaxErrorCodeLabels}, workflows: labelCap{max: MaxWorkflowLabels},
		series: map[[2]string]*jobSeries{},
	}
}

// ObserveJob counts one event.
func (m *Metrics) ObserveJob(_ context.Context, ev hopper.JobEvent) {
	switch ev.Type {
	case hopper.WorkflowEnqueued:
		m.workflowsStarted.WithLabelValues(m.workflowLabel(ev.Workflow)).Inc()
		return
	case hopper.WorkflowCancel:
		m.workflowsCanceled.WithLabelValues(m.workflowLabel(ev.Workflow)).Inc()
		return
	case hopper.WorkflowEnded:
		m.workflowEnded(ev)
		return
	}
	s := m.seriesOf(ev.Queue, ev.Kind)
	switch ev.Type {
	case hopper.JobEnqueued:
		s.enqueued.Inc()
	case hopper.JobStarted:
		s.wait.Observe(ev.Wait.Seconds())
		if ev.WorkflowID != "" { // a step: its series are made on first use, as only steps have them
			m.stepWait.WithLabelValues(s.queue).Observe(ev.Wait.Seconds())
		}
		if b := ev.Batch; b.ID != "" && b.Index == 0 { // once per batch
			m.batchStarted(s, b)
		}
	case hopper.JobRescued:
		s.rescued.Inc()
	case hopper.JobEnded:
		outcome := string(ev.Outcome)
		if outcome == "" {
			outcome = UnknownLabel
		}
		s.handled.WithLabelValues(outcome).Inc()
		switch {
		case ev.State == hopper.StateCompleted:
			s.completed.Inc()
		case ev.State == hopper.StateFailed && ev.ErrorCode != "":
			m.failed.WithLabelValues(s.queue, s.kind, m.codeLabel(ev.ErrorCode)).Inc()
		case ev.State == hopper.StateFailed:
			s.failed.Inc()
		case ev.Retried():
			s.retried.Inc()
		}
		if ev.Run > 0 {
			s.run.Observe(ev.Run.Seconds())
		}
	}
}

// workflowEnded counts a workflow the leader marked ended by its state. One canceled whole was
// marked by its cancel, counted by the WorkflowCancel, and never reaches here: each ended
// workflow is counted once, in one of the three counters.
func (m *Metrics) workflowEnded(ev hopper.JobEvent) {
	var c *prometheus.CounterVec
	switch ev.WorkflowState {
	case hopper.WorkflowCompleted:
		c = m.workflowsCompleted
	case hopper.WorkflowFailed:
		c = m.workflowsFailed
	case hopper.WorkflowCanceled:
		c = m.workflowsCanceled
	default:
		return
	}
	c.WithLabelValues(m.workflowLabel(ev.Workflow)).Inc()
}

// batchStarted counts a batch. Its series are made on first use, not with the (queue, kind)'s
// others: only batch kinds have them.
func (m *Metrics) batchStarted(s *jobSeries, b hopper.BatchInfo) {
	m.batches.WithLabelValues(s.queue, s.kind).Inc()
	m.batchJobs.WithLabelValues(s.queue, s.kind).Observe(float64(b.Size))
	m.batchLinger.WithLabelValues(s.queue, s.kind).Observe(b.Linger.Seconds())
}

// seriesOf returns the series of (queue, kind), creating them on first use.
func (m *Metrics) seriesOf(queue, kind string) *jobSeries {
	key := [2]string{queue, kind}
	m.mu.RLock()
	s, ok := m.series[key]
	m.mu.RUnlock()
	if ok {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.series[key]; ok {
		return s
	}
	q, k := m.queues.value(queue), m.kinds.value(kind)
	s = &jobSeries{queue: q, kind: k,
		enqueued: m.enqueued.WithLabelValues(q, k), completed: m.completed.WithLabelValues(q, k),
		failed: m.failed.WithLabelValues(q, k, ""), retried: m.retried.WithLabelValues(q, k),
		rescued: m.rescued.WithLabelValues(q, k), wait: m.wait.WithLabelValues(q), run: m.run.WithLabelValues(q, k),
		handled: m.handled.MustCurryWith(prometheus.Labels{"queue": q, "kind": k}),
	}
	if q != OtherLabel && k != OtherLabel {
		m.series[key] = s // bounded: at most MaxQueueLabels × MaxKindLabels keys
	}
	return s
}

// workflowLabel is the name label of a workflow, bounded as the kinds are.
func (m *Metrics) workflowLabel(name string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.workflows.value(name)
}

// codeLabel is the error_code label of a business error's code, bounded as the kinds are.
func (m *Metrics) codeLabel(code string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.codes.value(code)
}

// Describe and Collect make Metrics a prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect sends every series.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.enqueued, m.completed, m.failed, m.retried, m.rescued, m.handled, m.wait, m.run,
		m.batches, m.batchJobs, m.batchLinger, m.workflowsStarted, m.workflowsCanceled, m.workflowsCompleted, m.workflowsFailed,
		m.stepWait}
}

// labelCap hands out label values: the first max distinct ones as they are, later ones as
// OtherLabel, and "" as UnknownLabel. Guarded by its Metrics' mutex.
type labelCap struct {
	max  int
	seen map[string]bool
}

func (c *labelCap) value(v string) string {
	if v == "" {
		return UnknownLabel
	}
	if c.seen[v] {
		return v
	}
	if len(c.seen) >= c.max {
		return OtherLabel
	}
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	c.seen[v] = true
	return v
}
