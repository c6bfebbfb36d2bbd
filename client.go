package hopper

import (
	"context"
	"errors"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"os"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/engine"
	"github.com/hopperjobs/hopper/internal/jobtrace"
	"github.com/hopperjobs/hopper/internal/store"
	"go.opentelemetry.io/otel"
)

// Client enqueues, inspects and cancels jobs, and (with Workers) works them. It is safe for
// concurrent use. Start it to work jobs; Stop it to shut down gracefully.
type Client struct {
	cfg    Config
	store  Store
	clock  Clock
	engine *engine.Engine
	avail  availability    // remote workers waiting for jobs (Activate)
	dlHook *deadLetterHook // nil without Config.OnDeadLetter and DeadLetterWebhook
	obs    *observers
	remote remoteAttempts // attempts claimed for remote workers, until their outcome

	workerAPI *workerAPI

	mu      sync.Mutex
	started bool
	stopped bool
}

// NewClient checks cfg and returns a client. It returns a *ValidationError (errors.Is
// ErrInvalid) naming the first bad field.
func NewClient(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, store: cfg.Store, clock: clock.OrReal(cfg.Clock)}
	c.workerAPI = &workerAPI{c: c}
	c.obs = &observers{list: cfg.Observers, clock: c.clock, log: logger(cfg.Logger)}
	tp := cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	ecfg := engine.Config{
		Store: cfg.Store, Clock: c.clock, Logger: cfg.Logger, WorkerID: cfg.WorkerID,
		Queues: map[string]int{}, Weights: map[string]int{}, MaxWorkers: cfg.MaxWorkers, KindConcurrency: cfg.KindConcurrency, ClaimAhead: cfg.ClaimAhead, LeaseDuration: cfg.LeaseDuration,
		PollInterval: cfg.PollInterval, RetryPolicy: cfg.RetryPolicy, JobTimeout: cfg.JobTimeout,
		RescueInterval: cfg.RescueInterval, Maintenance: !cfg.DisableMaintenance, MaxRescues: cfg.MaxRescues,
		LeaderTTL: cfg.LeaderTTL, LeaderIdleAfter: cfg.LeaderIdleAfter, NodeTTL: cfg.NodeTTL, Host: hostname(), PID: os.Getpid(),
		PollOnly: cfg.PollOnly, ResultTTL: cfg.ResultTTL, DeadLetterRetention: cfg.DeadLetterRetention,
		SweepInterval: cfg.SweepInterval, MaxArgsBytes: cfg.MaxArgsBytes, Tracer: tp.Tracer(jobtrace.ScopeName),
		Spawner: c.spawnJobs,
	}
	if cfg.Workers != nil { // an enqueue-only client claims nothing to hold back
		gov, err := newGovernor(cfg, c.clock)
		if err != nil {
			return nil, err
		}
		ecfg.Governor = gov
	}
	ecfg.OnAvailable = c.avail.wake
	c.dlHook = newDeadLetterHook(cfg)
	c.hookEngine(&ecfg)
	if cfg.Workers != nil {
		ecfg.Workers = cfg.Workers
		for name, q := range cfg.Queues {
			ecfg.Queues[name] = q.MaxWorkers
			ecfg.Weights[name] = q.Weight
		}
	}
	eng, err := engine.New(ecfg)
	if err != nil {
		return nil, err
	}
	c.engine = eng
	return c, nil
}

// hookEngine sets the engine's hooks the client needs: the dead-letter hook's and the
// observers'. With neither, the engine calls none (nothing on the hot path).
func (c *Client) hookEngine(ecfg *engine.Config) {
	ecfg.OnOutcome = func(p *store.FinishParams, err error) {
		// The attempt is over, whether the store took its outcome or found it stale.
		remote := c.remote.take(workerapi.LeaseRef{ID: p.ID, Token: p.Token})
		if c.dlHook != nil {
			c.dlHook.outcome(p, err)
		}
		c.obs.outcome(p, err, remote)
	}
	if c.obs.enabled() {
		ecfg.OnClaimed = func(rows []*JobRow, batch bool) {
			if batch {
				c.obs.claimed(rows, false, oneBatch(rows))
			} else {
				c.obs.claimed(rows, false, nil)
			}
		}
		ecfg.OnRescued = c.obs.rescued
		ecfg.OnWorkflowsEnded = c.obs.workflowsEnded
		ecfg.OnInserted = func(rows []*JobRow) { c.obs.inserted(context.Background(), rows...) }
	}
}

// Start begins working jobs (when Workers are configured) and the maintenance duties
// (promoting due jobs, rescuing expired leases, firing schedules). The goroutines it starts
// run until Stop; ctx only carries values to them. It first reconciles Config.Schedules with
// the store, returning a *ValidationError for a bad declaration.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started {
		return errors.New("hopper: client already started")
	}
	if err := c.reconcileSchedules(ctx); err != nil {
		return err
	}
	if err := c.storeDeclaredLimits(ctx); err != nil {
		return err
	}
	c.started = true
	if c.dlHook != nil {
		c.dlHook.start()
	}
	return c.engine.Start(ctx)
}

// Stop shuts down gracefully: it stops claiming jobs, waits for running jobs until ctx ends,
// then cancels their contexts and releases the jobs that did not finish back to the queue at
// once (they do not wait for their leases to expire). Every outcome is written before Stop
// returns. Call Stop with an already-canceled ctx to stop hard.
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	if !c.started || c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	c.mu.Unlock()
	err := c.engine.Stop(ctx)
	if c.dlHook != nil {
		c.dlHook.stop(ctx) // after the engine: its last outcomes may be dead letters
	}
	return err
}

// IsLeader reports whether this client holds the leader lease (and does the maintenance).
func (c *Client) IsLeader() bool { return c.engine.IsLeader() }

// LeaderID is the WorkerID of the node that held the leader lease when this client last took
// part in the election or read the lease (every third of LeaderTTL, or RescueInterval while
// it does not lead); "" before the first, and while no node holds a live lease (an idle
// cluster: Config.LeaderIdleAfter).
func (c *Client) LeaderID() string { return c.engine.LeaderID() }

// Ping checks that the client's store answers, within 2 s: a round trip to PostgreSQL; a
// read of the SQLite file, and its last write did not fail for want of disk or access. The
// error wraps ErrUnavailable when the store cannot be reached or cannot take writes.
func (c *Client) Ping(ctx context.Context) error { return c.store.Ping(ctx) }

// LoopStatus is the state of one of a client's background loops that call the store
// (claims, outcome writes, lease renewals, the node heartbeat, the leader election and the
// leader's duties): what it does, how many of its calls failed in a row, since when, and the
// last error.
type LoopStatus = backoff.Status

// FailingLoops returns the background loops whose last call to the store failed. Each one
// retries with backoff (100 ms doubling up to 30 s, or 5 s for claims and outcome writes) and
// logs its first failure and its recovery.
func (c *Client) FailingLoops() []LoopStatus { return c.engine.Failing() }

// Running returns how many jobs this process is running now.
func (c *Client) Running() int { return c.engine.Running() }

// Now is the client's clock (Config.Clock, by default the wall clock): the time its jobs'
// timestamps are measured against, e.g. to tell whether a running job is stalled.
func (c *Client) Now() time.Time { return c.clock.Now() }

// WorkerID is the name this process records on its leases and attempts.
func (c *Client) WorkerID() string { return c.cfg.WorkerID }

// Config is the client's configuration with its defaults filled in (a copy: changing it
// changes nothing).
func (c *Client) Config() Config { return c.cfg }
