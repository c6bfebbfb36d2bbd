// Package bench measures Hopper end to end with no-op jobs: enqueue rate, work throughput, and
// enqueue→start latency at a fixed enqueue rate. `hopper bench` prints its Result.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperprom"
	"github.com/hopperjobs/hopper/internal/workerapi"
)

// Config says what to measure. Zero fields take the defaults in their comments.
type Config struct {
	// Jobs is the number of no-op jobs of the throughput phase (default 20,000).
	Jobs int
	// Workers is the client's MaxWorkers (default 100).
	Workers int
	// Work is how long each job's handler takes (it sleeps; default 0, a no-op job), to
	// measure jobs that are not instant: where a worker's slots wait on the round trips
	// between jobs.
	Work time.Duration
	// Batch is the EnqueueMany batch size of the throughput phase (default 1,000).
	Batch int
	// LatencyJobs is the number of jobs of the latency phase, enqueued one by one at Rate
	// (default 1,000; negative skips the phase).
	LatencyJobs int
	// Rate is the enqueues per second of the latency phase (default 200).
	Rate int
	// Database is the SQLite file, or a postgres:// URL (the run then uses a fresh schema,
	// dropped afterwards); empty uses a fresh SQLite file in a temporary directory.
	Database string
	// Synchronous is SQLite's synchronous setting (default FULL).
	Synchronous string
	// Conns bounds the PostgreSQL connection pool (default 16).
	Conns int
	// KindCap, when positive, sets a fleet-wide cap of that many running jobs on the no-op
	// kind, to measure what the cap costs.
	KindCap int
	// KindRate, when not zero, sets a fleet-wide rate limit on the no-op kind, to measure
	// what a rate-limited claim costs (with a limit far above the throughput) or that the
	// throughput follows the limit.
	KindRate hopper.Rate
	// Metrics counts every job with hopper serve's Prometheus job metrics (a
	// hopperprom.Metrics among the client's observers), to measure what they cost.
	Metrics bool
	// Server, when set, measures a running server at this URL instead of a database: jobs go
	// through its API and are worked by a remote worker in this process.
	Server string
	// Mode is how the remote worker gets jobs from Server: "stream" (default) or "poll".
	Mode string
	// Prefetch is the remote worker's Config.Prefetch in stream mode (with Server, or in
	// Compare's stream run): jobs it holds beyond Workers, waiting for a slot.
	Prefetch int
	// ClaimAhead is the in-process client's Config.ClaimAhead: 0 the default,
	// hopper.NoClaimAhead none, at most hopper.MaxClaimAhead.
	ClaimAhead int
	// APIKey is sent to Server.
	APIKey string
	// Rows is the number of finished jobs the retained scenario fills the store with before it
	// measures (0, the default, measures the empty store the same way). Other runs ignore it.
	Rows int
	// Progress, when set, receives a line for each step of a long scenario (the retained
	// scenario's fill). Nil is silent.
	Progress io.Writer
	// Rounds is how many times the workflow scenario runs its plain and one-queue runs, in
	// turn (default 1, at most MaxRounds): it reports the median of each round's ratio, so
	// that a machine whose speed drifts between runs does not decide the ratio. Other runs
	// ignore it.
	Rounds int
}

// MaxRounds bounds Config.Rounds.
const MaxRounds = 20

// Result is what one run measured. The JSON names are stable: scripts read them.
type Result struct {
	Jobs          int     `json:"jobs"`
	Workers       int     `json:"workers"`
	WorkMs        float64 `json:"work_ms,omitempty"`     // Config.Work: how long each job took
	Prefetch      int     `json:"prefetch,omitempty"`    // Config.Prefetch of a remote stream run
	ClaimAhead    int     `json:"claim_ahead,omitempty"` // Config.ClaimAhead of an in-process run, when set
	EnqueuePerSec float64 `json:"enqueue_per_sec"`
	JobsPerSec    float64 `json:"jobs_per_sec"`
	LatencyP50Ms  float64 `json:"latency_p50_ms"`
	LatencyP99Ms  float64 `json:"latency_p99_ms"`
	LatencyJobs   int     `json:"latency_jobs"`
	LatencyRate   int     `json:"latency_rate"`
	AllocPerJob   float64 `json:"alloc_bytes_per_job"`
	// WALPerJob and WriteXactsPerJob (PostgreSQL only) are the server's WAL bytes and write
	// transactions (transaction ids assigned) during the throughput phase's work, per job:
	// the whole server's, so a quiet server is needed for them to mean anything.
	WALPerJob        float64 `json:"wal_bytes_per_job,omitempty"`
	WriteXactsPerJob float64 `json:"write_xacts_per_job,omitempty"`
	KindCap          int     `json:"kind_cap,omitempty"`
	KindRate         string  `json:"kind_rate,omitempty"` // N/DURATION
	Store            string  `json:"store"`
	Durability       string  `json:"durability"`
	CPUs             int     `json:"cpus"`
	GoVersion        string  `json:"go_version"`
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Jobs, 20000)
	def(&c.Workers, 100)
	def(&c.Batch, 1000)
	def(&c.LatencyJobs, 1000)
	def(&c.Rate, 200)
	if c.Synchronous == "" {
		c.Synchronous = "FULL"
	}
	if c.Mode == "" {
		c.Mode = "stream"
	}
	def(&c.Conns, 16)
	def(&c.Rounds, 1)
	return c
}

