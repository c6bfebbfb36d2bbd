package hopper

import (
	"context"
	"errors"
	"fmt"
	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/internal/claim"
	"github.com/hopperjobs/hopper/internal/engine"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
	"go.opentelemetry.io/otel/trace"
	"log/slog"
	"math"
	"os"
	"slices"
	"time"
)

// Defaults and limits of a Client, documented in docs/jobs.md.
const (
	DefaultQueue = "default"
	// DefaultStalledAfter: a running job without a sign of life (claim, Heartbeat,
	// ReportProgress) for this long, while its lease is valid, is shown as stalled.
	DefaultStalledAfter         = 2 * time.Minute
	DefaultMaxAttempts          = 25
	DefaultMaxWorkers           = 100
	DefaultLeaseDuration        = 30 * time.Second
	DefaultIdempotencyRetention = 24 * time.Hour
	// DefaultMaxRescues bounds how often a job is rescued — returned to its queue because its
	// worker was lost (its lease expired, its process died, its stream closed) — before the
	// next loss fails it with OutcomeWorkerLost: a job that crashes or hangs its worker ends
	// in the dead-letter queue instead of looping.
	DefaultMaxRescues = store.DefaultMaxRescues
	// UnlimitedRescues, as a MaxRescues, lets a job be rescued any number of times.
	UnlimitedRescues = -1
	// NoClaimAhead, as Config.ClaimAhead, has workers claim jobs only for their free slots.
	NoClaimAhead = claim.NoAhead
	// MaxClaimAhead bounds Config.ClaimAhead: jobs claimed ahead come within one claim's jobs.
	MaxClaimAhead = engine.DefaultClaimBatch
	// MaxArgsBytes is the default bound on a job's encoded args (1 MiB).
	MaxArgsBytes = 1 << 20
	// MaxRunAtPast: a RunAt more than this far in the past is refused as a likely bug.
	MaxRunAtPast = field.MaxRunAtPast
	// MaxRunAtFuture: a RunAt (or Delay) more than this far ahead is refused.
	MaxRunAtFuture = field.MaxRunAtFuture
)

