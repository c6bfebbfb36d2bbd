package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/remote"
)

// runRemote measures a running server: jobs are enqueued over the API and worked by a remote
// worker in this process (a job stream, or long polls). Its jobs go to a fresh queue named
// bench-<random> and stay in the server's database.
func runRemote(ctx context.Context, cfg Config) (*Result, error) {
	mode := remote.Stream
	if cfg.Mode == "poll" {
		mode = remote.Poll
	}
	queue := "bench-" + randomSuffix()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	jobs, err := hopperclient.New(hopperclient.Config{URL: cfg.Server, APIKey: cfg.APIKey, HTTPClient: hc})
	if err != nil {
		return nil, err
	}
	res := &Result{Jobs: cfg.Jobs, Workers: cfg.Workers, WorkMs: ms(cfg.Work), Prefetch: cfg.Prefetch, Store: "server " + cfg.Mode, Durability: "the server's",
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), LatencyRate: cfg.Rate}
	newWorker := func(cnt *counter) (*remote.Worker, error) {
		return remote.New(remote.Config{URL: cfg.Server, APIKey: cfg.APIKey, Workers: cnt.workers(),
			Queue: queue, Concurrency: cfg.Workers, Prefetch: cfg.Prefetch, Mode: mode, Name: "hopper-bench"})
	}

	// Throughput: enqueue in batches, then work them all.
	start := time.Now()
	for done := 0; done < cfg.Jobs; {
		n := min(cfg.Batch, cfg.Jobs-done)
		batch := make([]hopper.EnqueueParams, n)
		for i := range batch {
			batch[i] = hopper.EnqueueParams{Args: noop{}, Opts: &hopper.InsertOpts{Queue: queue}}
		}
		if _, err := jobs.EnqueueMany(ctx, batch); err != nil {
			return nil, err
		}
		done += n
	}
	res.EnqueuePerSec = float64(cfg.Jobs) / time.Since(start).Seconds()
	cnt := &counter{work: cfg.Work, allDone: make(chan struct{}), target: int64(cfg.Jobs)}
	w, err := newWorker(cnt)
	if err != nil {
		return nil, err
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start = time.Now()
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	if err := waitFor(ctx, w, cnt.allDone); err != nil {
		w.Stop(context.Background()) //nolint:errcheck // the refusal is what to report
		return nil, err
	}
	// Stop waits for every handler and its Complete call: the clock stops once all N
	// outcomes are written.
	if err := w.Stop(context.Background()); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	runtime.ReadMemStats(&after)
	res.JobsPerSec = float64(cfg.Jobs) / time.Since(start).Seconds()
	res.AllocPerJob = float64(after.TotalAlloc-before.TotalAlloc) / float64(cfg.Jobs)
	if cfg.LatencyJobs <= 0 {
		return res, nil
	}

	// Latency: one enqueue at a time at Rate; the handler notes how long each took to start.
	lat := &counter{allDone: make(chan struct{}), target: int64(cfg.LatencyJobs)}
	w, err = newWorker(lat)
	if err != nil {
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	defer w.Stop(context.Background()) //nolint:errcheck // nothing left to report
	tick := time.NewTicker(time.Second / time.Duration(cfg.Rate))
	defer tick.Stop()
	for range cfg.LatencyJobs {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		if _, err := jobs.Enqueue(ctx, noop{T: time.Now().UnixNano()}, &hopper.InsertOpts{Queue: queue}); err != nil {
			return nil, err
		}
	}
	if err := waitFor(ctx, w, lat.allDone); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lat.mu.Lock()
	defer lat.mu.Unlock()
	res.LatencyJobs = len(lat.latencies)
	res.LatencyP50Ms = percentileMs(lat.latencies, 0.50)
	res.LatencyP99Ms = percentileMs(lat.latencies, 0.99)
	return res, nil
}

// refusalCheck is how often waitFor looks whether the worker stopped by itself.
const refusalCheck = 100 * time.Millisecond

// waitFor waits until done is closed or ctx ends, and returns the worker's refusal (the
// server refused its API key: it takes no more jobs, so the run could never end) if it stops
// by itself meanwhile.
func waitFor(ctx context.Context, w *remote.Worker, done <-chan struct{}) error {
	tick := time.NewTicker(refusalCheck)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return nil
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := w.Err(); err != nil {
				return fmt.Errorf("remote worker stopped: %w", err)
			}
		}
	}
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return hex.EncodeToString(b)
}
