package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// The horizon scenario (--scenario horizon): another connection opens a REPEATABLE READ
// transaction, reads once so that it takes its snapshot, and holds it for the whole run, so
// PostgreSQL can remove no row version the run leaves behind. Meanwhile --jobs jobs are
// inserted (after the snapshot) and worked, then the latency phase runs. Each system reports
// its throughput, the time of its claim calls (Hopper: the store's JobClaim; River: its
// JobGetAvailable, as River's own job_get_available_duration metric gives it), the latency,
// and the dead row versions of its jobs table at the end. --pin=false runs the same without
// the snapshot: the baseline.

// horizonReport is the scenario's output; Hopper's part is its `bench --scenario horizon`
// JSON object as printed.
type horizonReport struct {
	Hopper map[string]any `json:"hopper,omitempty"`
	River  *riverHorizon  `json:"river,omitempty"`
	Server server         `json:"server"`
}

// riverHorizon is River's figures, named as Hopper's JSON names them.
type riverHorizon struct {
	Jobs          int     `json:"jobs"`
	Workers       int     `json:"workers"`
	EnqueuePerSec float64 `json:"enqueue_per_sec"`
	JobsPerSec    float64 `json:"jobs_per_sec"`
	LatencyP50Ms  float64 `json:"latency_p50_ms"`
	LatencyP99Ms  float64 `json:"latency_p99_ms"`
	LatencyJobs   int     `json:"latency_jobs"`
	Version       string  `json:"version"`
	Pinned        bool    `json:"pinned"`
	PinHeld       bool    `json:"pin_held"`
	Claims        int     `json:"claims"`
	ClaimP50Ms    float64 `json:"claim_p50_ms"`
	ClaimP99Ms    float64 `json:"claim_p99_ms"`
	ClaimMaxMs    float64 `json:"claim_max_ms"`
	DeadTuples    int64   `json:"dead_tuples"`
	Updates       int64   `json:"updates"`     // n_tup_upd of river_job
	HOTUpdates    int64   `json:"hot_updates"` // n_tup_hot_upd of river_job
	JobsBytes     int64   `json:"jobs_bytes"`  // river_job with its indexes
}

func runHorizon(ctx context.Context, o *options, bin string, doRiver, doHopper bool, srv server) error {
	rep := &horizonReport{Server: srv}
	if doRiver {
		progress("horizon: river (pin %v) …", o.pin)
		r, err := riverHorizonRun(ctx, o)
		if err != nil {
			return err
		}
		rep.River = r
	}
	if doHopper {
		progress("horizon: hopper (pin %v) …", o.pin)
		args := []string{"bench", "--scenario", "horizon", "--database", o.database, "--pin=" + strconv.FormatBool(o.pin),
			"--jobs", strconv.Itoa(o.jobs), "--workers", strconv.Itoa(o.workers), "--batch", strconv.Itoa(o.batch),
			"--rate", strconv.Itoa(o.rate), "--latency-jobs", strconv.Itoa(latencyJobsFlag(o.latencyJobs)), "--json"}
		if _, err := runHopperJSON(ctx, o, bin, args, &rep.Hopper); err != nil {
			return err
		}
	}
	if o.asJSON {
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		fmt.Println(string(b))
		return nil
	}
	printHorizon(o, rep)
	return nil
}

func printHorizon(o *options, rep *horizonReport) {
	fmt.Printf("PostgreSQL %s, %d CPUs, %s; %d jobs, %d workers, snapshot held: %v\n",
		rep.Server.Version, rep.Server.CPUs, rep.Server.GoVersion, o.jobs, o.workers, o.pin)
	line := func(name string, jobsPerSec, c50, c99, l50, l99, dead, hot, held any) {
		fmt.Printf("%-14s %8.0f jobs/s  claims p50 %6.2f ms, p99 %7.2f ms  latency p50 %6.2f ms, p99 %7.2f ms  dead rows %v  HOT updates %v  pin held %v\n",
			name, jobsPerSec, c50, c99, l50, l99, dead, hot, held)
	}
	if r := rep.River; r != nil {
		line("river "+r.Version, r.JobsPerSec, r.ClaimP50Ms, r.ClaimP99Ms, r.LatencyP50Ms, r.LatencyP99Ms, r.DeadTuples,
			r.HOTUpdates, r.PinHeld)
	}
	if h := rep.Hopper; h != nil {
		line("hopper", h["jobs_per_sec"], h["claim_p50_ms"], h["claim_p99_ms"], h["latency_p50_ms"], h["latency_p99_ms"],
			h["dead_tuples"], h["hot_updates"], h["pin_held"])
	}
}