type noop struct {
	// T is the enqueue time in unix nanoseconds (latency phase only).
	T int64 `json:"t,omitempty"`
}

func (noop) Kind() string { return "bench-noop" }

// MaxRate bounds Config.Rate: the latency phase enqueues one job per 1 s / Rate, which must
// stay a positive interval (and one job a microsecond is already more than any store takes).
const MaxRate = 1_000_000

// Validate reports the first bad setting of cfg (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	switch {
	case c.Jobs < 1 || c.Workers < 1 || c.Batch < 1 || c.Rate < 1:
		return errors.New("bench: jobs, workers, batch and rate must be positive")
	case c.Rate > MaxRate:
		return fmt.Errorf("bench: rate %d is more than %d enqueues per second", c.Rate, MaxRate)
	case c.Conns < 0:
		return errors.New("bench: conns must not be negative")
	case c.KindCap < 0 || c.KindCap > math.MaxInt32:
		return fmt.Errorf("bench: kind cap %d is outside 0–%d", c.KindCap, math.MaxInt32)
	case c.Rows < 0 || c.Rows > MaxRows:
		return fmt.Errorf("bench: rows %d is outside 0–%d", c.Rows, MaxRows)
	case c.Work < 0 || c.Work > MaxWork:
		return fmt.Errorf("bench: work %s is outside 0–%s", c.Work, MaxWork)
	case c.Rounds < 1 || c.Rounds > MaxRounds:
		return fmt.Errorf("bench: rounds %d is outside 1–%d", c.Rounds, MaxRounds)
	case c.LatencyJobs < -1:
		return errors.New("bench: latency jobs must be positive, 0 for the default or -1 to skip")
	case c.Mode != "stream" && c.Mode != "poll":
		return fmt.Errorf("bench: mode %q: want stream or poll", c.Mode)
	case c.Server != "" && c.Workers > workerapi.MaxStreamCredit:
		return fmt.Errorf("bench: a remote worker runs at most %d jobs at once", workerapi.MaxStreamCredit)
	case c.Prefetch < 0 || c.Prefetch > 0 && c.Workers+c.Prefetch > workerapi.MaxStreamCredit:
		return fmt.Errorf("bench: prefetch %d: workers and prefetch together are a stream's credit, at most %d", c.Prefetch, workerapi.MaxStreamCredit)
	case c.Prefetch > 0 && c.Mode == "poll":
		return errors.New("bench: prefetch is for stream mode (poll mode claims ahead)")
	case c.ClaimAhead < hopper.NoClaimAhead || c.ClaimAhead > hopper.MaxClaimAhead:
		return fmt.Errorf("bench: claim ahead %d is outside -1–%d", c.ClaimAhead, hopper.MaxClaimAhead)
	case c.ClaimAhead != 0 && c.Server != "":
		return errors.New("bench: claim ahead is the in-process client's (a remote worker's is --prefetch)")
	case c.Server != "" && (c.KindCap > 0 || !c.KindRate.IsZero()):
		return errors.New("bench: --kind-cap and --kind-rate are not supported with --server")
	}
	switch strings.ToUpper(c.Synchronous) {
	case "FULL", "EXTRA", "NORMAL":
		return nil
	}
	return fmt.Errorf("bench: synchronous %q: want FULL, EXTRA or NORMAL", c.Synchronous)
}

// Run measures and returns the result. It removes the temporary database it created.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Server != "" {
		return runRemote(ctx, cfg)
	}
	st, storeName, cleanup, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res := newResult(ctx, cfg, storeName)
	if err := measure(ctx, cfg, st, res); err != nil {
		return nil, err
	}
	return res, nil
}

// newResult is a Result with the run's settings filled in.
func newResult(ctx context.Context, cfg Config, storeName string) *Result {
	return &Result{Jobs: cfg.Jobs, Workers: cfg.Workers, WorkMs: ms(cfg.Work), ClaimAhead: cfg.ClaimAhead, Store: storeName, Durability: durability(ctx, cfg),
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LatencyRate: cfg.Rate}
}

// measure runs the standard benchmark on st: the throughput phase, then the latency phase.
func measure(ctx context.Context, cfg Config, st hopper.Store, res *Result) error {
	if err := throughput(ctx, cfg, st, res); err != nil {
		return err
	}
	if cfg.LatencyJobs > 0 {
		return latency(ctx, cfg, st, res)
	}
	return nil
}

// MaxWork bounds Config.Work.
const MaxWork = time.Minute

// counter is the benchmark's worker: it counts starts, records enqueue→start latencies and
// takes work for each job (no time at all by default).
type counter struct {
	work      time.Duration // each job's handler sleeps this long
	started   atomic.Int64
	allDone   chan struct{}
	target    int64
	mu        sync.Mutex
	latencies []time.Duration
}

