package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper"
)

// The tenants scenario (docs/flow-control.md, "Fairness between tenants"): in one queue worked
// by one process with Workers slots, one tenant (fairness key) has a backlog of Jobs no-op jobs
// while QuietTenants others enqueue one job a second each for Duration. It measures the quiet
// tenants' enqueue→start latency three times, each on a fresh store: with the flood and
// fairness keys, without the flood, and with the flood but no fairness keys (first in, first
// out: the quiet jobs wait behind the flood), so that the ratio to the run without the flood is
// read off one run.

// QuietTenants is how many quiet tenants the tenants scenario runs, one job a second each.
const QuietTenants = 9

// DefaultTenantsJobs and DefaultTenantsDuration are the tenants scenario's flood and how long
// the quiet tenants enqueue.
const (
	DefaultTenantsJobs     = 100_000
	DefaultTenantsDuration = 30 * time.Second
)

// TenantsResult is what the tenants scenario measured. The JSON names are stable.
type TenantsResult struct {
	Workers      int         `json:"workers"`
	FloodJobs    int         `json:"flood_jobs"`
	QuietTenants int         `json:"quiet_tenants"`
	DurationMs   int64       `json:"duration_ms"`
	Flood        *TenantsRun `json:"flood"`         // the flood, every job with its tenant's key
	NoFlood      *TenantsRun `json:"no_flood"`      // the quiet tenants alone
	FloodNoKeys  *TenantsRun `json:"flood_no_keys"` // the flood, no job with a key
	P50Ratio     float64     `json:"p50_ratio"`     // Flood's p50 over NoFlood's
	P99Ratio     float64     `json:"p99_ratio"`     // Flood's p99 over NoFlood's
	Store        string      `json:"store"`
	Durability   string      `json:"durability"`
	CPUs         int         `json:"cpus"`
	GoVersion    string      `json:"go_version"`
}

// TenantsRun is one run of the tenants scenario: the enqueue→start latency of the quiet jobs
// enqueued while flood jobs were left to start (all of them without a flood), and how many
// flood jobs were left when the last quiet job was enqueued (0 in a run with a flood says it
// ran dry before the end: QuietAfter jobs came after it, and are not in the figures).
type TenantsRun struct {
	FairnessKeys bool    `json:"fairness_keys"`
	FloodJobs    int     `json:"flood_jobs"`
	QuietJobs    int     `json:"quiet_jobs"`
	QuietAfter   int     `json:"quiet_after_flood"`
	P50Ms        float64 `json:"p50_ms"`
	P99Ms        float64 `json:"p99_ms"`
	MaxMs        float64 `json:"max_ms"`
	FloodLeft    int64   `json:"flood_left"`
	// FloodPerSec is the flood jobs started a second from the first start to the last quiet
	// enqueue (or to the flood's last start, if it ran dry before): the throughput beside the
	// quiet tenants.
	FloodPerSec float64 `json:"flood_per_sec,omitempty"`
}

// JSON renders r as one JSON object.
func (r *TenantsResult) JSON() []byte {
	b, _ := json.Marshal(r) // plain numbers and strings always marshal
	return b
}

// tenantsQueue is the scenario's one queue.
const tenantsQueue = "tenants"

