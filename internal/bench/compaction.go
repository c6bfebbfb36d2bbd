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

// The compaction scenario (docs/flow-control.md, "Compaction"): Jobs queued no-op jobs in
// Groups groups (group keys g-0…), then one on-demand compaction of the kind
// (Client.CompactKind, what `hopper kinds compact` and the leader call). It measures the call's
// time and the rows it wrote, and, while it runs, how long enqueues of another kind wait (an
// enqueue every 10 ms): what the compaction's transaction holds up.

// DefaultCompactionJobs and DefaultCompactionGroups are the compaction scenario's defaults.
const (
	DefaultCompactionJobs   = 100_000
	DefaultCompactionGroups = 1_000
)

// CompactionResult is what the compaction scenario measured. The JSON names are stable.
type CompactionResult struct {
	Jobs      int     `json:"jobs"`
	Groups    int     `json:"groups"`
	FillSecs  float64 `json:"fill_seconds"`
	Seconds   float64 `json:"seconds"` // the CompactKind call
	Compacted int     `json:"groups_compacted"`
	Replaced  int     `json:"jobs_replaced"`
	// RowsWritten is the rows the compaction wrote: each replaced job updated (canceled), its
	// lineage row inserted, and each group's new job inserted.
	RowsWritten int `json:"rows_written"`
	// ProbeEnqueues, ProbeMaxMs and ProbeP50Ms are the enqueues of another kind made every
	// 10 ms while the compaction ran, and their longest and median call times.
	ProbeEnqueues int     `json:"probe_enqueues"`
	ProbeP50Ms    float64 `json:"probe_p50_ms"`
	ProbeMaxMs    float64 `json:"probe_max_ms"`
	Store         string  `json:"store"`
	Durability    string  `json:"durability"`
	CPUs          int     `json:"cpus"`
	GoVersion     string  `json:"go_version"`
}

// JSON renders r as one JSON object.
func (r *CompactionResult) JSON() []byte {
	b, _ := json.Marshal(r) // plain numbers and strings always marshal
	return b
}

// probeArgs is the kind of the probe's enqueues, which the compaction does not touch.
type probeArgs struct{}

func (probeArgs) Kind() string { return "bench-probe" }

// Compaction runs the compaction scenario on a fresh store of cfg's kind: cfg.Jobs queued jobs
// (default 100,000) in groups groups (default 1,000), spread evenly.
func Compaction(ctx context.Context, cfg Config, groups int) (*CompactionResult, error) {
	if cfg.Jobs == 0 {
		cfg.Jobs = DefaultCompactionJobs
	}
	if groups == 0 {
		groups = DefaultCompactionGroups
	}
	if groups < 1 || groups > cfg.Jobs {
		return nil, fmt.Errorf("bench: groups %d is outside 1–%d (the jobs)", groups, cfg.Jobs)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	st, storeName, cleanup, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	res := &CompactionResult{Jobs: cfg.Jobs, Groups: groups, Store: storeName, Durability: durability(ctx, cfg),
		CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	client, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		return nil, err
	}
	start := time.Now()
	for done := 0; done < cfg.Jobs; {
		batch := make([]hopper.EnqueueParams, min(cfg.Batch, cfg.Jobs-done))
		for i := range batch {
			group := fmt.Sprintf("g-%d", (done+i)%groups)
			batch[i] = hopper.EnqueueParams{Args: noop{}, Opts: &hopper.InsertOpts{GroupKey: group}}
		}
		if _, err := client.EnqueueMany(ctx, batch); err != nil {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
		done += len(batch)
	}
	res.FillSecs = time.Since(start).Seconds()

	probeCtx, stopProbe := context.WithCancel(ctx)
	var probes []time.Duration
	var probeErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by this function: stopped and waited for below
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-probeCtx.Done():
				return
			case <-tick.C:
			}
			t := time.Now()
			if _, err := client.Enqueue(ctx, probeArgs{}, nil); err != nil {
				probeErr = err
				return
			}
			probes = append(probes, time.Since(t))
		}
	}()
	start = time.Now()
	out, err := client.CompactKind(ctx, noop{}.Kind(), nil)
	res.Seconds = time.Since(start).Seconds()
	stopProbe()
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	if probeErr != nil {
		return nil, fmt.Errorf("probe enqueue: %w", probeErr)
	}
	res.Compacted, res.Replaced = out.Groups, out.Jobs
	res.RowsWritten = 2*out.Jobs + out.Groups
	res.ProbeEnqueues = len(probes)
	res.ProbeP50Ms = percentileMs(probes, 0.5)
	res.ProbeMaxMs = percentileMs(probes, 1)
	return res, nil
}
