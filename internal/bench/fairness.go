package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/hopperjobs/hopper"
)

// The fairness scenario (docs/flow-control.md): queue "flood" holds a backlog of FloodJobs
// no-op jobs while queue "trickle" receives Rate jobs a second, both worked by one process
// with Workers slots. It measures the trickle jobs' enqueue→start latency with weights 1:1,
// then, with both queues backlogged, the share of starts each queue gets with weights 1:1
// and 3:1 (flood:trickle).

// FairnessResult is what the fairness scenario measured. The JSON names are stable.
type FairnessResult struct {
	Workers            int     `json:"workers"`
	FloodJobs          int     `json:"flood_jobs"`
	TrickleRate        int     `json:"trickle_rate"`
	TrickleJobs        int     `json:"trickle_jobs"`
	TrickleLatencyP50  float64 `json:"trickle_latency_p50_ms"`
	TrickleLatencyP99  float64 `json:"trickle_latency_p99_ms"`
	TrickleLatencyMax  float64 `json:"trickle_latency_max_ms"`
	FloodLeft          int64   `json:"flood_left"` // flood jobs still queued when the trickle phase ended
	Shares             []Share `json:"shares"`
	Store              string  `json:"store"`
	Durability         string  `json:"durability"`
	CPUs               int     `json:"cpus"`
	GoVersion          string  `json:"go_version"`
	SharedWindowMillis int64   `json:"share_window_ms"`
}

// Share is how the starts of two backlogged queues split under one pair of weights.
type Share struct {
	FloodWeight   int     `json:"flood_weight"`
	TrickleWeight int     `json:"trickle_weight"`
	Flood         float64 `json:"flood"`   // fraction of the starts in the window
	Trickle       float64 `json:"trickle"` // fraction of the starts in the window
	Starts        int64   `json:"starts"`
}

// JSON renders r as one JSON object.
func (r *FairnessResult) JSON() []byte {
	b, _ := json.Marshal(r) // plain numbers and strings always marshal
	return b
}

// fairnessWindow is how long the shares are counted, after fairnessWarmup (variables: the
// package's tests shorten them).
var (
	fairnessWarmup = time.Second
	fairnessWindow = 3 * time.Second
)

// Fairness runs the fairness scenario on fresh stores of cfg's kind. cfg.Jobs is the flood's
// backlog (default 200,000), cfg.Workers the process's slots (default 20), cfg.Rate the
// trickle's enqueues per second (default 100) and cfg.LatencyJobs how many it enqueues
// (default 1,000).
func Fairness(ctx context.Context, cfg Config) (*FairnessResult, error) {
	if cfg.Jobs == 0 {
		cfg.Jobs = 200_000
	}
	if cfg.Workers == 0 {
		cfg.Workers = 20
	}
	if cfg.Rate == 0 {
		cfg.Rate = 100
	}
	if cfg.LatencyJobs <= 0 {
		cfg.LatencyJobs = 1000
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	res := &FairnessResult{Workers: cfg.Workers, FloodJobs: cfg.Jobs, TrickleRate: cfg.Rate,
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), SharedWindowMillis: fairnessWindow.Milliseconds()}
	if err := trickleLatency(ctx, cfg, res); err != nil {
		return nil, fmt.Errorf("trickle latency: %w", err)
	}
	for _, w := range [][2]int{{1, 1}, {3, 1}} {
		sh, err := shares(ctx, cfg, w[0], w[1])
		if err != nil {
			return nil, fmt.Errorf("shares %d:%d: %w", w[0], w[1], err)
		}
		res.Shares = append(res.Shares, *sh)
	}
	return res, nil
}

// fairWorker is the no-op worker of both queues: it counts starts per queue from a moment on,
// and records the trickle jobs' enqueue→start latencies.
type fairWorker struct {
	mu        sync.Mutex
	counting  bool
	starts    map[string]int64
	latencies []time.Duration
	trickled  chan struct{} // one send per trickle job started
	started   chan struct{} // closed at the first start (shares only)
	once      sync.Once
}

func (f *fairWorker) workers() *hopper.Workers {
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[noop]) error {
		if f.started != nil {
			f.once.Do(func() { close(f.started) })
		}
		f.mu.Lock()
		if f.counting {
			f.starts[job.Queue]++
		}
		if job.Queue == "trickle" && job.Args.T != 0 {
			f.latencies = append(f.latencies, time.Since(time.Unix(0, job.Args.T)))
			f.mu.Unlock()
			f.trickled <- struct{}{}
			return nil
		}
		f.mu.Unlock()
		return nil
	})
	return ws
}

