package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hopperjobs/hopper"
)

// The soak scenario (issue 13, "performance that holds at scale"): jobs are enqueued at a
// steady rate for a long time, 1 % of them fail their first attempt and are retried, and
// finished jobs expire after a result TTL, so the leader's sweep deletes them while the load
// goes on. Every interval a row records the load, the latencies and what the process and the
// database hold; at the end a verdict per series says whether it stayed flat.

// SoakConfig says what the soak scenario runs. Zero fields take the defaults in their
// comments.
type SoakConfig struct {
	// Database, Synchronous, Conns and Workers are as in Config.
	Database    string
	Synchronous string
	Conns       int
	Workers     int
	// Rate is the enqueues per second; 0 measures the maximum throughput first (the standard
	// benchmark's throughput phase, 20,000 jobs on a fresh store) and uses half of it.
	Rate int
	// Duration is how long the load runs (default 30 min), rounded down to whole Intervals.
	Duration time.Duration
	// Interval is the time one row covers (default 1 min).
	Interval time.Duration
	// ResultTTL is how long completed jobs are kept (default 5 min).
	ResultTTL time.Duration
	// SweepInterval is the client's Config.SweepInterval (default the client's, 1 min).
	SweepInterval time.Duration
	// FailEvery: one job in FailEvery fails its first attempt and is retried (default 100).
	FailEvery int
	// Vacuum, on PostgreSQL, runs VACUUM (ANALYZE) on the soak's tables every Vacuum, as
	// autovacuum would, for a server whose autovacuum is off (default never).
	Vacuum time.Duration
	// ProfileDir, when set, receives heap and goroutine profiles of the process after the
	// first row past the warm-up and after the last row (heap-N.pprof, goroutine-N.pprof, N
	// the row), to compare with go tool pprof -base.
	ProfileDir string
	// OnRow, when set, is called with each row as soon as it is measured.
	OnRow func(SoakRow)
}

// Defaults of SoakConfig.
const (
	DefaultSoakDuration  = 30 * time.Minute
	DefaultSoakInterval  = time.Minute
	DefaultSoakResultTTL = 5 * time.Minute
	defaultSweepInterval = time.Minute // the client's default
)

func (c SoakConfig) withDefaults() SoakConfig {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Duration, DefaultSoakDuration)
	def(&c.Interval, DefaultSoakInterval)
	def(&c.ResultTTL, DefaultSoakResultTTL)
	if c.Synchronous == "" {
		c.Synchronous = "FULL"
	}
	if c.Workers == 0 {
		c.Workers = 100
	}
	if c.Conns == 0 {
		c.Conns = 16
	}
	if c.FailEvery == 0 {
		c.FailEvery = 100
	}
	return c
}

// Validate reports the first bad setting of c (after defaults). The messages name the
// settings as the command's flags do.
func (c SoakConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Duration < 0:
		return fmt.Errorf("soak: duration %s must be positive", c.Duration)
	case c.Interval < 0:
		return fmt.Errorf("soak: soak interval %s must be positive", c.Interval)
	case c.Interval > c.Duration:
		return fmt.Errorf("soak: soak interval %s is longer than the duration %s", c.Interval, c.Duration)
	case c.Rate < 0 || c.Rate > MaxRate:
		return fmt.Errorf("soak: rate %d is outside 0–%d enqueues per second (0 measures)", c.Rate, MaxRate)
	case c.ResultTTL < 0:
		return fmt.Errorf("soak: result ttl %s must not be negative", c.ResultTTL)
	case c.SweepInterval < 0 || c.SweepInterval > 0 && c.SweepInterval < 100*time.Millisecond:
		return fmt.Errorf("soak: sweep interval %s must be at least 100ms (0 for the default)", c.SweepInterval)
	case c.Vacuum < 0:
		return fmt.Errorf("soak: vacuum every %s must not be negative", c.Vacuum)
	case c.FailEvery < 1:
		return fmt.Errorf("soak: fail every %d must be positive", c.FailEvery)
	case c.Workers < 1 || c.Conns < 0:
		return errors.New("soak: workers must be positive and conns not negative")
	}
	return Config{Synchronous: c.Synchronous}.Validate()
}

