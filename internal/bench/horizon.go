package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/pgstore"
	"github.com/jackc/pgx/v5"
)

// The horizon scenario (docs/benchmarks.md#at-scale), PostgreSQL only: another connection
// holds a REPEATABLE READ snapshot open for the whole run, as a long report or a forgotten
// transaction does, so no row version the run leaves behind can be removed, by vacuum or by
// pruning. The jobs are enqueued after the snapshot was taken, then worked (the standard
// throughput phase), then the latency phase runs, all while it is held. It reports the time of
// the store's claim calls, and the dead row versions of the jobs table at the end. With
// Pin false it runs the same way without the snapshot: the baseline.

// HorizonResult is what the horizon scenario measured. The JSON names are stable.
type HorizonResult struct {
	Result
	Pinned  bool `json:"pinned"`
	PinHeld bool `json:"pin_held"` // the snapshot still held its xmin horizon at the end

	Claims int `json:"claims"` // the store's claim calls in the throughput phase
	// ClaimJobs is the jobs those calls returned, on average: a claim's time grows with them.
	ClaimJobs  float64 `json:"claim_jobs_mean"`
	ClaimP50Ms float64 `json:"claim_p50_ms"`
	ClaimP99Ms float64 `json:"claim_p99_ms"`
	ClaimMaxMs float64 `json:"claim_max_ms"`
	// DeadTuples is pg_stat_user_tables.n_dead_tup of the jobs table after the run, read once
	// the store's connections have closed (and so reported their counts).
	DeadTuples int64 `json:"dead_tuples"`
	// Updates and HOTUpdates are n_tup_upd and n_tup_hot_upd of the jobs table: the updates,
	// and those that added no index entry (heap-only tuples).
	Updates    int64 `json:"updates"`
	HOTUpdates int64 `json:"hot_updates"`
	JobsBytes  int64 `json:"jobs_bytes"` // the jobs table with its indexes, after the run
}

// JSON renders r as one JSON object.
func (r *HorizonResult) JSON() []byte {
	b, _ := json.Marshal(r) // plain numbers and strings always marshal
	return b
}

// DefaultHorizonJobs is the horizon scenario's default Config.Jobs.
const DefaultHorizonJobs = 500_000