func (c *counter) workers() *hopper.Workers {
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[noop]) error {
		if job.Args.T != 0 {
			d := time.Since(time.Unix(0, job.Args.T))
			c.mu.Lock()
			c.latencies = append(c.latencies, d)
			c.mu.Unlock()
		}
		if c.work > 0 {
			t := time.NewTimer(c.work)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		if c.started.Add(1) == c.target {
			close(c.allDone)
		}
		return nil
	})
	return ws
}

func newClient(cfg Config, st hopper.Store, ws *hopper.Workers) (*hopper.Client, error) {
	return hopper.NewClient(hopper.Config{Store: st, Workers: ws, MaxWorkers: cfg.Workers, ClaimAhead: cfg.ClaimAhead,
		Observers: observers(cfg)})
}

// observers are the client's observers: hopper serve's job metrics with Config.Metrics.
func observers(cfg Config) []hopper.Observer {
	if !cfg.Metrics {
		return nil
	}
	return []hopper.Observer{hopperprom.New()}
}

func throughput(ctx context.Context, cfg Config, st hopper.Store, res *Result) error {
	enq, err := newClient(cfg, st, nil)
	if err != nil {
		return err
	}
	if cfg.KindCap > 0 {
		if err := enq.SetLimit(ctx, hopper.Limit{Kind: noop{}.Kind(), MaxRunning: cfg.KindCap}); err != nil {
			return err
		}
		res.KindCap = cfg.KindCap
	}
	if !cfg.KindRate.IsZero() {
		if err := enq.SetRateLimit(ctx, hopper.RateLimit{Kind: noop{}.Kind(), Rate: cfg.KindRate}); err != nil {
			return err
		}
		res.KindRate = cfg.KindRate.String()
	}
	start := time.Now()
	for done := 0; done < cfg.Jobs; {
		n := min(cfg.Batch, cfg.Jobs-done)
		batch := make([]hopper.EnqueueParams, n)
		for i := range batch {
			batch[i] = hopper.EnqueueParams{Args: noop{}}
		}
		if _, err := enq.EnqueueMany(ctx, batch); err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
		done += n
	}
	res.EnqueuePerSec = float64(cfg.Jobs) / time.Since(start).Seconds()

	cnt := &counter{work: cfg.Work, allDone: make(chan struct{}), target: int64(cfg.Jobs)}
	client, err := newClient(cfg, st, cnt.workers())
	if err != nil {
		return err
	}
	var cost *serverCost
	var costBefore costReading
	if IsPostgres(cfg.Database) {
		if cost, err = openServerCost(ctx, cfg.Database); err != nil {
			return err
		}
		defer cost.close()
		if costBefore, err = cost.read(ctx); err != nil {
			return err
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start = time.Now()
	if err := client.Start(ctx); err != nil {
		return err
	}
	select {
	case <-cnt.allDone:
	case <-ctx.Done():
	}
	// Stop flushes every outcome: the clock stops once all N completions are durable.
	if err := client.Stop(context.Background()); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	res.JobsPerSec = float64(cfg.Jobs) / elapsed.Seconds()
	res.AllocPerJob = float64(after.TotalAlloc-before.TotalAlloc) / float64(cfg.Jobs)
	if cost != nil {
		costAfter, err := cost.read(ctx)
		if err != nil {
			return err
		}
		res.WALPerJob, res.WriteXactsPerJob = costBefore.perJob(costAfter, cfg.Jobs)
	}
	return nil
}

func latency(ctx context.Context, cfg Config, st hopper.Store, res *Result) error {
	cnt := &counter{allDone: make(chan struct{}), target: int64(cfg.LatencyJobs)}
	client, err := newClient(cfg, st, cnt.workers())
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer client.Stop(context.Background())
	if err := paced(ctx, cfg.Rate, cfg.LatencyJobs, func() error {
		_, err := client.Enqueue(ctx, noop{T: time.Now().UnixNano()}, nil)
		return err
	}); err != nil {
		return err
	}
	select {
	case <-cnt.allDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	cnt.mu.Lock()
	defer cnt.mu.Unlock()
	res.LatencyJobs = len(cnt.latencies)
	res.LatencyP50Ms = percentileMs(cnt.latencies, 0.50)
	res.LatencyP99Ms = percentileMs(cnt.latencies, 0.99)
	return nil
}

// paced calls enqueue n times, rate times a second.
func paced(ctx context.Context, rate, n int, enqueue func() error) error {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for range n {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if err := enqueue(); err != nil {
			return fmt.Errorf("enqueue: %w", err)
		}
	}
	return nil
}

// durability names the store's commit durability setting, for the report.
func durability(ctx context.Context, cfg Config) string {
	if IsPostgres(cfg.Database) {
		return postgresDurability(ctx, cfg.Database)
	}
	return "synchronous=" + cfg.Synchronous
}

func percentileMs(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s)-1) * p)
	return float64(s[i]) / float64(time.Millisecond)
}

// JSON renders r as one JSON object.
func (r *Result) JSON() []byte {
	b, _ := json.Marshal(r) // plain numbers and strings always marshal
	return b
}