// SoakResult is what the soak scenario measured. The JSON names are stable: scripts read them.
type SoakResult struct {
	Rows    []SoakRow   `json:"rows"`
	Summary SoakSummary `json:"summary"`
}

// SoakSummary is the run's settings, totals and verdicts.
type SoakSummary struct {
	Store        string  `json:"store"`
	Durability   string  `json:"durability"`
	CPUs         int     `json:"cpus"`
	GoVersion    string  `json:"go_version"`
	Rate         int     `json:"rate"`
	MeasuredMax  float64 `json:"measured_max_jobs_per_sec,omitempty"` // when Rate was not given
	Workers      int     `json:"workers"`
	DurationSec  float64 `json:"duration_sec"`
	IntervalSec  float64 `json:"interval_sec"`
	ResultTTLSec float64 `json:"result_ttl_sec"`
	SweepSec     float64 `json:"sweep_interval_sec"`
	FailEvery    int     `json:"fail_every"`
	Enqueued     int64   `json:"enqueued"`
	Completed    int64   `json:"completed"`
	Failed       int64   `json:"failed"`  // first attempts that failed and were scheduled again
	Retried      int64   `json:"retried"` // attempts after the first that started
	Swept        int64   `json:"swept"`
	EnqueueErrs  int64   `json:"enqueue_errors"`
	// WarmupRows are the first rows, before the first jobs could be swept (ResultTTL plus one
	// SweepInterval), left out of the verdicts: until then the table only fills.
	WarmupRows   int       `json:"warmup_rows"`
	Compared     int       `json:"compared_rows"`              // rows averaged at each end of the verdicts
	Autovacuum   string    `json:"autovacuum,omitempty"`       // PostgreSQL: the server's setting
	VacuumSec    float64   `json:"vacuum_every_sec,omitempty"` // the soak's own vacuum (SoakConfig.Vacuum)
	ClaimP99Max  float64   `json:"claim_p99_max_ms"`
	SweepMaxMs   float64   `json:"sweep_max_ms"`
	Verdicts     []Verdict `json:"verdicts"`
	WriteCounter string    `json:"wal_counter"` // what wal_bytes counts on this store
}

// JSON renders r as one JSON object: the rows and the summary.
func (r *SoakResult) JSON() []byte {
	b, _ := json.Marshal(r) // plain numbers and strings always marshal
	return b
}

// Soak runs the soak scenario on a fresh store of cfg's kind and returns its rows and
// verdicts. It removes the temporary database it created.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	res := &SoakResult{Summary: SoakSummary{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Workers: cfg.Workers, FailEvery: cfg.FailEvery, ResultTTLSec: cfg.ResultTTL.Seconds(),
		IntervalSec: cfg.Interval.Seconds()}}
	if cfg.Rate == 0 {
		burn, err := Run(ctx, Config{Database: cfg.Database, Synchronous: cfg.Synchronous, Conns: cfg.Conns,
			Workers: cfg.Workers, LatencyJobs: -1})
		if err != nil {
			return nil, fmt.Errorf("measure the maximum throughput: %w", err)
		}
		res.Summary.MeasuredMax = burn.JobsPerSec
		cfg.Rate = max(1, int(burn.JobsPerSec/2))
		// The measurement's garbage would otherwise be the first rows' RSS.
		runtime.GC()
		debug.FreeOSMemory()
	}
	res.Summary.Rate = cfg.Rate
	res.Summary.SweepSec = cfg.sweepEvery().Seconds()
	if err := soakRun(ctx, cfg, res); err != nil {
		return nil, err
	}
	res.Summary.WarmupRows = cfg.warmupRows()
	res.Summary.Verdicts, res.Summary.Compared = verdicts(res.Rows[res.Summary.WarmupRows:])
	return res, nil
}

// sweepEvery is the client's sweep interval.
func (c SoakConfig) sweepEvery() time.Duration {
	if c.SweepInterval == 0 {
		return defaultSweepInterval
	}
	return c.SweepInterval
}

// rows is the number of rows the run measures.
func (c SoakConfig) rows() int { return int(c.Duration / c.Interval) }

// warmupRows is how many rows end before the first jobs can have been swept (ResultTTL plus
// one sweep interval), but never so many that fewer than two rows are left for the verdicts.
func (c SoakConfig) warmupRows() int {
	w := int((c.ResultTTL + c.sweepEvery() + c.Interval - 1) / c.Interval)
	if c.rows()-w < 2 {
		return 0
	}
	return w
}