// riverHorizonRun runs the scenario on River in a fresh schema.
func riverHorizonRun(ctx context.Context, o *options) (*riverHorizon, error) {
	ro := *o
	ro.riverAppName = "river-bench-horizon-" + randomHex()
	db, closeDB, err := openRiver(ctx, &ro)
	if err != nil {
		return nil, err
	}
	defer closeDB()
	res := &riverHorizon{Jobs: o.jobs, Workers: o.workers, Version: riverVersion(), Pinned: o.pin}
	figures := &result{Jobs: o.jobs, Workers: o.workers, LatencyRate: o.rate, Schema: db.schema}
	var p *snapshotPin
	if o.pin {
		if p, err = pinSnapshot(ctx, o.database, pgx.Identifier{db.schema, "river_job"}.Sanitize()); err != nil {
			return nil, fmt.Errorf("river: pin the horizon: %w", err)
		}
		defer p.release()
	}
	fetches := &fetchTimer{}
	newClient := func(rec *recorder) (*river.Client[pgx.Tx], error) {
		workers := river.NewWorkers()
		river.AddWorker(workers, &noopWorker{rec: rec})
		return river.NewClient(db.driver, &river.Config{
			Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
			Workers:           workers,
			Schema:            db.schema,
			Logger:            db.logger,
			FetchCooldown:     o.riverFetchCooldown,
			FetchPollInterval: o.riverFetchPollInterval,
			Hooks:             []rivertype.Hook{fetches},
		})
	}
	if err := riverThroughput(ctx, o, db.pool, newClient, figures); err != nil {
		return nil, err
	}
	ds := fetches.stop()
	res.Claims = len(ds)
	res.ClaimP50Ms, res.ClaimP99Ms, res.ClaimMaxMs = percentileMs(ds, 0.50), percentileMs(ds, 0.99), percentileMs(ds, 1)
	if o.latencyJobs > 0 {
		if err := riverLatency(ctx, o, newClient, figures); err != nil {
			return nil, err
		}
	}
	res.EnqueuePerSec, res.JobsPerSec = figures.EnqueuePerSec, figures.JobsPerSec
	res.LatencyP50Ms, res.LatencyP99Ms, res.LatencyJobs = figures.LatencyP50Ms, figures.LatencyP99Ms, figures.LatencyJobs
	// The pool's sessions report their counts as they end.
	db.pool.Reset()
	if err := riverTableStats(ctx, o.database, ro.riverAppName, db.schema, p, res); err != nil {
		return nil, fmt.Errorf("river: read river_job's statistics: %w", err)
	}
	return res, nil
}

// fetchTimer is a River hook that records the duration of each JobGetAvailable (River's
// job_get_available_duration metric) until stop.
type fetchTimer struct {
	river.HookDefaults
	mu      sync.Mutex
	times   []time.Duration
	stopped bool
}

func (f *fetchTimer) MetricEmit(_ context.Context, p *rivertype.HookMetricEmitParams) {
	m, ok := p.Metric.(*rivertype.JobGetAvailableDurationMetric)
	if !ok {
		return
	}
	f.mu.Lock()
	if !f.stopped {
		f.times = append(f.times, m.Duration)
	}
	f.mu.Unlock()
}

func (f *fetchTimer) stop() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	return f.times
}

var _ rivertype.HookMetricEmit = (*fetchTimer)(nil)

// snapshotPin is a REPEATABLE READ snapshot held open on a connection of its own.
type snapshotPin struct {
	conn *pgx.Conn
	tx   pgx.Tx
	pid  uint32
	xmin string // pg_stat_activity.backend_xmin when it was taken
}

// pinSnapshot opens the transaction and reads table, which takes the snapshot.
func pinSnapshot(ctx context.Context, dsn, table string) (*snapshotPin, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, err
	}
	p := &snapshotPin{conn: conn}
	p.tx, err = conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err == nil {
		var n int64
		err = p.tx.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n)
	}
	if err == nil {
		err = p.tx.QueryRow(ctx, `SELECT pid, backend_xmin::text FROM pg_stat_activity WHERE pid = pg_backend_pid()`).
			Scan(&p.pid, &p.xmin)
	}
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return p, nil
}

// held reports whether the pin still holds the horizon it took.
func (p *snapshotPin) held(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var xmin *string
	err := conn.QueryRow(ctx, `SELECT backend_xmin::text FROM pg_stat_activity WHERE pid = $1`, p.pid).Scan(&xmin)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil && xmin != nil && *xmin == p.xmin, err
}

func (p *snapshotPin) release() {
	_ = p.tx.Rollback(context.Background())
	p.conn.Close(context.Background())
}

// riverTableStats waits for River's sessions (named appName) to end, then reads river_job's
// dead row versions and size, and whether the pin held to the end.
func riverTableStats(ctx context.Context, dsn, appName, schema string, p *snapshotPin, res *riverHorizon) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		var live int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, appName).Scan(&live)
		if err != nil || live == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if p != nil {
		if res.PinHeld, err = p.held(ctx, conn); err != nil {
			return err
		}
	}
	return conn.QueryRow(ctx, `SELECT n_dead_tup, n_tup_upd, n_tup_hot_upd, pg_total_relation_size(relid)
		FROM pg_stat_user_tables WHERE relid = $1::regclass`, pgx.Identifier{schema, "river_job"}.Sanitize()).
		Scan(&res.DeadTuples, &res.Updates, &res.HOTUpdates, &res.JobsBytes)
}

func randomHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
