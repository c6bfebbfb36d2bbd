package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/engine"
)

// The retained scenario (docs/benchmarks.md#at-scale): before the standard benchmark, the store
// is filled with Config.Rows finished jobs and their history, as a store that has run for a
// day holds them, so the benchmark measures the hot path beside them. Rows 0 runs the same code
// on the empty store: the baseline.
//
// Job i of n was created at i·span/n after the start of the last retainedSpan (ending a minute
// before the fill), so ids and times grow with i and every job is within its retention (the
// sweep deletes none of them during the run). By i % 100:
//
//	0–93  completed at its first attempt
//	94–96 completed at its second attempt: the first failed and was retried 1 s later
//	97–98 failed: three attempts (max_attempts 3), retried after 1 s and 2 s, a dead letter
//	99    canceled by the API while it was queued
//
// Each job has the rows the store's triggers write for that history (job_events for the
// promotions of its retries and a cancel; job_attempts for each attempt but the last, which
// the job row holds with its creation) and is counted in the minute stats (job_stats). Ids
// are UUIDv7 text: the creation time in milliseconds, then i, so they sort before the ids of
// the jobs the benchmark enqueues.

// Shapes of the retained jobs, shared by both stores' SQL (retained_postgres.go,
// retained_sqlite.go): a is the number of attempts (0 for a canceled job), c the creation time
// in µs since the epoch.
const (
	retainedSpan  = 22 * time.Hour
	retainedChunk = 200_000 // jobs per transaction of the fill
	attemptsSQL   = `CASE WHEN i % 100 < 94 THEN 1 WHEN i % 100 < 97 THEN 2 WHEN i % 100 < 99 THEN 3 ELSE 0 END`
	kindSQL       = `CASE (i / 100) % 4 WHEN 0 THEN 'send-email' WHEN 1 THEN 'deliver-webhook'
		WHEN 2 THEN 'sync-account' ELSE 'render-report' END`
	// retainedError is the error of the failed attempts.
	retainedError = `'upstream timeout: 503 Service Unavailable'`
)

// MaxRows bounds Config.Rows (i·span must fit in 64 bits).
const MaxRows = 100_000_000

// RetainedResult is what the retained scenario measured: the standard benchmark's figures on a
// store holding RetainedRows finished jobs. The JSON names are stable.
type RetainedResult struct {
	Result
	RetainedRows int     `json:"retained_rows"`
	FillSeconds  float64 `json:"fill_seconds"` // the fill, with its sweep walk and VACUUM ANALYZE or checkpoint
	WalkSeconds  float64 `json:"walk_seconds"` // the sweep's first walk of the filled jobs (SettleSweep)
	DBBytes      int64   `json:"db_bytes"`     // the store's tables and indexes, or file and WAL, after the fill
}

// JSON renders r as one JSON object.
func (r *RetainedResult) JSON() []byte {
	b, _ := json.Marshal(r) // plain numbers and strings always marshal
	return b
}

// filler writes retained jobs straight into a store's tables.
type filler interface {
	// fill inserts jobs lo ≤ i < hi of p, with their history and minute stats, in one
	// transaction.
	fill(ctx context.Context, p fillPlan, lo, hi int) error
	// settle leaves the database as it would be after a day of work: PostgreSQL vacuumed and
	// analyzed (as autovacuum would have), SQLite's WAL checkpointed.
	settle(ctx context.Context) error
	// size is what the store takes on disk, in bytes.
	size(ctx context.Context) (int64, error)
	close()
}

// fillPlan places n retained jobs in time.
type fillPlan struct {
	n        int
	t0, span int64 // µs since the epoch, µs
	// resultTTL and deadLetterTTL are the retentions of completed and canceled jobs, and of
	// failed ones, in µs (the client's defaults).
	resultTTL, deadLetterTTL int64
}

func newFillPlan(n int, now time.Time) fillPlan {
	end := now.Add(-time.Minute)
	return fillPlan{n: n, t0: end.Add(-retainedSpan).UnixMicro(), span: retainedSpan.Microseconds(),
		resultTTL: engine.DefaultResultTTL.Microseconds(), deadLetterTTL: engine.DefaultDeadLetterRetention.Microseconds()}
}