// Config configures a Client. Only Store is required; the zero value of every other field
// takes the default named in its comment.
type Config struct {
	// Store holds the jobs (sqlitestore.Open or pgstore.Open). Required. The caller closes it
	// after Stop.
	Store Store
	// Workers registers the handlers this process runs. Nil makes an enqueue-only client.
	Workers *Workers
	// Queues are the queues this process works, each with its own concurrency. Default, when
	// Workers is set: {"default": {MaxWorkers: MaxWorkers}}.
	Queues map[string]QueueConfig
	// MaxWorkers bounds concurrent jobs across all queues of this process (default 100).
	MaxWorkers int
	// KindConcurrency bounds the concurrent jobs of a kind in this process: kind → at most that
	// many at once, whatever its queues' and MaxWorkers' room, while the other slots run other
	// kinds (a kind that needs a GPU or much memory). A saturated kind is left out of this
	// process's claims, so its jobs stay queued for other processes, and a capped kind's jobs
	// are claimed within its room (never claimed to wait). Fleet-wide caps are SetLimit's.
	// Each kind named needs a worker in Workers; each bound must be at least 1. Default none.
	KindConcurrency map[string]int
	// ClaimAhead bounds the jobs a queue's workers claim beyond their free slots, for the slots
	// that free up while a claim is on its way (docs/workers.md, "Claiming ahead"). Such a job
	// is running in the store but waits for a slot, at most a second, before its handler
	// starts. 0 takes the default (up to the 1,000 jobs of one claim); NoClaimAhead claims
	// only for free slots; at most 1,000.
	ClaimAhead int
	// WorkerID names this process in leases and attempts (default host-pid-random).
	WorkerID string
	// LeaseDuration is how long a claim holds a job without renewal; the client renews running
	// jobs every third of it. A crashed process's jobs are rescued after it (default 30 s).
	LeaseDuration time.Duration
	// PollInterval is how often an idle worker checks for jobs it was not told about (default
	// 1 s; 5 s on PostgreSQL, where LISTEN/NOTIFY wakes workers at once and polling is only a
	// fallback; while the subscription is up, once a minute). Local enqueues always wake
	// workers at once.
	PollInterval time.Duration
	// PollOnly stops this client from listening for pushed notifications (PostgreSQL
	// LISTEN/NOTIFY), for databases behind a connection pooler in transaction mode. Workers
	// then find jobs by polling every PollInterval, and cancels reach running jobs at the next
	// lease renewal instead of at once.
	PollOnly bool
	// RetryPolicy is the default backoff (default 1 s · 2ⁿ, capped at 1 h, ±10 % jitter). Its
	// RetryBusinessErrors retries every job's business errors (see BusinessError).
	RetryPolicy RetryPolicy
	// MaxAttempts is the default bound on attempts per job (default 25).
	MaxAttempts int
	// MaxRescues is the default bound on a job's rescues, 1–1000, or UnlimitedRescues
	// (default DefaultMaxRescues, 3). Jobs fired by schedules take it too. See
	// InsertOpts.MaxRescues.
	MaxRescues int
	// JobTimeout limits each attempt when neither job nor worker sets a timeout (default none).
	JobTimeout time.Duration
	// RescueInterval is how often the leader looks for expired leases and dead nodes (default
	// 5 s). After the database failed for the leader (and when it leads soon after it
	// started), it first waits a grace for live processes to renew what the outage held up:
	// LeaseDuration/3 before it rescues expired leases, NodeTTL/3 before it rescues dead
	// nodes' jobs, each plus one RescueInterval (15 s each by default).
	RescueInterval time.Duration
	// LeaderTTL is the leader lease: one process of those sharing a store holds it and does the
	// maintenance (promoting due jobs, rescuing). It is renewed every third of it; when its
	// holder dies another process takes over within about 1⅓ of it (default 15 s).
	LeaderTTL time.Duration
	// LeaderIdleAfter lets an idle cluster hold no leader: a leader whose process was not
	// active (no job enqueued, scheduled or started through it, no schedule changed) for this
	// long, and that finds no job running and nothing falling due within it (a scheduled
	// job, a schedule's fire, a suspension's deadline, a result's expiry), stops renewing its
	// lease and lets it lapse. Processes then only read, every RescueInterval and when the
	// earliest of those comes, and one takes the lease again as soon as something is due or
	// it is active. An idle SQLite server then writes nothing. Default 1 min; -1 keeps the
	// lease held for as long as its holder lives.
	LeaderIdleAfter time.Duration
	// NodeTTL: a process that has not heartbeated for this long is dead and the leader requeues
	// its running jobs at once, without waiting for their leases (default 30 s).
	NodeTTL time.Duration
	// DisableMaintenance keeps this client out of the leader election, so it never promotes due
	// jobs or rescues; some other process sharing the store must.
	DisableMaintenance bool
	// MaxArgsBytes bounds a job's encoded args (default 1 MiB), also the args a merge makes
	// (InsertOpts.MergeKey with MergeAppend or MergeReplace).
	MaxArgsBytes int
	// ResultTTL is how long completed and canceled jobs are kept, unless the job
	// (InsertOpts.ResultTTL) or its worker (Worker.ResultTTL) says otherwise (default 24 h).
	// From then on Get and List treat the job as gone; the leader deletes it within a
	// SweepInterval.
	ResultTTL time.Duration
	// SweepInterval is how often the leader walks the jobs table to delete expired jobs
	// (default 1 min, at least 100 ms; see docs/results.md). Shorter makes expired rows go
	// sooner at the cost of more walks of the table.
	SweepInterval time.Duration
	// DeadLetterRetention is how long failed jobs, the dead-letter queue, are kept (default 7
	// days), whatever their result TTL.
	DeadLetterRetention time.Duration
	// OnDeadLetter, when set, is called with each job this process's workers (or remote workers
	// served through it) move to failed, after that state is committed. Calls come one at a
	// time from a goroutine the client owns, through a queue of 1,000 (a notification that
	// finds it full is dropped and logged); ctx ends when Stop gives up waiting. Each job is
	// read from the store first: while the store is unavailable the read is retried with
	// backoff, so notifications wait out an outage. A panic is recovered and logged. Nothing
	// the hook does can change the dead letter.
	OnDeadLetter func(ctx context.Context, job *JobRow)
	// DeadLetterWebhook, when set, is an http(s) URL that receives the same notifications as
	// OnDeadLetter: a POST of the job as JSON, with a 5 s timeout and up to 3 tries. Failures
	// are logged only.
	DeadLetterWebhook string
	// MaxCPU is the resource governor's CPU limit (contract 15): while this process uses at
	// least this fraction of the CPU available to it (0.8 is 80 % of its cgroup's quota, or of
	// the machine's CPUs outside a limiting cgroup v2), it claims no new jobs. Running jobs are
	// never interrupted. The use is sampled every second and smoothed over a few; new jobs
	// start again once it is under 90 % of the limit. 0 (default) is no limit; at most 1.
	// Linux only (elsewhere NewClient returns ErrGovernorUnsupported). See
	// docs/flow-control.md#resource-governor.
	MaxCPU float64
	// MaxMemory is the resource governor's memory limit in bytes: while this process's cgroup
	// (or, outside one, the machine) uses at least this much memory, not counting page cache
	// the kernel can reclaim, it claims no new jobs; it starts them again under 90 % of it.
	// 0 (default) is no limit.
	MaxMemory int64
	// Logger receives structured logs (default: discarded).
	Logger *slog.Logger
	// Observers hear of every job this client enqueues, every attempt it starts (its own
	// workers' and remote workers' served through hopper serve), every outcome it writes and
	// every rescue its leader makes: the hook for metrics (see Observer). Default none.
	Observers []Observer
	// TracerProvider makes the spans each attempt of this process's workers runs in, whose
	// parent is the trace context the job carries (see docs/observability.md). Default the
	// OpenTelemetry global provider, which records nothing until the application sets one.
	// Enqueues record the caller's span context in the job's traceparent header whatever
	// the provider.
	TracerProvider trace.TracerProvider
	// Clock is the time source (default the wall clock); tests inject a fake one.
	Clock Clock
	// Schedules are recurring schedules declared in code. Start reconciles the store with
	// them: it adds or updates each one and removes the code-declared schedules no longer
	// listed; schedules added through AddSchedule, the API or the CLI are never touched. Nil
	// (the default) leaves every stored schedule alone; an empty non-nil slice removes every
	// code-declared one. Processes sharing a store should declare the same set. See Schedule.
	Schedules []Schedule
	// Limits are fleet-wide caps on running jobs (see Limit) that Start stores, as SetLimit
	// would, before it starts working; RateLimits are fleet-wide rate limits (see RateLimit),
	// stored as SetRateLimit would (a changed limit keeps its bucket, so a restart lets no
	// extra burst through). Being fleet-wide, each holds for every process sharing the store
	// and the last process to start sets it: processes should declare the same. A cap or rate
	// limit not listed is left as stored (an operator's, set with the CLI or the API, stays
	// until a process starts with a different declaration of it), and a zero MaxRunning or
	// Rate removes the one it names. A Limit or RateLimit with PerKey declares a limit per
	// fairness key (docs/flow-control.md#limits-per-key). See docs/flow-control.md.
	Limits     []Limit
	RateLimits []RateLimit
}