// soakRun opens the store, runs the load and fills res's rows and totals.
func soakRun(ctx context.Context, cfg SoakConfig, res *SoakResult) error {
	db, err := openSoakDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer db.close()
	res.Summary.Store, res.Summary.Durability = db.name, durability(ctx, Config{Database: cfg.Database, Synchronous: cfg.Synchronous})
	res.Summary.WriteCounter, res.Summary.Autovacuum = db.probe.counter(), db.probe.autovacuum(ctx)
	timed := newTimedStore(db.store)
	load := newSoakLoad(cfg.FailEvery)
	client, err := hopper.NewClient(hopper.Config{Store: timed.wrapped(), Workers: load.workers(),
		MaxWorkers: cfg.Workers, ResultTTL: cfg.ResultTTL, SweepInterval: cfg.SweepInterval,
		RetryPolicy: soakRetry, Observers: []hopper.Observer{load}})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx) // the rows are measured; a slow stop changes none of them
	}()
	r := &soakRig{cfg: cfg, client: client, timed: timed, load: load, sampler: newSampler(ctx, db.probe)}
	if db.schema != "" && cfg.Vacuum > 0 {
		r.vacuum = &vacuumer{url: cfg.Database, schema: db.schema, every: cfg.Vacuum}
		res.Summary.VacuumSec = cfg.Vacuum.Seconds()
	}
	return r.loop(ctx, res)
}

// soakRetry retries a failed first attempt soon, so the retries happen within the run.
var soakRetry = hopper.RetryPolicy{Base: 200 * time.Millisecond, Multiplier: 2, Cap: 2 * time.Second}

// soakRig is what a soak runs: the client, the timed store under it, the load, the sampler
// and the vacuum.
type soakRig struct {
	cfg     SoakConfig
	client  *hopper.Client
	timed   *timedStore
	load    *soakLoad
	sampler *sampler
	vacuum  *vacuumer // nil unless SoakConfig.Vacuum on PostgreSQL
}

// loop paces the enqueues and measures one row each interval until the duration is over.
func (r *soakRig) loop(ctx context.Context, res *SoakResult) error {
	cfg := r.cfg
	paceCtx, stopPace := context.WithCancel(ctx)
	pacer := newPacer(r.client, r.load, cfg.Rate)
	var wg sync.WaitGroup
	wg.Go(func() { pacer.run(paceCtx) })
	wg.Go(func() { r.sampler.floor.run(paceCtx, min(time.Second, cfg.Interval/4)) })
	if r.vacuum != nil {
		wg.Go(func() { r.vacuum.run(paceCtx) })
	}
	defer func() {
		stopPace()
		wg.Wait()
	}()
	rows, warmup := cfg.rows(), cfg.warmupRows()
	start := time.Now()
	for i := 1; i <= rows; i++ {
		t := time.NewTimer(time.Until(start.Add(time.Duration(i) * cfg.Interval)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		row := r.sampler.row(ctx, i, time.Since(start), r.timed, r.load)
		vac, vacErrs := r.vacuum.take()
		row.VacuumMs, row.VacuumErrors = ms(vac), vacErrs
		res.Rows = append(res.Rows, row)
		res.Summary.add(row)
		if cfg.OnRow != nil {
			cfg.OnRow(row)
		}
		if cfg.ProfileDir != "" && (i == min(warmup+1, rows) || i == rows) {
			if err := writeProfiles(cfg.ProfileDir, i); err != nil {
				return err
			}
		}
	}
	res.Summary.DurationSec = time.Since(start).Seconds()
	return nil
}

// add counts a row into the totals.
func (s *SoakSummary) add(r SoakRow) {
	s.Enqueued += r.Enqueued
	s.Completed += r.Completed
	s.Failed += r.Failed
	s.Retried += r.Retried
	s.Swept += r.Swept
	s.EnqueueErrs += r.EnqueueErrors
	s.ClaimP99Max = max(s.ClaimP99Max, r.ClaimP99Ms)
	s.SweepMaxMs = max(s.SweepMaxMs, r.SweepMaxMs)
}
