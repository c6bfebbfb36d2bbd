package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"time"

	"github.com/hopperjobs/hopper"
)

// The per-key scenario (issue 32): --jobs no-op jobs spread over PerKeyKeys fairness keys in
// one queue, worked twice on fresh stores, without and with a cap of PerKeyCap running jobs
// per key on the queue. It reports both throughputs, the store's claim times, and the most
// jobs of one key that ran at once, read from the jobs' attempts (their start and end times):
// the scenario fails when that exceeds the cap.
const (
	PerKeyKeys        = 10_000
	PerKeyCap         = 1
	DefaultPerKeyJobs = 30_000
)

// perKeyKeys is PerKeyKeys, fewer in tests.
var perKeyKeys = PerKeyKeys

// PerKeyRun is one run of the per-key scenario.
type PerKeyRun struct {
	CapPerKey   int     `json:"cap_per_key"` // 0: none
	JobsPerSec  float64 `json:"jobs_per_sec"`
	Claims      int     `json:"claims"`
	ClaimP50Ms  float64 `json:"claim_p50_ms"`
	ClaimP99Ms  float64 `json:"claim_p99_ms"`
	MaxPerKey   int     `json:"max_running_per_key"` // from the attempts
	KeyOfMax    string  `json:"key_of_max"`
	JobsChecked int     `json:"jobs_checked"`
}

// PerKeyResult is what the per-key scenario measured.
type PerKeyResult struct {
	Store      string    `json:"store"`
	Durability string    `json:"durability"`
	CPUs       int       `json:"cpus"`
	GoVersion  string    `json:"go_version"`
	Jobs       int       `json:"jobs"`
	Keys       int       `json:"keys"`
	Workers    int       `json:"workers"`
	Uncapped   PerKeyRun `json:"uncapped"`
	Capped     PerKeyRun `json:"capped"`
	// Ratio is the capped run's throughput over the uncapped one's.
	Ratio float64 `json:"ratio"`
}

// JSON renders r as one JSON object.
func (r *PerKeyResult) JSON() []byte {
	b, _ := json.Marshal(r)
	return b
}

// PerKey runs the per-key scenario. cfg.Jobs 0 means DefaultPerKeyJobs.
func PerKey(ctx context.Context, cfg Config) (*PerKeyResult, error) {
	if cfg.Jobs == 0 {
		cfg.Jobs = DefaultPerKeyJobs
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	res := &PerKeyResult{Jobs: cfg.Jobs, Keys: perKeyKeys, Workers: cfg.Workers, CPUs: runtime.NumCPU(),
		GoVersion: runtime.Version(), Durability: durability(ctx, cfg)}
	for _, capPerKey := range []int{0, PerKeyCap} {
		run, name, err := perKeyRun(ctx, cfg, capPerKey)
		if err != nil {
			return nil, fmt.Errorf("per-key run (cap per key %d): %w", capPerKey, err)
		}
		res.Store = name
		if capPerKey == 0 {
			res.Uncapped = *run
		} else {
			res.Capped = *run
		}
	}
	if res.Uncapped.JobsPerSec > 0 {
		res.Ratio = res.Capped.JobsPerSec / res.Uncapped.JobsPerSec
	}
	if res.Capped.MaxPerKey > PerKeyCap {
		return res, fmt.Errorf("per-key cap exceeded: key %s ran %d jobs at once (cap %d)", res.Capped.KeyOfMax,
			res.Capped.MaxPerKey, PerKeyCap)
	}
	return res, nil
}

// perKeyRun enqueues and works the scenario's jobs on a fresh store, with capPerKey (0: none).
func perKeyRun(ctx context.Context, cfg Config, capPerKey int) (*PerKeyRun, string, error) {
	st, name, cleanup, err := openStore(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	defer cleanup()
	enq, err := newClient(cfg, st, nil)
	if err != nil {
		return nil, "", err
	}
	if capPerKey > 0 {
		if err := enq.SetLimit(ctx, hopper.Limit{Queue: hopper.DefaultQueue, MaxRunning: capPerKey, PerKey: true}); err != nil {
			return nil, "", err
		}
	}
	for done := 0; done < cfg.Jobs; {
		n := min(cfg.Batch, cfg.Jobs-done)
		batch := make([]hopper.EnqueueParams, n)
		for i := range batch {
			batch[i] = hopper.EnqueueParams{Args: noop{}, Opts: &hopper.InsertOpts{FairnessKey: fmt.Sprintf("k%05d", (done+i)%perKeyKeys)}}
		}
		if _, err := enq.EnqueueMany(ctx, batch); err != nil {
			return nil, "", fmt.Errorf("enqueue: %w", err)
		}
		done += n
	}

	timed := newTimedStore(st)
	cnt := &counter{allDone: make(chan struct{}), target: int64(cfg.Jobs)}
	client, err := newClient(cfg, timed.wrapped(), cnt.workers())
	if err != nil {
		return nil, "", err
	}
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return nil, "", err
	}
	select {
	case <-cnt.allDone:
	case <-ctx.Done():
	}
	if err := client.Stop(context.Background()); err != nil {
		return nil, "", err
	}
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	run := &PerKeyRun{CapPerKey: capPerKey, JobsPerSec: float64(cfg.Jobs) / time.Since(start).Seconds()}
	timed.mu.Lock()
	claims := timed.claims
	timed.mu.Unlock()
	run.Claims, run.ClaimP50Ms, run.ClaimP99Ms = len(claims), percentileMs(claims, 0.50), percentileMs(claims, 0.99)
	run.MaxPerKey, run.KeyOfMax, run.JobsChecked, err = maxRunningPerKey(ctx, enq)
	return run, name, err
}

// maxRunningPerKey reads every completed job's attempt (claimed at StartedAt, finished at
// FinishedAt) and returns the most jobs of one fairness key that ran at once, which key, and
// how many jobs it read. An attempt that ended at the instant another began does not overlap
// it.
func maxRunningPerKey(ctx context.Context, c *hopper.Client) (int, string, int, error) {
	type edge struct {
		at    time.Time
		delta int
	}
	byKey := map[string][]edge{}
	p := &hopper.ListParams{States: []hopper.JobState{hopper.StateCompleted}, Limit: 1000}
	n := 0
	for {
		page, err := c.List(ctx, p)
		if err != nil {
			return 0, "", 0, err
		}
		for _, j := range page.Jobs {
			byKey[j.FairnessKey] = append(byKey[j.FairnessKey], edge{j.StartedAt, 1}, edge{j.FinishedAt, -1})
			n++
		}
		if page.NextCursor == "" {
			break
		}
		p.Cursor = page.NextCursor
	}
	most, key := 0, ""
	for k, es := range byKey {
		sort.Slice(es, func(i, j int) bool {
			if !es[i].at.Equal(es[j].at) {
				return es[i].at.Before(es[j].at)
			}
			return es[i].delta < es[j].delta // an end before a start at the same instant
		})
		running := 0
		for _, e := range es {
			running += e.delta
			if running > most {
				most, key = running, k
			}
		}
	}
	return most, key, n, nil
}
