package server

import (
	"context"
	"net/http"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metricsTimeout bounds the store reads of one scrape.
const metricsTimeout = 10 * time.Second

// stalledScan bounds how many running jobs a scrape looks at to count the stalled ones.
const stalledScan = 10000

// collector reads Hopper's state at scrape time: no background loop, nothing to keep in
// sync. Job counts scan the jobs table (twice: per queue, and per kind for the kinds listed),
// so scrape it every 15 s or more, not every second.
type collector struct {
	s *Server

	jobs, stalled, deadLetters, oldestDeadLetter, leader *prometheus.Desc
	kindDisabled, rateLimit                              *prometheus.Desc
	capPerKey, ratePerKey                                *prometheus.Desc
	storeUp, loopsFailing                                *prometheus.Desc
	streams, streamInFlight, streamPushed, workers       *prometheus.Desc
	streamPushedTotal, oldestQueued                      *prometheus.Desc
	pushFailed, pushRerouted                             *prometheus.Desc
	awaitingCompute, heldByGovernor                      *prometheus.Desc
	holding, governorCPU, governorMem                    *prometheus.Desc
	scrapeErrors                                         prometheus.Counter
}

func newCollector(s *Server) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("hopper_"+name, help, labels, nil)
	}
	return &collector{s: s,
		jobs: d("jobs", "Jobs in the store by queue and state (every state of every queue, 0 when it has none).", "queue", "state"),
		oldestQueued: d("queue_oldest_job_age_seconds", "How long the oldest queued job of the queue (by enqueue) has been due, "+
			"from its run_at; 0 when the queue has no queued job.", "queue"),
		stalled:      d("jobs_stalled", "Running jobs with a valid lease but no sign of life for longer than the stalled threshold.", "queue"),
		kindDisabled: d("kind_disabled", "1 when the kind is disabled (no node starts its jobs), else 0; for every kind with jobs or settings.", "kind"),
		rateLimit: d("rate_limit_starts_per_second", "The fleet-wide rate limit of a queue or a kind, as job starts per second "+
			"(a limit of 5000/1h reads 1.39); for every queue and kind that has one.", "scope", "name"),
		capPerKey: d("cap_per_key", "The fleet-wide cap on the running jobs of each fairness key of a queue or a kind; "+
			"for every queue and kind that has one.", "scope", "name"),
		ratePerKey: d("rate_per_key_starts_per_second", "The fleet-wide rate limit on the job starts of each fairness key "+
			"of a queue or a kind, as starts per second; for every queue and kind that has one.", "scope", "name"),
		deadLetters:      d("dead_letters", "Failed jobs kept in the dead-letter queue and not yet replayed."),
		oldestDeadLetter: d("dead_letter_oldest_age_seconds", "Age of the oldest dead letter not yet replayed (0 when there is none)."),
		leader:           d("leader", "1 when this node holds the leader lease."),
		storeUp:          d("store_up", "1 when the store answered a ping (within 2 s) at scrape time, 0 when it did not."),
		loopsFailing:     d("background_loops_failing", "Background loops of this node whose last call to the store failed."),
		streams:          d("streams_open", "Open job streams on this server."),
		streamInFlight:   d("stream_jobs_in_flight", "Unfinished jobs held by this server's open streams."),
		streamPushed:     d("stream_jobs_pushed", "Jobs pushed by this server's open streams since they opened (falls when a stream closes: use hopper_stream_jobs_pushed_total for rates)."),
		streamPushedTotal: prometheus.NewDesc("hopper_stream_jobs_pushed_total",
			"Jobs pushed to remote workers by this server's job streams since it started.", nil, nil),
		pushFailed: d("stream_push_failed_total", "Jobs claimed for a job stream whose push failed or was held up, by reason: "+
			"stream_closed (the stream ended first), send_error (writing to the worker failed), worker_too_slow "+
			"(the write blocked for over a second: the worker does not read; the jobs arrive late).", "reason"),
		pushRerouted: d("stream_push_rerouted_total", "Jobs that could not be pushed to a stream's worker and were handed to "+
			"another open stream of their queue and kind instead of going back to the queue."),
		workers:         d("remote_workers", "Remote workers this server has seen recently."),
		awaitingCompute: d("queue_awaiting_compute", "Jobs of the queue that are ready and wait for a worker to start them (its queued jobs).", "queue"),
		heldByGovernor: d("queue_held_by_governor", "1 while every live worker of the queue is held back by its resource governor, else 0 "+
			"(0 for a paused queue and for a queue without live workers).", "queue"),
		holding:     d("governor_holding", "1 while this node's resource governor holds back new jobs (0 without limits)."),
		governorCPU: d("governor_cpu", "CPU use this node's resource governor measured, smoothed, as a fraction of the CPU available to it (0 without limits)."),
		governorMem: d("governor_memory_bytes", "Memory use this node's resource governor measured, in bytes (0 without limits)."),
		scrapeErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "hopper_metrics_scrape_errors_total",
			Help: "Scrapes that could not read part of the state from the store."}),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.jobs, c.stalled, c.kindDisabled, c.rateLimit, c.capPerKey, c.ratePerKey, c.deadLetters, c.oldestDeadLetter, c.leader,
		c.storeUp, c.loopsFailing, c.streams, c.streamInFlight, c.streamPushed, c.streamPushedTotal, c.oldestQueued, c.workers,
		c.pushFailed, c.pushRerouted,
		c.awaitingCompute, c.heldByGovernor, c.holding, c.governorCPU, c.governorMem} {
		ch <- d
	}
	c.scrapeErrors.Describe(ch)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsTimeout)
	defer cancel()
	client := c.s.client
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	up := 1.0
	if client.Ping(ctx) != nil {
		up = 0
	}
	gauge(c.storeUp, up)
	gauge(c.loopsFailing, float64(len(c.s.failingLoops())))
	if up == 1 {
		c.collectStore(ctx, gauge)
	} else {
		c.scrapeErrors.Inc() // the store is down: its loops log that, not every scrape
	}
	gauge(c.leader, boolGauge(client.IsLeader()))
	streams, workers := c.s.reg.snapshot(c.s.clock.Now())
	var inFlight, pushed float64
	for _, st := range streams {
		inFlight += float64(st.inFlight)
		pushed += float64(st.pushed)
	}
	gauge(c.streams, float64(len(streams)))
	gauge(c.streamInFlight, inFlight)
	gauge(c.streamPushed, pushed)
	ch <- prometheus.MustNewConstMetric(c.streamPushedTotal, prometheus.CounterValue, float64(c.s.reg.pushedTotal.Load()))
	push := &c.s.reg.push
	for why := range pushFailures {
		ch <- prometheus.MustNewConstMetric(c.pushFailed, prometheus.CounterValue, float64(push.failed[why].Load()), why.label())
	}
	ch <- prometheus.MustNewConstMetric(c.pushRerouted, prometheus.CounterValue, float64(push.rerouted.Load()))
	gauge(c.workers, float64(len(workers)))
	gov := client.Governor()
	gauge(c.holding, boolGauge(gov.Holding))
	gauge(c.governorCPU, gov.CPU)
	gauge(c.governorMem, float64(gov.Memory))
	c.scrapeErrors.Collect(ch)
}