// Tenants runs the tenants scenario on fresh stores of cfg's kind: cfg.Jobs is the flood
// (default 100,000), cfg.Workers the process's slots (default 20), duration how long the quiet
// tenants enqueue (default 30 s; QuietTenants jobs a second).
func Tenants(ctx context.Context, cfg Config, duration time.Duration) (*TenantsResult, error) {
	if cfg.Jobs == 0 {
		cfg.Jobs = DefaultTenantsJobs
	}
	if cfg.Workers == 0 {
		cfg.Workers = 20
	}
	if duration == 0 {
		duration = DefaultTenantsDuration
	}
	if duration < time.Second/QuietTenants {
		return nil, fmt.Errorf("bench: duration %s is shorter than one quiet job's interval (%s)", duration, time.Second/QuietTenants)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	res := &TenantsResult{Workers: cfg.Workers, FloodJobs: cfg.Jobs, QuietTenants: QuietTenants, DurationMs: duration.Milliseconds(),
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	quiet := int(duration * QuietTenants / time.Second)
	for _, run := range []struct {
		into  **TenantsRun
		flood int
		keys  bool
	}{{&res.NoFlood, 0, true}, {&res.Flood, cfg.Jobs, true}, {&res.FloodNoKeys, cfg.Jobs, false}} {
		r, err := tenantsRun(ctx, cfg, res, run.flood, quiet, run.keys)
		if err != nil {
			return nil, fmt.Errorf("tenants (flood %d, fairness keys %t): %w", run.flood, run.keys, err)
		}
		*run.into = r
	}
	if res.NoFlood.P50Ms > 0 {
		res.P50Ratio = res.Flood.P50Ms / res.NoFlood.P50Ms
	}
	if res.NoFlood.P99Ms > 0 {
		res.P99Ratio = res.Flood.P99Ms / res.NoFlood.P99Ms
	}
	return res, nil
}

// tenantJob is the scenario's no-op job. A quiet job carries its enqueue time (unix
// nanoseconds) and whether flood jobs were left to start then.
type tenantJob struct {
	T     int64 `json:"t,omitempty"`
	Flood bool  `json:"f,omitempty"`
}

func (tenantJob) Kind() string { return "bench-tenant" }

// quietWorker is the no-op worker of the scenario: it counts the flood's starts and records
// the quiet jobs' enqueue→start latencies, those enqueued during the flood apart.
type quietWorker struct {
	floodStarted atomic.Int64
	mu           sync.Mutex
	first, last  time.Time       // the first start, the flood's last start
	latencies    []time.Duration // of the quiet jobs enqueued during the flood (or with none)
	after        int             // quiet jobs enqueued after the flood ran dry
	started      chan struct{}   // closed at the first start
	once         sync.Once
	quiet        chan struct{} // one send per quiet job started
}

func (q *quietWorker) workers() *hopper.Workers {
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[tenantJob]) error {
		q.once.Do(func() {
			q.mu.Lock()
			q.first = time.Now()
			q.mu.Unlock()
			close(q.started)
		})
		if job.Args.T == 0 {
			q.floodStarted.Add(1)
			q.mu.Lock()
			q.last = time.Now()
			q.mu.Unlock()
			return nil
		}
		d := time.Since(time.Unix(0, job.Args.T))
		q.mu.Lock()
		if job.Args.Flood {
			q.latencies = append(q.latencies, d)
		} else {
			q.after++
		}
		q.mu.Unlock()
		q.quiet <- struct{}{}
		return nil
	})
	return ws
}

// tenantsRun is one run on a fresh store: flood jobs of tenant "flood" queued first, then
// quiet jobs enqueued one by one, QuietTenants a second, each of the next quiet tenant; keys
// says whether the jobs carry their tenant as fairness key.
func tenantsRun(ctx context.Context, cfg Config, res *TenantsResult, flood, quiet int, keys bool) (*TenantsRun, error) {
	st, storeName, cleanup, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res.Store, res.Durability = storeName, durability(ctx, cfg)
	key := func(tenant string) string {
		if keys {
			return tenant
		}
		return ""
	}
	enq, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		return nil, err
	}
	for done := 0; done < flood; {
		batch := make([]hopper.EnqueueParams, min(cfg.Batch, flood-done))
		for i := range batch {
			batch[i] = hopper.EnqueueParams{Args: tenantJob{}, Opts: &hopper.InsertOpts{Queue: tenantsQueue, FairnessKey: key("flood")}}
		}
		if _, err := enq.EnqueueMany(ctx, batch); err != nil {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
		done += len(batch)
	}
	q := &quietWorker{started: make(chan struct{}), quiet: make(chan struct{}, quiet)}
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: q.workers(), MaxWorkers: cfg.Workers, ClaimAhead: cfg.ClaimAhead,
		Queues: map[string]hopper.QueueConfig{tenantsQueue: {MaxWorkers: cfg.Workers}}})
	if err != nil {
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	defer client.Stop(context.Background())
	if flood > 0 { // the quiet tenants come once the flood is being worked
		select {
		case <-q.started:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	n := 0
	left := func() int64 { return int64(flood) - q.floodStarted.Load() }
	if err := paced(ctx, QuietTenants, quiet, func() error {
		tenant := fmt.Sprintf("quiet-%d", n%QuietTenants+1)
		n++
		args := tenantJob{T: time.Now().UnixNano(), Flood: flood == 0 || left() > 0}
		_, err := client.Enqueue(ctx, args, &hopper.InsertOpts{Queue: tenantsQueue, FairnessKey: key(tenant)})
		return err
	}); err != nil {
		return nil, err
	}
	run := &TenantsRun{FairnessKeys: keys, FloodJobs: flood, FloodLeft: left()}
	if flood > 0 {
		q.mu.Lock()
		end := time.Now()
		if run.FloodLeft == 0 {
			end = q.last
		}
		if d := end.Sub(q.first); d > 0 {
			run.FloodPerSec = float64(int64(flood)-run.FloodLeft) / d.Seconds()
		}
		q.mu.Unlock()
	}
	for range quiet {
		select {
		case <-q.quiet:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	run.QuietJobs, run.QuietAfter = len(q.latencies), q.after
	run.P50Ms = percentileMs(q.latencies, 0.50)
	run.P99Ms = percentileMs(q.latencies, 0.99)
	run.MaxMs = percentileMs(q.latencies, 1)
	return run, nil
}