// Retained runs the retained scenario on a fresh store of cfg's kind (in process): it fills
// the store with cfg.Rows finished jobs, then runs the standard benchmark.
func Retained(ctx context.Context, cfg Config) (*RetainedResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Server != "" {
		return nil, errors.New("bench: the retained scenario runs in process: no server")
	}
	cfg = cfg.withDefaults()
	t, err := openTarget(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer t.cleanup()
	res := &RetainedResult{Result: *newResult(ctx, cfg, t.name), RetainedRows: cfg.Rows}
	if err := fillRetained(ctx, cfg, t, res); err != nil {
		return nil, fmt.Errorf("fill %d retained jobs: %w", cfg.Rows, err)
	}
	if err := measure(ctx, cfg, t.store, &res.Result); err != nil {
		return nil, err
	}
	return res, nil
}

// fillRetained fills t with cfg.Rows retained jobs and records the time it took and the size
// of the database after it.
func fillRetained(ctx context.Context, cfg Config, t *target, res *RetainedResult) error {
	var f filler
	var err error
	if t.name == "postgres" {
		f, err = newPostgresFiller(ctx, t)
	} else {
		f, err = newSQLiteFiller(t)
	}
	if err != nil {
		return err
	}
	defer f.close()
	start := time.Now()
	p := newFillPlan(cfg.Rows, start)
	for lo := 0; lo < p.n; lo += retainedChunk {
		hi := min(lo+retainedChunk, p.n)
		if err := f.fill(ctx, p, lo, hi); err != nil {
			return err
		}
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "retained: %d of %d jobs (%.0f jobs/s)\n", hi, p.n,
				float64(hi)/time.Since(start).Seconds())
		}
	}
	// The leader of a store that has run for a day has walked its jobs and saved the windows
	// of finished jobs it skips from then on (engine/expiry.go): so has this one.
	walk := time.Now()
	if err := engine.SettleSweep(ctx, t.store); err != nil {
		return err
	}
	res.WalkSeconds = time.Since(walk).Seconds()
	if err := f.settle(ctx); err != nil {
		return err
	}
	res.FillSeconds = time.Since(start).Seconds()
	res.DBBytes, err = f.size(ctx)
	return err
}

// args are the parameters of the fill's statements for jobs lo ≤ i < hi: $1 lo, $2 hi, $3 t0,
// $4 span, $5 n, $6 the result TTL and $7 the dead-letter retention (µs).
func (p fillPlan) args(lo, hi int) []any {
	return []any{lo, hi, p.t0, p.span, p.n, p.resultTTL, p.deadLetterTTL}
}

// fillStmt is one statement of the fill and the number of parameters it takes (of args).
type fillStmt struct {
	query string
	nargs int
}

// retainedSQL builds the fill's statements for one SQL dialect.
type retainedSQL struct {
	table  func(name string) string // a table's name as the statements write it
	param  func(n int) string       // parameter n (1-based), typed where the dialect needs it
	series string                   // the rows i, from $1 to $2 - 1, as a subquery
	time   func(us string) string   // µs since the epoch as the dialect stores times
	id     func(c, i string) string // the UUIDv7 text of job i created at c (µs)
	blob   func(text string) string // text as the dialect stores args
}

// statements are the fill's statements, given the dialect's minute stats statement.
func (d retainedSQL) statements(stats string) []fillStmt {
	return []fillStmt{{d.insertJobs(), 7}, {d.insertEvents(), 5}, {d.insertAttempts(), 5}, {stats, 5}}
}

// jobs is the job of each i of the chunk: its attempts a, creation time c, kind and queue, and
// run, the µs its last attempt became due (its retries waited 1 s, then 2 s).
func (d retainedSQL) jobs() string {
	gen := `SELECT i, ` + attemptsSQL + ` AS a, ` + d.param(3) + ` + i * ` + d.param(4) + ` / ` + d.param(5) +
		` AS c, ` + kindSQL + ` AS kind FROM ` + d.series + ` AS ser`
	return `(SELECT i, a, c, kind, CASE kind WHEN 'render-report' THEN 'reports' ELSE 'default' END AS queue,
		c + (a - 1) * a / 2 * 1000000 AS run FROM (` + gen + `) AS g) AS j`
}