// collectStore reads the metrics that come from the store.
func (c *collector) collectStore(ctx context.Context, gauge func(*prometheus.Desc, float64, ...string)) {
	client := c.s.client
	if qs, err := client.Queues(ctx); err == nil {
		for _, q := range qs {
			for _, st := range hoppertype.AllStates {
				gauge(c.jobs, float64(q.Counts[st]), q.Name, string(st)) // 0 too: a series that vanishes can't alert
			}
			if age, err := c.oldestQueuedAge(ctx, q); err == nil {
				gauge(c.oldestQueued, age.Seconds(), q.Name)
			} else {
				c.fail(err)
			}
			gauge(c.awaitingCompute, float64(q.AwaitingCompute), q.Name)
			gauge(c.heldByGovernor, boolGauge(q.HeldByGovernor), q.Name)
			if !q.Rate.IsZero() {
				gauge(c.rateLimit, perSecond(q.Rate), "queue", q.Name)
			}
			if q.CapPerKey > 0 {
				gauge(c.capPerKey, float64(q.CapPerKey), "queue", q.Name)
			}
			if !q.RatePerKey.IsZero() {
				gauge(c.ratePerKey, perSecond(q.RatePerKey), "queue", q.Name)
			}
		}
	} else {
		c.fail(err)
	}
	if ks, err := client.Kinds(ctx); err == nil {
		for _, k := range ks {
			disabled := 0.0
			if k.Disabled {
				disabled = 1
			}
			gauge(c.kindDisabled, disabled, k.Name)
			if !k.Rate.IsZero() {
				gauge(c.rateLimit, perSecond(k.Rate), "kind", k.Name)
			}
			if k.CapPerKey > 0 {
				gauge(c.capPerKey, float64(k.CapPerKey), "kind", k.Name)
			}
			if !k.RatePerKey.IsZero() {
				gauge(c.ratePerKey, perSecond(k.RatePerKey), "kind", k.Name)
			}
		}
	} else {
		c.fail(err)
	}
	if res, err := client.List(ctx, &hopper.ListParams{States: []hopper.JobState{hopper.StateRunning}, Limit: stalledScan}); err == nil {
		now, stalled := client.Now(), map[string]int{}
		for _, j := range res.Jobs {
			if j.Stalled(now, c.s.cfg.StalledAfter) {
				stalled[j.Queue]++
			}
		}
		for q, n := range stalled {
			gauge(c.stalled, float64(n), q)
		}
	} else {
		c.fail(err)
	}
	if st, err := client.DeadLetterStats(ctx); err == nil {
		gauge(c.deadLetters, float64(st.Count))
		gauge(c.oldestDeadLetter, st.OldestAge(client.Now()).Seconds())
	} else {
		c.fail(err)
	}
}

// oldestQueuedAge is how long the oldest queued job of q, by enqueue, has been due (0 when
// it has none): one read of one row per queue, through the claim index, after the job
// counts that scan the jobs table anyway.
func (c *collector) oldestQueuedAge(ctx context.Context, q *hopper.QueueInfo) (time.Duration, error) {
	if q.Counts[hopper.StateQueued] == 0 {
		return 0, nil
	}
	at, err := c.s.client.OldestQueuedAt(ctx, q.Name)
	if err != nil || at.IsZero() {
		return 0, err
	}
	return max(c.s.client.Now().Sub(at), 0), nil
}

// perSecond is a rate limit as starts per second.
func perSecond(r hopper.Rate) float64 { return float64(r.Limit) / r.Period.Seconds() }

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c *collector) fail(err error) {
	c.scrapeErrors.Inc()
	c.s.log.Warn("metrics scrape", "err", err)
}

// metricsHandler serves Prometheus metrics: Hopper's gauges (read at scrape time), its job
// counters and histograms (Config.Metrics), and the Go runtime's and process's.
func (s *Server) metricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(s), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if s.cfg.Metrics != nil {
		reg.MustRegister(s.cfg.Metrics)
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: nil})
}
