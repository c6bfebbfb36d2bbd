package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs is River's no-op job. T is the enqueue time in unix nanoseconds (latency phase only),
// as in Hopper's bench.
type noopArgs struct {
	T int64 `json:"t,omitempty"`
}

func (noopArgs) Kind() string { return "bench_noop" }

// recorder counts handler starts and records enqueue→start latencies.
type recorder struct {
	started   atomic.Int64
	mu        sync.Mutex
	latencies []time.Duration
}

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	rec *recorder
}

func (w *noopWorker) Work(ctx context.Context, job *river.Job[noopArgs]) error {
	if job.Args.T != 0 {
		d := time.Since(time.Unix(0, job.Args.T))
		w.rec.mu.Lock()
		w.rec.latencies = append(w.rec.latencies, d)
		w.rec.mu.Unlock()
	}
	w.rec.started.Add(1)
	return nil
}

// riverDB is a pool on --database with River's tables in a fresh schema.
type riverDB struct {
	pool   *pgxpool.Pool
	driver *riverpgxv5.Driver
	schema string
	logger *slog.Logger
}

// openRiver creates River's schema (dropping an old one first) and migrates it; close drops
// the schema and closes the pool.
func openRiver(ctx context.Context, o *options) (_ *riverDB, close func(), err error) {
	pcfg, err := pgxpool.ParseConfig(o.database)
	if err != nil {
		return nil, nil, fmt.Errorf("river: parse --database: %w", err)
	}
	if o.riverMaxConns > 0 {
		pcfg.MaxConns = int32(o.riverMaxConns)
	}
	if o.riverAppName != "" {
		pcfg.ConnConfig.RuntimeParams["application_name"] = o.riverAppName
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, nil, fmt.Errorf("river: connect: %w", err)
	}
	schema := o.riverSchema
	ident := pgx.Identifier{schema}.Sanitize()
	close = func() {
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := pool.Exec(cctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
			fmt.Fprintf(os.Stderr, "river: drop schema %s: %v\n", schema, err)
		}
		pool.Close()
	}
	defer func() {
		if err != nil {
			close()
		}
	}()
	if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+ident+" CASCADE"); err != nil {
		return nil, nil, fmt.Errorf("river: drop old schema: %w", err)
	}
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+ident); err != nil {
		return nil, nil, fmt.Errorf("river: create schema: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Schema: schema, Logger: logger})
	if err != nil {
		return nil, nil, fmt.Errorf("river: migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, nil, fmt.Errorf("river: migrate: %w", err)
	}
	return &riverDB{pool: pool, driver: driver, schema: schema, logger: logger}, close, nil
}

// runRiver runs one River measurement in a freshly created schema that it drops afterwards.
func runRiver(ctx context.Context, o *options) (*result, error) {
	db, closeDB, err := openRiver(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	pool, driver, schema, logger := db.pool, db.driver, db.schema, db.logger

	res := &result{Jobs: o.jobs, Workers: o.workers, LatencyRate: o.rate, Version: riverVersion(),
		Schema: schema}
	newClient := func(rec *recorder) (*river.Client[pgx.Tx], error) {
		workers := river.NewWorkers()
		river.AddWorker(workers, &noopWorker{rec: rec})
		return river.NewClient(driver, &river.Config{
			Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
			Workers:           workers,
			Schema:            schema,
			Logger:            logger,
			FetchCooldown:     o.riverFetchCooldown,
			FetchPollInterval: o.riverFetchPollInterval,
		})
	}

	if err := riverThroughput(ctx, o, pool, newClient, res); err != nil {
		return nil, err
	}
	if o.latencyJobs > 0 {
		if err := riverLatency(ctx, o, newClient, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func riverThroughput(ctx context.Context, o *options, pool *pgxpool.Pool,
	newClient func(*recorder) (*river.Client[pgx.Tx], error), res *result) error {
	rec := &recorder{}
	client, err := newClient(rec)
	if err != nil {
		return fmt.Errorf("river: client: %w", err)
	}

	start := time.Now()
	for done := 0; done < o.jobs; {
		n := min(o.batch, o.jobs-done)
		batch := make([]river.InsertManyParams, n)
		for i := range batch {
			batch[i] = river.InsertManyParams{Args: noopArgs{}}
		}
		if _, err := client.InsertMany(ctx, batch); err != nil {
			return fmt.Errorf("river: insert: %w", err)
		}
		done += n
	}
	res.EnqueuePerSec = float64(o.jobs) / time.Since(start).Seconds()

	// A completed event is sent after the completer's UPDATE … state='completed' has committed,
	// so counting N of them stops the clock once every outcome is durable. The channel holds all
	// N events: River drops events that overflow a subscription's buffer.
	events, cancelSub := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: o.jobs + 16,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer cancelSub()

	costBefore, err := readCost(ctx, pool)
	if err != nil {
		return err
	}
	start = time.Now()
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("river: start: %w", err)
	}
	completed := 0
	for completed < o.jobs {
		select {
		case ev := <-events:
			if ev.Kind != river.EventKindJobCompleted {
				return fmt.Errorf("river: job %d ended %s", ev.Job.ID, ev.Kind)
			}
			completed++
		case <-ctx.Done():
			return fmt.Errorf("river: throughput phase: %d of %d completed: %w", completed, o.jobs, ctx.Err())
		}
	}
	elapsed := time.Since(start)
	res.JobsPerSec = float64(o.jobs) / elapsed.Seconds()
	costAfter, err := readCost(ctx, pool)
	if err != nil {
		return err
	}
	res.WALPerJob = float64(costAfter.wal-costBefore.wal) / float64(o.jobs)
	res.WriteXactsPerJob = float64(costAfter.xids-costBefore.xids) / float64(o.jobs)

	stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil {
		return fmt.Errorf("river: stop: %w", err)
	}
	// Hopper's figure includes its client.Stop (which flushes outcomes); report River's with the
	// stop included too, for reference.
	res.JobsPerSecInclStop = float64(o.jobs) / time.Since(start).Seconds()

	// Check against the table: every job completed, each started exactly once.
	var n int
	q := "SELECT count(*) FROM " + pgx.Identifier{res.Schema, "river_job"}.Sanitize() + " WHERE state = 'completed'"
	if err := pool.QueryRow(ctx, q).Scan(&n); err != nil {
		return fmt.Errorf("river: count completed: %w", err)
	}
	if n != o.jobs {
		return fmt.Errorf("river: %d of %d jobs completed in river_job", n, o.jobs)
	}
	if s := rec.started.Load(); s != int64(o.jobs) {
		return fmt.Errorf("river: handler ran %d times for %d jobs", s, o.jobs)
	}
	return nil
}

func riverLatency(ctx context.Context, o *options, newClient func(*recorder) (*river.Client[pgx.Tx], error), res *result) error {
	rec := &recorder{}
	client, err := newClient(rec)
	if err != nil {
		return fmt.Errorf("river: client: %w", err)
	}
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("river: start: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = client.Stop(stopCtx)
	}()

	tick := time.NewTicker(time.Second / time.Duration(o.rate))
	defer tick.Stop()
	for range o.latencyJobs {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if _, err := client.Insert(ctx, noopArgs{T: time.Now().UnixNano()}, nil); err != nil {
			return fmt.Errorf("river: insert: %w", err)
		}
	}
	for rec.started.Load() < int64(o.latencyJobs) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("river: latency phase: %d of %d started: %w", rec.started.Load(), o.latencyJobs, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	res.LatencyJobs = len(rec.latencies)
	res.LatencyP50Ms = percentileMs(rec.latencies, 0.50)
	res.LatencyP99Ms = percentileMs(rec.latencies, 0.99)
	if res.LatencyJobs != o.latencyJobs {
		return errors.New("river: latency phase lost samples")
	}
	return nil
}

// cost is a reading of the whole server's WAL position and next transaction id (a transaction
// gets one when it first writes), as `hopper bench` takes around its work phase.
type cost struct{ wal, xids int64 }

func readCost(ctx context.Context, pool *pgxpool.Pool) (cost, error) {
	var c cost
	err := pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
		pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&c.wal, &c.xids)
	if err != nil {
		return c, fmt.Errorf("river: server cost: %w", err)
	}
	return c, nil
}