// fairClient opens a fresh store with backlog jobs in each named queue and returns a client
// working flood and trickle with the weights.
func fairClient(ctx context.Context, cfg Config, f *fairWorker, backlog map[string]int, wFlood, wTrickle int) (*hopper.Client, func(), string, error) {
	st, storeName, cleanup, err := openStore(ctx, cfg)
	if err != nil {
		return nil, nil, "", err
	}
	enq, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		cleanup()
		return nil, nil, "", err
	}
	for queue, n := range backlog {
		for done := 0; done < n; {
			batch := make([]hopper.EnqueueParams, min(cfg.Batch, n-done))
			for i := range batch {
				batch[i] = hopper.EnqueueParams{Args: noop{}, Opts: &hopper.InsertOpts{Queue: queue}}
			}
			if _, err := enq.EnqueueMany(ctx, batch); err != nil {
				cleanup()
				return nil, nil, "", fmt.Errorf("enqueue: %w", err)
			}
			done += len(batch)
		}
	}
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: f.workers(), MaxWorkers: cfg.Workers, ClaimAhead: cfg.ClaimAhead,
		Queues: map[string]hopper.QueueConfig{
			"flood":   {MaxWorkers: cfg.Workers, Weight: wFlood},
			"trickle": {MaxWorkers: cfg.Workers, Weight: wTrickle},
		}})
	if err != nil {
		cleanup()
		return nil, nil, "", err
	}
	return client, cleanup, storeName, nil
}

// trickleLatency: flood backlogged, trickle at cfg.Rate, weights 1:1.
func trickleLatency(ctx context.Context, cfg Config, res *FairnessResult) error {
	f := &fairWorker{starts: map[string]int64{}, trickled: make(chan struct{}, cfg.LatencyJobs)}
	client, cleanup, storeName, err := fairClient(ctx, cfg, f, map[string]int{"flood": cfg.Jobs}, 1, 1)
	if err != nil {
		return err
	}
	defer cleanup()
	res.Store, res.Durability = storeName, durability(ctx, cfg)
	if err := client.Start(ctx); err != nil {
		return err
	}
	defer client.Stop(context.Background())
	if err := paced(ctx, cfg.Rate, cfg.LatencyJobs, func() error {
		_, err := client.Enqueue(ctx, noop{T: time.Now().UnixNano()}, &hopper.InsertOpts{Queue: "trickle"})
		return err
	}); err != nil {
		return err
	}
	for range cfg.LatencyJobs {
		select {
		case <-f.trickled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	qs, err := client.Queues(ctx)
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.Name == "flood" {
			res.FloodLeft = q.Counts[hopper.StateQueued]
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	res.TrickleJobs = len(f.latencies)
	res.TrickleLatencyP50 = percentileMs(f.latencies, 0.50)
	res.TrickleLatencyP99 = percentileMs(f.latencies, 0.99)
	res.TrickleLatencyMax = percentileMs(f.latencies, 1)
	return nil
}

// shares: both queues backlogged with cfg.Jobs/2 jobs each; the starts of each in a window.
func shares(ctx context.Context, cfg Config, wFlood, wTrickle int) (*Share, error) {
	f := &fairWorker{starts: map[string]int64{}, trickled: make(chan struct{}), started: make(chan struct{})}
	backlog := map[string]int{"flood": cfg.Jobs / 2, "trickle": cfg.Jobs / 2}
	client, cleanup, _, err := fairClient(ctx, cfg, f, backlog, wFlood, wTrickle)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	defer client.Stop(context.Background())
	wait := func(d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// The warm-up runs from the first start: a loaded machine may take longer than the whole
	// window to open the store and claim.
	select {
	case <-f.started:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := wait(fairnessWarmup); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.counting = true
	f.mu.Unlock()
	if err := wait(fairnessWindow); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.counting = false
	flood, trickle := f.starts["flood"], f.starts["trickle"]
	f.mu.Unlock()
	total := flood + trickle
	if total == 0 {
		return nil, fmt.Errorf("no job started in %s", fairnessWindow)
	}
	if qs, err := client.Queues(ctx); err == nil {
		for _, q := range qs {
			if q.Counts[hopper.StateQueued] == 0 {
				return nil, fmt.Errorf("queue %s ran dry during the window: use more --jobs", q.Name)
			}
		}
	}
	return &Share{FloodWeight: wFlood, TrickleWeight: wTrickle, Flood: float64(flood) / float64(total),
		Trickle: float64(trickle) / float64(total), Starts: total}, nil
}