// QueueConfig configures one queue of a worker process.
type QueueConfig struct {
	// MaxWorkers bounds concurrent jobs of this queue in this process (default Config.MaxWorkers).
	MaxWorkers int
	// Weight is the queue's part of this process's MaxWorkers when queues compete for them
	// (default 1): a queue with work gets at least Weight ÷ (the weights of the queues with
	// work) of the slots. A weight stored with Client.SetQueueWeight (or `hopper queues set
	// --weight`) applies to every process and takes precedence. See docs/flow-control.md.
	Weight int
}

func (c Config) withDefaults() Config {
	if c.MaxWorkers == 0 {
		c.MaxWorkers = DefaultMaxWorkers
	}
	if c.Workers != nil && c.Queues == nil {
		c.Queues = map[string]QueueConfig{DefaultQueue: {}}
	}
	queues := make(map[string]QueueConfig, len(c.Queues))
	for name, q := range c.Queues {
		if q.MaxWorkers == 0 {
			q.MaxWorkers = c.MaxWorkers
		}
		queues[name] = q
	}
	c.Queues = queues
	if c.WorkerID == "" {
		c.WorkerID = fmt.Sprintf("%s-%d-%s", hostname(), os.Getpid(), uuid.NewString()[:8])
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxRescues == 0 {
		c.MaxRescues = DefaultMaxRescues
	}
	if c.MaxArgsBytes == 0 {
		c.MaxArgsBytes = MaxArgsBytes
	}
	return c
}

func (c Config) validate() error {
	if c.Store == nil {
		return invalid("Config.Store", "is required")
	}
	var errs []error
	if c.MaxWorkers < 0 {
		errs = append(errs, invalid("Config.MaxWorkers", "%d is negative", c.MaxWorkers))
	}
	switch {
	case c.ClaimAhead > MaxClaimAhead:
		errs = append(errs, invalid("Config.ClaimAhead", "%d is above %d, the jobs of one claim", c.ClaimAhead, MaxClaimAhead))
	case c.ClaimAhead < NoClaimAhead:
		errs = append(errs, invalid("Config.ClaimAhead", "%d is negative: NoClaimAhead (-1) claims only for free slots", c.ClaimAhead))
	}
	if c.MaxAttempts < 0 || c.MaxAttempts > 1000 {
		errs = append(errs, invalid("Config.MaxAttempts", "%d is outside 1–1000", c.MaxAttempts))
	}
	if err := checkMaxRescues("Config.MaxRescues", c.MaxRescues); err != nil {
		errs = append(errs, err)
	}
	if c.LeaseDuration < time.Second {
		errs = append(errs, invalid("Config.LeaseDuration", "%s is under 1s", c.LeaseDuration))
	}
	for name, d := range map[string]time.Duration{
		"PollInterval": c.PollInterval, "RescueInterval": c.RescueInterval, "LeaderTTL": c.LeaderTTL,
		"NodeTTL": c.NodeTTL, "JobTimeout": c.JobTimeout, "ResultTTL": c.ResultTTL,
		"DeadLetterRetention": c.DeadLetterRetention, "SweepInterval": c.SweepInterval,
	} {
		if d < 0 {
			errs = append(errs, invalid("Config."+name, "%s is negative", d))
		}
	}
	if math.IsNaN(c.MaxCPU) || c.MaxCPU < 0 || c.MaxCPU > 1 {
		errs = append(errs, invalid("Config.MaxCPU", "%v is outside 0–1 (a fraction of the CPU available: 0.8 is 80 %%)", c.MaxCPU))
	}
	if c.MaxMemory < 0 {
		errs = append(errs, invalid("Config.MaxMemory", "%d is negative", c.MaxMemory))
	}
	if c.SweepInterval > 0 && c.SweepInterval < 100*time.Millisecond {
		errs = append(errs, invalid("Config.SweepInterval", "%s is under 100ms", c.SweepInterval))
	}
	if c.LeaderTTL > 0 && c.LeaderTTL < 30*time.Millisecond {
		errs = append(errs, invalid("Config.LeaderTTL", "%s is under 30ms", c.LeaderTTL))
	}
	for name, q := range c.Queues {
		if err := checkQueueName(name); err != nil {
			errs = append(errs, err)
		}
		if q.MaxWorkers < 0 {
			errs = append(errs, invalid("Config.Queues["+name+"].MaxWorkers", "%d is negative", q.MaxWorkers))
		}
		if q.Weight < 0 || q.Weight > MaxQueueWeight {
			errs = append(errs, invalid("Config.Queues["+name+"].Weight", "%d is outside 0–%d", q.Weight, MaxQueueWeight))
		}
	}
	for kind, n := range c.KindConcurrency {
		field := "Config.KindConcurrency[" + kind + "]"
		switch {
		case n < 1:
			errs = append(errs, invalid(field, "%d is under 1", n))
		case c.Workers == nil || !slices.Contains(c.Workers.Kinds(), kind):
			errs = append(errs, invalid(field, "names a kind with no worker in Config.Workers"))
		}
	}
	for i, l := range c.Limits {
		if _, err := limitParams(l); err != nil {
			errs = append(errs, prefixField(fmt.Sprintf("Config.Limits[%d].", i), err))
		}
	}
	for i, l := range c.RateLimits {
		if _, err := rateParams(l); err != nil {
			errs = append(errs, prefixField(fmt.Sprintf("Config.RateLimits[%d].", i), err))
		}
	}
	if err := checkPolicy("Config.RetryPolicy", &c.RetryPolicy); err != nil {
		errs = append(errs, err)
	}
	if err := checkWebhook(c.DeadLetterWebhook); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func hostname() string {
	host, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return host
}

// logger is l, or a logger that discards when l is nil (Config.Logger's default).
func logger(l *slog.Logger) *slog.Logger {
	if l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