// insertJobs writes the job rows (parameters: fillPlan.args).
func (d retainedSQL) insertJobs() string {
	started := `CASE WHEN a > 0 THEN run + 2000 END`
	finished := `CASE WHEN a > 0 THEN run + 10000 ELSE c + 500000 END`
	return `INSERT INTO ` + d.table("jobs") + ` (id, kind, queue, args, state, attempt, max_attempts, token,
		version, run_at, heartbeat_at, worker_id, last_error, last_outcome, last_actor, last_reason,
		created_actor, created_reason, created_at, started_at, finished_at, updated_at, expires_at)
	SELECT ` + d.id("c", "i") + `, kind, queue,
		` + d.blob(`'{"account_id":' || i || ',"template":"welcome-v2","locale":"en-US"}'`) + `,
		CASE a WHEN 0 THEN 'canceled' WHEN 3 THEN 'failed' ELSE 'completed' END,
		a, CASE a WHEN 3 THEN 3 ELSE 25 END, a, CASE a WHEN 0 THEN 2 ELSE 3 * a END,
		` + d.time("run") + `, ` + d.time(started) + `, CASE WHEN a > 0 THEN ` + workerSQL + ` END,
		CASE a WHEN 3 THEN ` + retainedError + ` END,
		CASE a WHEN 0 THEN NULL WHEN 3 THEN 'error' ELSE 'ok' END,
		CASE a WHEN 0 THEN 'api' ELSE 'worker' END,
		CASE a WHEN 0 THEN 'canceled by API' WHEN 3 THEN 'no attempts left (3 of 3)' ELSE 'success' END,
		'api', 'enqueue', ` + d.time("c") + `, ` + d.time(started) + `, ` + d.time(finished) + `, ` + d.time(finished) + `,
		` + d.time(finished+` + CASE a WHEN 3 THEN `+d.param(7)+` ELSE `+d.param(6)+` END`) + `
	FROM ` + d.jobs()
}

// steps joins each job to the numbers 1–3 (its events, its attempts).
const steps = `(SELECT 1 AS k UNION ALL SELECT 2 UNION ALL SELECT 3) AS st`

// workerSQL names the worker of job i's attempts.
const workerSQL = `'worker-' || (i % 4 + 1) || '-4242-5f3a9c1e'`

// insertEvents writes the promotions of each job's retries (seq 4 and 7, as the leader makes
// them) and a cancel (seq 2); the enqueue (seq 1) is the job row's.
func (d retainedSQL) insertEvents() string {
	return `INSERT INTO ` + d.table("job_events") + ` (job_id, seq, at, from_state, to_state, actor, reason)
	SELECT ` + d.id("c", "i") + `, CASE WHEN a = 0 THEN 2 ELSE 3 * k - 2 END,
		` + d.time(`CASE WHEN a = 0 THEN c + 500000 ELSE c + (k - 1) * k / 2 * 1000000 END`) + `,
		CASE WHEN a = 0 THEN 'queued' ELSE 'scheduled' END,
		CASE WHEN a = 0 THEN 'canceled' ELSE 'queued' END,
		CASE WHEN a = 0 THEN 'api' ELSE 'leader' END,
		CASE WHEN a = 0 THEN 'canceled by API' ELSE 'run_at reached' END
	FROM ` + d.jobs() + ` JOIN ` + steps + ` ON (k > 1 AND k <= a) OR (a = 0 AND k = 2)`
}

// insertAttempts writes each job's attempts but the last, which ended the job: the job row
// holds that one.
func (d retainedSQL) insertAttempts() string {
	start := `c + (k - 1) * k / 2 * 1000000 + 2000`
	failed := `(k < a OR a = 3)`
	return `INSERT INTO ` + d.table("job_attempts") + ` (job_id, token, attempt, worker_id, started_at, ended_at,
		outcome, error, start_seq, end_seq, to_state, actor, reason)
	SELECT ` + d.id("c", "i") + `, k, k, ` + workerSQL + `,
		` + d.time(start) + `, ` + d.time(start+` + 8000`) + `,
		CASE WHEN ` + failed + ` THEN 'error' ELSE 'ok' END, CASE WHEN ` + failed + ` THEN ` + retainedError + ` END,
		3 * k - 1, 3 * k, CASE WHEN k < a THEN 'scheduled' WHEN a = 3 THEN 'failed' ELSE 'completed' END, 'worker',
		CASE WHEN k < a THEN 'retry' WHEN a = 3 THEN 'no attempts left (3 of 3)' ELSE 'success' END
	FROM ` + d.jobs() + ` JOIN ` + steps + ` ON k < a`
}

// statsColumns are the minute stats of the chunk's jobs (each counted in the minute it was
// created: its attempts ended within 3 s): its enqueues, completions, dead letters, retries and
// the waits of the last attempts (2 ms: the first bucket).
const statsColumns = `count(*), sum(CASE WHEN a IN (1, 2) THEN 1 ELSE 0 END), sum(CASE WHEN a = 3 THEN 1 ELSE 0 END),
		sum(CASE WHEN a > 0 THEN a - 1 ELSE 0 END), sum(CASE WHEN a > 0 THEN 1 ELSE 0 END)`

// statsUpsert adds a chunk's counts to the rows an earlier chunk wrote.
const statsUpsert = `DO UPDATE SET enqueued = s.enqueued + excluded.enqueued,
		completed = s.completed + excluded.completed, failed = s.failed + excluded.failed,
		retried = s.retried + excluded.retried, w0 = s.w0 + excluded.w0`
