package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper"
)

// The batch scenario (docs/workers.md, "Batches"): Jobs grouped no-op jobs, in groups of
// BatchGroupSize (job i in group i mod Jobs/BatchGroupSize: the groups interleave, as jobs of
// many tenants arriving together do), worked once through a batch worker (AddBatchWorker,
// MaxJobs BatchGroupSize) and once, on a fresh store, one by one (AddWorker). Each run is timed
// from the client's start to the last job's end, or, one by one, to the end of singleWindow if
// that comes first (a group's jobs then run one at a time, each claim reading past the groups'
// later jobs: a large backlog takes far longer than the batch run, and its rate over the
// window is what is reported).

// BatchGroupSize is the batch scenario's group size and batch worker's MaxJobs.
const BatchGroupSize = 100

// singleWindow bounds the one-by-one run (a variable: the package's tests shorten it).
var singleWindow = 60 * time.Second

// BatchResult is what the batch scenario measured. The JSON names are stable.
type BatchResult struct {
	Jobs             int     `json:"jobs"`
	GroupSize        int     `json:"group_size"`
	Workers          int     `json:"workers"`
	BatchJobsPerSec  float64 `json:"batch_jobs_per_sec"`
	Batches          int64   `json:"batches"` // handler calls of the batch run
	SingleJobsPerSec float64 `json:"single_jobs_per_sec"`
	SingleJobs       int64   `json:"single_jobs"` // jobs the one-by-one run ended within its window
	Speedup          float64 `json:"speedup"`
	Store            string  `json:"store"`
	Durability       string  `json:"durability"`
	CPUs             int     `json:"cpus"`
	GoVersion        string  `json:"go_version"`
}

// JSON renders r as one JSON object.
func (r *BatchResult) JSON() []byte {
	b, _ := json.Marshal(r) // plain numbers and strings always marshal
	return b
}

// groupedDoc is the batch scenario's job.
type groupedDoc struct{}

func (groupedDoc) Kind() string { return "bench-grouped" }

// Batch runs the batch scenario on fresh stores of cfg's kind. cfg.Jobs defaults to 100,000
// here and must be a multiple of BatchGroupSize.
func Batch(ctx context.Context, cfg Config) (*BatchResult, error) {
	if cfg.Jobs == 0 {
		cfg.Jobs = 100_000
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Jobs%BatchGroupSize != 0 {
		return nil, fmt.Errorf("bench: the batch scenario's --jobs %d must be a multiple of %d", cfg.Jobs, BatchGroupSize)
	}
	cfg = cfg.withDefaults()
	res := &BatchResult{Jobs: cfg.Jobs, GroupSize: BatchGroupSize, Workers: cfg.Workers,
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Durability: durability(ctx, cfg)}
	var err error
	var all int64
	if res.BatchJobsPerSec, all, res.Store, err = groupedRun(ctx, cfg, true, &res.Batches); err != nil {
		return nil, fmt.Errorf("batch run: %w", err)
	}
	if all != int64(cfg.Jobs) {
		return nil, fmt.Errorf("batch run: %d of %d jobs ended", all, cfg.Jobs)
	}
	if res.SingleJobsPerSec, res.SingleJobs, _, err = groupedRun(ctx, cfg, false, nil); err != nil {
		return nil, fmt.Errorf("one-by-one run: %w", err)
	}
	res.Speedup = res.BatchJobsPerSec / res.SingleJobsPerSec
	return res, nil
}

// groupedRun enqueues the grouped jobs on a fresh store, then works them, in batches or one
// by one, and returns the jobs per second from the start to the last job's end (one by one:
// at most singleWindow) and the jobs that ended.
func groupedRun(ctx context.Context, cfg Config, batched bool, calls *int64) (float64, int64, string, error) {
	st, storeName, cleanup, err := openStore(ctx, cfg)
	if err != nil {
		return 0, 0, "", err
	}
	defer cleanup()
	enq, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		return 0, 0, "", err
	}
	groups := cfg.Jobs / BatchGroupSize
	for done := 0; done < cfg.Jobs; {
		batch := make([]hopper.EnqueueParams, min(cfg.Batch, cfg.Jobs-done))
		for i := range batch {
			group := fmt.Sprintf("g-%d", (done+i)%groups)
			batch[i] = hopper.EnqueueParams{Args: groupedDoc{}, Opts: &hopper.InsertOpts{GroupKey: group}}
		}
		if _, err := enq.EnqueueMany(ctx, batch); err != nil {
			return 0, 0, "", fmt.Errorf("enqueue: %w", err)
		}
		done += len(batch)
	}
	var ended atomic.Int64
	all := make(chan struct{})
	end := func(n int) {
		if ended.Add(int64(n)) == int64(cfg.Jobs) {
			close(all)
		}
	}
	ws := hopper.NewWorkers()
	if batched {
		hopper.AddBatchWorkerFunc(ws, hopper.BatchOpts{MaxJobs: BatchGroupSize}, func(_ context.Context, b *hopper.Batch[groupedDoc]) error {
			atomic.AddInt64(calls, 1)
			end(len(b.Jobs))
			return nil
		})
	} else {
		hopper.AddWorkerFunc(ws, func(context.Context, *hopper.Job[groupedDoc]) error {
			end(1)
			return nil
		})
	}
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, MaxWorkers: cfg.Workers, ClaimAhead: cfg.ClaimAhead})
	if err != nil {
		return 0, 0, "", err
	}
	var window <-chan time.Time
	if !batched {
		t := time.NewTimer(singleWindow)
		defer t.Stop()
		window = t.C
	}
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, 0, "", err
	}
	defer client.Stop(context.Background())
	select {
	case <-all:
	case <-window:
	case <-ctx.Done():
		return 0, 0, "", ctx.Err()
	}
	n := ended.Load()
	return float64(n) / time.Since(start).Seconds(), n, storeName, nil
}