// Horizon runs the horizon scenario on a fresh schema of the PostgreSQL server cfg.Database,
// with the snapshot held when pinned is set. cfg.Jobs defaults to DefaultHorizonJobs.
func Horizon(ctx context.Context, cfg Config, pinned bool) (*HorizonResult, error) {
	if cfg.Jobs == 0 {
		cfg.Jobs = DefaultHorizonJobs
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !IsPostgres(cfg.Database) || cfg.Server != "" {
		return nil, errors.New("bench: the horizon scenario runs in process on PostgreSQL: it needs --database postgres://…")
	}
	cfg = cfg.withDefaults()
	// The store's sessions carry a name of their own, so the run can tell when they have ended.
	appName := "hopper-bench-horizon-" + randomSuffix()
	storeURL, err := withParam(cfg.Database, "application_name", appName)
	if err != nil {
		return nil, err
	}
	base := cfg.Database
	cfg.Database = storeURL
	t, err := openTarget(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer t.cleanup()
	t.url = base // the scenario's own sessions (the pin, the reads of statistics) are not the store's
	res := &HorizonResult{Result: *newResult(ctx, cfg, t.name), Pinned: pinned}
	var p *pin
	if pinned {
		if p, err = pinHorizon(ctx, t); err != nil {
			return nil, fmt.Errorf("pin the horizon: %w", err)
		}
		defer p.release()
	}
	timed := &claimTimer{Store: t.store.(*pgstore.Store)}
	if err := throughput(ctx, cfg, timed, &res.Result); err != nil {
		return nil, err
	}
	ds, jobs := timed.stop()
	res.Claims = len(ds)
	if len(ds) > 0 {
		res.ClaimJobs = float64(jobs) / float64(len(ds))
	}
	res.ClaimP50Ms, res.ClaimP99Ms, res.ClaimMaxMs = percentileMs(ds, 0.50), percentileMs(ds, 0.99), percentileMs(ds, 1)
	if cfg.LatencyJobs > 0 {
		if err := latency(ctx, cfg, timed, &res.Result); err != nil {
			return nil, err
		}
	}
	t.store.Close()
	if err := jobsTableStats(ctx, t, appName, p, res); err != nil {
		return nil, fmt.Errorf("read the jobs table's statistics: %w", err)
	}
	return res, nil
}

// claimTimer is the store with its claims timed until stop: the engine calls JobClaim through
// it as it would the store's own.
type claimTimer struct {
	*pgstore.Store
	mu      sync.Mutex
	times   []time.Duration
	jobs    int // returned by the claims timed
	stopped bool
}

func (c *claimTimer) JobClaim(ctx context.Context, p *store.ClaimParams) ([]*hoppertype.JobRow, store.Hold, error) {
	start := time.Now()
	jobs, hold, err := c.Store.JobClaim(ctx, p)
	d := time.Since(start)
	c.mu.Lock()
	if err == nil && !c.stopped {
		c.times = append(c.times, d)
		c.jobs += len(jobs)
	}
	c.mu.Unlock()
	return jobs, hold, err
}

// stop ends the timing and returns the claims' durations and the jobs they returned.
func (c *claimTimer) stop() ([]time.Duration, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	return c.times, c.jobs
}

var _ hopper.Store = (*claimTimer)(nil)

// pin is a snapshot held open: until release, PostgreSQL keeps every row version deleted or
// updated after it was taken.
type pin struct {
	conn *pgx.Conn
	tx   pgx.Tx
	pid  uint32 // the backend holding it
	xmin string // its xmin horizon, as pg_stat_activity.backend_xmin shows it
}

// pinHorizon opens a REPEATABLE READ transaction on a connection of its own and reads from it,
// which takes its snapshot.
func pinHorizon(ctx context.Context, t *target) (*pin, error) {
	conn, err := pgx.Connect(ctx, t.url)
	if err != nil {
		return nil, err
	}
	p := &pin{conn: conn}
	p.tx, err = conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err == nil {
		var n int64
		err = p.tx.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{t.schema, "jobs"}.Sanitize()).Scan(&n)
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

// held reports, on another connection, whether the pin still holds the horizon it took.
func (p *pin) held(ctx context.Context, conn *pgx.Conn) (bool, error) {
	var xmin *string
	err := conn.QueryRow(ctx, `SELECT backend_xmin::text FROM pg_stat_activity WHERE pid = $1`, p.pid).Scan(&xmin)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil && xmin != nil && *xmin == p.xmin, err
}

func (p *pin) release() {
	_ = p.tx.Rollback(context.Background())
	p.conn.Close(context.Background())
}

// jobsTableStats waits for the store's sessions (named appName) to end, so that each has
// reported its counts, then reads the jobs table's dead row versions and size, and whether the
// pin (if any) held its horizon to the end.
func jobsTableStats(ctx context.Context, t *target, appName string, p *pin, res *HorizonResult) error {
	conn, err := pgx.Connect(ctx, t.url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if p != nil {
		if res.PinHeld, err = p.held(ctx, conn); err != nil {
			return err
		}
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		var live int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, appName).Scan(&live)
		if err != nil || live == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	jobs := pgx.Identifier{t.schema, "jobs"}.Sanitize()
	return conn.QueryRow(ctx, `SELECT n_dead_tup, n_tup_upd, n_tup_hot_upd, pg_total_relation_size(relid)
		FROM pg_stat_user_tables WHERE relid = $1::regclass`, jobs).
		Scan(&res.DeadTuples, &res.Updates, &res.HOTUpdates, &res.JobsBytes)
}

// withParam sets a query parameter of a postgres:// URL.
func withParam(raw, key, value string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("bench: database URL: %w", err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
