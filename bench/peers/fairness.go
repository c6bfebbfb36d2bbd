package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// The fairness scenario (--scenario fairness): queue "flood" holds --jobs ready jobs while
// queue "trickle" receives --rate jobs a second (--latency-jobs of them), with --workers
// workers in all; it reports the trickle jobs' enqueue→start latency. Hopper shares its
// workers between the two queues by weight (1:1); River has a separate pool per queue, so it
// gets half the workers for each (the same total).

// fairnessReport is the scenario's output; Hopper's part is its `bench --scenario fairness`
// JSON object as printed.
type fairnessReport struct {
	Hopper map[string]any `json:"hopper,omitempty"`
	River  *riverFairness `json:"river,omitempty"`
	Server server         `json:"server"`
}

type riverFairness struct {
	Workers           int     `json:"workers"`
	FloodWorkers      int     `json:"flood_workers"`
	TrickleWorkers    int     `json:"trickle_workers"`
	FloodJobs         int     `json:"flood_jobs"`
	TrickleRate       int     `json:"trickle_rate"`
	TrickleJobs       int     `json:"trickle_jobs"`
	TrickleLatencyP50 float64 `json:"trickle_latency_p50_ms"`
	TrickleLatencyP99 float64 `json:"trickle_latency_p99_ms"`
	TrickleLatencyMax float64 `json:"trickle_latency_max_ms"`
	FloodLeft         int64   `json:"flood_left"`
	Version           string  `json:"version"`
}

// trickleArgs is the trickle queue's job (River routes a job to its queue by InsertOpts).
type trickleArgs = noopArgs

func runFairness(ctx context.Context, o *options, bin string, doRiver, doHopper bool, srv server) error {
	rep := &fairnessReport{Server: srv}
	if doRiver {
		progress("fairness: river …")
		r, err := riverFairnessRun(ctx, o)
		if err != nil {
			return err
		}
		rep.River = r
	}
	if doHopper {
		progress("fairness: hopper …")
		h, err := hopperFairness(ctx, o, bin)
		if err != nil {
			return err
		}
		rep.Hopper = h
	}
	if o.asJSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Println(string(b))
		return nil
	}
	printFairness(o, rep)
	return nil
}

func printFairness(o *options, rep *fairnessReport) {
	fmt.Printf("PostgreSQL %s, %d CPUs, %s; flood %d jobs, trickle %d jobs at %d/s, %d workers in all\n",
		rep.Server.Version, rep.Server.CPUs, rep.Server.GoVersion, o.jobs, o.latencyJobs, o.rate, o.workers)
	if r := rep.River; r != nil {
		fmt.Printf("river %-8s trickle latency p50 %.2f ms, p99 %.2f ms, max %.2f ms (flood %d + trickle %d workers; flood left %d)\n",
			r.Version, r.TrickleLatencyP50, r.TrickleLatencyP99, r.TrickleLatencyMax, r.FloodWorkers, r.TrickleWorkers, r.FloodLeft)
	}
	if h := rep.Hopper; h != nil {
		fmt.Printf("hopper         trickle latency p50 %.2f ms, p99 %.2f ms, max %.2f ms (%v shared workers, weights 1:1; flood left %v)\n",
			h["trickle_latency_p50_ms"], h["trickle_latency_p99_ms"], h["trickle_latency_max_ms"], h["workers"], h["flood_left"])
		if shares, ok := h["shares"].([]any); ok {
			for _, s := range shares {
				if m, ok := s.(map[string]any); ok {
					fmt.Printf("hopper         shares %v:%v, both backlogged: flood %.3f, trickle %.3f\n",
						m["flood_weight"], m["trickle_weight"], m["flood"], m["trickle"])
				}
			}
		}
	}
}

// hopperFairness runs `hopper bench --scenario fairness --json` with the same parameters.
func hopperFairness(ctx context.Context, o *options, bin string) (map[string]any, error) {
	args := []string{"bench", "--scenario", "fairness", "--database", o.database,
		"--jobs", strconv.Itoa(o.jobs), "--workers", strconv.Itoa(o.workers), "--batch", strconv.Itoa(o.batch),
		"--rate", strconv.Itoa(o.rate), "--latency-jobs", strconv.Itoa(max(o.latencyJobs, 1)), "--json"}
	var out map[string]any
	if _, err := runHopperJSON(ctx, o, bin, args, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// riverFairnessRun: River with queues flood and trickle, --workers split between them.
func riverFairnessRun(ctx context.Context, o *options) (*riverFairness, error) {
	db, closeDB, err := openRiver(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	trickleWorkers := max(o.workers/2, 1)
	floodWorkers := max(o.workers-trickleWorkers, 1)
	rec := &recorder{}
	workers := river.NewWorkers()
	river.AddWorker(workers, &noopWorker{rec: rec})
	client, err := river.NewClient(db.driver, &river.Config{
		Queues: map[string]river.QueueConfig{
			"flood":   {MaxWorkers: floodWorkers},
			"trickle": {MaxWorkers: trickleWorkers},
		},
		Workers:           workers,
		Schema:            db.schema,
		Logger:            db.logger,
		FetchCooldown:     o.riverFetchCooldown,
		FetchPollInterval: o.riverFetchPollInterval,
	})
	if err != nil {
		return nil, fmt.Errorf("river: client: %w", err)
	}
	for done := 0; done < o.jobs; {
		batch := make([]river.InsertManyParams, min(o.batch, o.jobs-done))
		for i := range batch {
			batch[i] = river.InsertManyParams{Args: noopArgs{}, InsertOpts: &river.InsertOpts{Queue: "flood"}}
		}
		if _, err := client.InsertMany(ctx, batch); err != nil {
			return nil, fmt.Errorf("river: insert: %w", err)
		}
		done += len(batch)
	}
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("river: start: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()
	n := max(o.latencyJobs, 1)
	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	defer tick.Stop()
	for range n {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		if _, err := client.Insert(ctx, trickleArgs{T: time.Now().UnixNano()}, &river.InsertOpts{Queue: "trickle"}); err != nil {
			return nil, fmt.Errorf("river: insert: %w", err)
		}
	}
	for {
		rec.mu.Lock()
		got := len(rec.latencies)
		rec.mu.Unlock()
		if got >= n {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("river: fairness: %d of %d trickle jobs started: %w", got, n, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	res := &riverFairness{Workers: o.workers, FloodWorkers: floodWorkers, TrickleWorkers: trickleWorkers,
		FloodJobs: o.jobs, TrickleRate: o.rate, Version: riverVersion()}
	q := "SELECT count(*) FROM " + pgx.Identifier{db.schema, "river_job"}.Sanitize() +
		" WHERE queue = 'flood' AND state = 'available'"
	if err := db.pool.QueryRow(ctx, q).Scan(&res.FloodLeft); err != nil {
		return nil, fmt.Errorf("river: count flood: %w", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	res.TrickleJobs = len(rec.latencies)
	res.TrickleLatencyP50 = percentileMs(rec.latencies, 0.50)
	res.TrickleLatencyP99 = percentileMs(rec.latencies, 0.99)
	res.TrickleLatencyMax = percentileMs(rec.latencies, 1)
	return res, nil
}
