// Package remote runs Hopper workers in a process other than the server's: the same
// hopper.Workers, the same handlers, the same handler-context calls (ReportProgress,
// Heartbeat, ExtendLease, SetResult), but jobs come from `hopper serve` over its RPC API
// instead of from a store. Moving a worker out of process changes the line that starts it:
//
//	client, _ := hopper.NewClient(hopper.Config{Store: st, Workers: ws}) // in process
//	worker, _ := remote.New(remote.Config{URL: "http://hopper:7070", Workers: ws}) // remote
//
// By default the server pushes jobs into a stream (credit = Concurrency); Mode Poll uses long
// polling instead.
package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/claim"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/governor"
	"github.com/hopperjobs/hopper/internal/jobtrace"
	"github.com/hopperjobs/hopper/internal/lease"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// Mode is how a worker gets its jobs.
type Mode int

const (
	// Stream opens a job stream: the server pushes jobs as they become available, never more
	// unfinished than Concurrency, and keeps their leases alive while the stream is open.
	Stream Mode = iota
	// Poll asks for jobs with long polls (Activate) and renews each job's lease itself.
	Poll
)

// Config configures a remote Worker. URL and Workers are required.
type Config struct {
	// URL is the server's base URL, e.g. "http://127.0.0.1:7070".
	URL string
	// APIKey is sent as "Authorization: Bearer <key>" (a key with the work scope).
	APIKey string
	// HTTPClient carries the calls. By default the worker uses its own: HTTP/1.1 (or HTTP/2
	// over TLS) for calls, and for the stream on which it reports outcomes HTTP/2, over TLS
	// or in plain text (h2c, which `hopper serve` speaks). A client given here carries the
	// report stream too when it speaks HTTP/2 to the server; when it does not (an HTTP/1.1
	// transport or proxy), outcomes go in Report requests, which is slower under load but
	// works the same.
	HTTPClient *http.Client
	// Workers holds the handlers, as for hopper.Config.Workers.
	Workers *attempt.Workers
	// Queue to work (default "default" when Queues is empty too).
	Queue string
	// Queues to work as well as Queue (merged, a queue named twice counting once; at most
	// workerapi.MaxActivateQueues). The server shares the worker's jobs between them by the
	// weights stored for the queues (hopper.Client.SetQueueWeight, default 1): a stream's
	// credit (Concurrency), a poll's jobs. Needs a server that knows of several queues
	// (older ones work the first only).
	Queues []string
	// Concurrency is the most jobs run at once (default 10, at most 1000).
	Concurrency int
	// KindConcurrency bounds the concurrent jobs of a kind in this worker: kind → at most that
	// many at once, while its other slots run other kinds. A saturated kind is left out of
	// the worker's claims, so its jobs stay queued for other workers. In Poll mode a poll
	// leaves out the saturated kinds and takes no more jobs than the capped kinds it asks for
	// have room for (a capped kind partly used makes polls smaller, and none claims ahead). In
	// Stream mode the stream asks the server for the caps (StreamJobsRequest.kind_concurrency,
	// a bound above the stream's credit taken as the credit): the server pushes no more jobs of
	// a kind than its bound until the worker reports on them, the rest of the credit going to
	// other kinds; at most 64 kinds. The worker counts its running jobs per kind too: a job
	// pushed while its kind has no room (jobs of an earlier stream still running, or a server
	// older than that field, which ignores it) waits, as prefetched jobs do, for a job of its
	// kind to end. Each kind named needs a worker in Workers; each bound must be at least 1.
	// Default none.
	KindConcurrency map[string]int
	// FetchParentResults asks the server for each job's parents' results with the job
	// (ActivateRequest.fetch_parent_results), so that a handler's hopper.ParentResults reads
	// them without a call of its own; the server leaves out those larger than its
	// max_args_bytes, which the handler then reads with a call (WorkerService.ParentResults).
	// It costs the server a read per job claimed: set it for workers of fan-in steps. By
	// default a handler's ParentResults makes that call.
	FetchParentResults bool
	// Name identifies this worker on leases and attempts (default host-pid).
	Name string
	// Mode is Stream (default) or Poll.
	Mode Mode
	// LeaseDuration is each job's lease (default 30 s).
	LeaseDuration time.Duration
	// PollWait is how long one long poll waits for a job (default 30 s).
	PollWait time.Duration
	// ClaimAhead bounds the jobs a worker in Poll mode asks for beyond its free slots, for the
	// slots its running jobs free while a poll is on its way (docs/workers.md, "Claiming
	// ahead"). Such a job is running on the server but waits in this process, at most a
	// second (or a quarter of LeaseDuration), for a slot; if the process dies meanwhile it is
	// rescued when its lease expires, which counts towards its MaxRescues. 0 takes the
	// default (up to the 1,000 jobs of one poll); claim.NoAhead asks only for free
	// slots; at most 1,000. Only a worker of a single queue claims ahead. In Stream mode the
	// server claims ahead for the stream and holds those jobs itself. The server takes none
	// ahead where a fleet-wide cap, a rate limit or a disabled kind applies; a server older
	// than ActivateRequest.ahead does not know that field and claims the whole max_jobs, caps
	// or not: with such a server and capped queues, use claim.NoAhead.
	ClaimAhead int
	// Prefetch is how many jobs a worker in Stream mode holds beyond Concurrency: its stream's
	// credit is Concurrency+Prefetch (at most 1,000), and the jobs pushed while every slot is
	// busy wait here, in the order they came, for a slot, their leases renewed with the
	// running jobs'. A job that ends frees its slot to one that waits at once, instead of
	// after a round trip to the server (report, claim, push), so short jobs run faster
	// (docs/benchmarks.md, "Through the server"); but a waiting job waits for a running one
	// to end, however long that takes, while another worker may have a free slot: set it for
	// short jobs. Jobs still waiting when the worker stops go back to their queue, attempt
	// unspent. Default 0: the worker holds no more jobs than it runs. Poll mode claims ahead
	// instead (ClaimAhead).
	Prefetch int
	// MaxCPU and MaxMemory are the worker's resource governor (contract 15): while this
	// process uses at least MaxCPU of the CPU available to it (0.8 is 80 % of its cgroup's
	// quota, or of the machine's CPUs) or MaxMemory bytes, it takes no new job — in Poll mode
	// it does not poll, in Stream mode the server holds its stream's credit (WorkerService.Hold)
	// — and its running jobs go on. New jobs come again once use is under 90 % of the limits.
	// 0 (default) is no limit; MaxCPU at most 1. Linux only (elsewhere New returns
	// hopper.ErrGovernorUnsupported). See docs/flow-control.md#resource-governor.
	MaxCPU    float64
	MaxMemory int64
	Logger    *slog.Logger
	// Observers hear the attempts this worker runs, as hopper.Config.Observers hear a
	// client's: hopper.JobStarted when a handler starts (Wait 0: the server measures waits) and
	// hopper.JobEnded when it returns (Outcome; Run: the handler's time; State only where the
	// outcome alone decides it: completed, snoozed, suspended, released); a batch's jobs start
	// with their Batch (its id, size and each job's place; Linger 0, as Wait). Give it a
	// hopperprom.Metrics to count them. Called on the attempt's goroutine: fast, non-blocking,
	// safe for concurrent use; a panic is recovered and logged.
	Observers []hoppertype.Observer
	// TracerProvider makes the span each attempt runs in, whose parent is the trace context
	// the job carries (its enqueuer's traceparent), as in process. Default the OpenTelemetry
	// global provider, which records nothing until the application sets one.
	TracerProvider trace.TracerProvider
}

// Worker runs jobs from a server. Start it, then Stop it.
type Worker struct {
	cfg      Config
	log      *slog.Logger
	api      hopperv1connect.WorkerServiceClient
	out      *batcher // attempts' outcomes, in batches
	handlers *attempt.Workers
	kinds    []string
	batching []*hopperv1.BatchKind // the kinds taken in batches (batchrun.go)
	queues   []string              // Config.Queue and Queues, merged
	// clock paces the worker's waits on its jobs (attempt timeouts, lease renewals, report
	// retries) and on its server (reconnects, poll coalescing): the wall clock, or a fake one
	// that only this package's tests can set (newWorker).
	clock  clock.Clock
	tracer trace.Tracer

	workCtx    context.Context // handlers' parent: canceled with ErrShutdown at a hard stop
	cancelWork context.CancelCauseFunc
	intakeCtx  context.Context // the stream or the polls: a stream ends when Stop has drained, polls at once
	stopIntake context.CancelFunc
	keepCtx    context.Context // the lease keeper: ends when Stop has drained
	stopKeep   context.CancelFunc
	loops      sync.WaitGroup
	jobs       sync.WaitGroup

	mu       sync.Mutex
	started  bool
	stopping bool
	running  map[attemptKey]*run
	busy     int                      // Stream mode: slots taken by handlers, at most Config.Concurrency
	waiting  []*run                   // Stream mode: pushed while every slot, or its kind's room, was taken, in push order
	declined []*hopperv1.ActivatedJob // pushed to a stopping worker: released once its stream is closed
	declineC chan struct{}            // a job was declined (buffered 1)

	intake *backoff.Tracker // the stream, or the polls: reconnects and retries back off
	// refusal is why the worker stopped taking jobs on its own: the server refused its API
	// key, or serves no input limits (giveUp). Guarded by mu.
	refusal error
	leases  *backoff.Tracker   // the lease renewals' outage state
	keeper  lease.Keeper       // renews the running jobs' leases
	gov     *governor.Governor // nil without MaxCPU and MaxMemory
	own     *ownClients        // the HTTP clients the worker made itself (no Config.HTTPClient)
	// kindCaps count the running jobs of the kinds capped by Config.KindConcurrency: a poll
	// reserves their room before it claims (poll.go); in Stream mode, where the server applies
	// the caps to what it pushes, they are a second guard, for jobs of a stream that closed
	// still running as another opens and for a server that ignores the caps (admit).
	kindCaps *claim.KindCaps
	holds    *backoff.Tracker // telling the server the governor's state (govern.go)
	// limits are the server's input limits, read once at start (limits.go).
	limits      servedLimits
	limitsRetry *backoff.Tracker
}

// attemptKey names one attempt: a job and the lease token it was given with. A job can be
// here twice for a moment (an old attempt winding down, a new one started elsewhere in this
// process), so attempts are never told apart by job id alone.
type attemptKey struct {
	id    string
	token int64
}

func keyOf(j *hopperv1.ActivatedJob) attemptKey { return attemptKey{j.GetId(), j.GetLeaseToken()} }

type run struct {
	job    *hopperv1.ActivatedJob
	ctx    context.Context // the handler's; canceled when its lease is lost, even before it starts
	cancel context.CancelCauseFunc
	lease  time.Duration
	done   chan struct{} // closed when its handler and report have returned
	// batch, on the first attempt of a batch (batchrun.go), is the batch's attempts, this
	// one first: they wait for a slot, start and end together.
	batch []*run
}

// New checks cfg and returns a worker ready to Start.
func New(cfg Config) (*Worker, error) { return newWorker(cfg, clock.Real{}) }

// newWorker is New on clk.
func newWorker(cfg Config, clk clock.Clock) (*Worker, error) {
	if cfg.URL == "" {
		return nil, errors.New("remote: Config.URL is required")
	}
	if cfg.Workers == nil {
		return nil, errors.New("remote: Config.Workers is required")
	}
	streamClient := cfg.HTTPClient
	var own *ownClients
	if cfg.HTTPClient == nil {
		own = newOwnClients(cfg.URL)
		cfg.HTTPClient, streamClient = own.calls, own.stream
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 10
	}
	if cfg.Concurrency < 1 || cfg.Concurrency > workerapi.MaxStreamCredit {
		return nil, fmt.Errorf("remote: Config.Concurrency %d is outside 1–%d", cfg.Concurrency, workerapi.MaxStreamCredit)
	}
	switch {
	case cfg.Prefetch < 0:
		return nil, fmt.Errorf("remote: Config.Prefetch %d is negative", cfg.Prefetch)
	case cfg.Prefetch > 0 && cfg.Mode == Poll:
		return nil, errors.New("remote: Config.Prefetch is for Stream mode; Poll mode claims ahead (ClaimAhead)")
	case cfg.Concurrency+cfg.Prefetch > workerapi.MaxStreamCredit:
		return nil, fmt.Errorf("remote: Config.Concurrency %d and Prefetch %d: together at most %d, a stream's credit",
			cfg.Concurrency, cfg.Prefetch, workerapi.MaxStreamCredit)
	}
	switch {
	case cfg.ClaimAhead > workerapi.MaxActivateJobs:
		return nil, fmt.Errorf("remote: Config.ClaimAhead %d is above %d, the jobs of one poll", cfg.ClaimAhead, workerapi.MaxActivateJobs)
	case cfg.ClaimAhead < claim.NoAhead:
		return nil, fmt.Errorf("remote: Config.ClaimAhead %d is negative: claim.NoAhead (-1) asks only for free slots", cfg.ClaimAhead)
	case cfg.ClaimAhead == 0:
		cfg.ClaimAhead = workerapi.MaxActivateJobs
	}
	if cfg.Name == "" {
		host, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	asks := workerapi.ActivateParams{Worker: cfg.Name, Queue: cfg.Queue, Queues: cfg.Queues}
	if err := asks.Check(); err != nil {
		return nil, fmt.Errorf("remote: Config: %w", err)
	}
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = 30 * time.Second
	}
	if cfg.LeaseDuration < time.Second || cfg.LeaseDuration > 24*time.Hour {
		// What the server takes: a stream or poll asking for another would be refused, again and again.
		return nil, fmt.Errorf("remote: Config.LeaseDuration %s is outside 1s–24h", cfg.LeaseDuration)
	}
	if cfg.PollWait == 0 {
		cfg.PollWait = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	gov, err := governor.New(governor.Config{MaxCPU: cfg.MaxCPU, MaxMemory: cfg.MaxMemory, Clock: clk,
		Logger: cfg.Logger, Attrs: []any{"worker", cfg.Name}})
	if err != nil {
		return nil, fmt.Errorf("remote: Config.MaxCPU, MaxMemory: %w", err)
	}
	tp := cfg.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	w := &Worker{gov: gov, cfg: cfg, log: cfg.Logger, handlers: cfg.Workers, clock: clk, running: map[attemptKey]*run{},
		tracer:   tp.Tracer(jobtrace.ScopeName),
		declineC: make(chan struct{}, 1), queues: asks.QueueNames(), kindCaps: claim.NewKindCaps(cfg.KindConcurrency)}
	intake := "job stream"
	if cfg.Mode == Poll {
		intake = "activate jobs"
	}
	w.intake = backoff.New(backoff.Config{Name: intake, Policy: backoff.WorkPolicy, Clock: clk, Logger: cfg.Logger,
		Attrs: []any{"worker", cfg.Name, "url", cfg.URL}})
	w.leases = backoff.New(backoff.Config{Name: "extend leases", Clock: clk, Logger: cfg.Logger, Attrs: []any{"worker", cfg.Name}})
	w.holds = backoff.New(backoff.Config{Name: "report the governor's state", Policy: backoff.WorkPolicy, Clock: clk,
		Logger: cfg.Logger, Attrs: []any{"worker", cfg.Name, "url", cfg.URL}})
	if w.handlers.Len() == 0 {
		return nil, errors.New("remote: Config.Workers has no workers")
	}
	w.kinds = w.handlers.Kinds()
	sort.Strings(w.kinds)
	w.batching = batchKinds(w.handlers, w.kinds)
	if err := checkKindConcurrency(cfg, w.kinds); err != nil {
		return nil, err
	}
	var interceptors []connect.ClientInterceptor
	if cfg.APIKey != "" {
		interceptors = append(interceptors, Bearer(cfg.APIKey))
	}
	w.api = hopperv1connect.NewWorkerServiceClient(connect.NewClient(
		connecthttp.NewTransport(cfg.HTTPClient, cfg.URL), interceptors...))
	w.out = &batcher{api: w.api, clock: clk, stream: hopperv1connect.NewWorkerServiceClient(connect.NewClient(
		connecthttp.NewTransport(streamClient, cfg.URL), interceptors...))}
	w.limits.known = make(chan struct{})
	w.limits.info = hopperv1connect.NewServerServiceClient(connect.NewClient(
		connecthttp.NewTransport(cfg.HTTPClient, cfg.URL), interceptors...))
	w.limitsRetry = backoff.New(backoff.Config{Name: "read the server's input limits", Policy: backoff.WorkPolicy,
		Clock: clk, Logger: cfg.Logger, Attrs: []any{"worker", cfg.Name, "url", cfg.URL}})
	w.own = own
	return w, nil
}

// ownClients are the HTTP clients of a worker given none: one for calls, one for the report
// stream, which needs HTTP/2.
type ownClients struct {
	calls, stream *http.Client
	transports    []*http.Transport
}

func newOwnClients(url string) *ownClients {
	calls := http.DefaultTransport.(*http.Transport).Clone()
	calls.MaxIdleConnsPerHost = 16 // a report, a renewal and a poll can be on the wire at once
	stream := calls
	if strings.HasPrefix(url, "http://") {
		stream = calls.Clone()
		stream.Protocols = new(http.Protocols)
		stream.Protocols.SetUnencryptedHTTP2(true)
	}
	return &ownClients{calls: &http.Client{Transport: calls}, stream: &http.Client{Transport: stream},
		transports: []*http.Transport{calls, stream}}
}

// close closes the idle connections of the clients, and with them their goroutines.
func (o *ownClients) close() {
	if o == nil {
		return
	}
	for _, t := range o.transports {
		t.CloseIdleConnections()
	}
}

// Bearer is a Connect client interceptor that sends key as "Authorization: Bearer <key>" with
// every call, for clients of the API built with the generated code.
func Bearer(key string) connect.ClientInterceptor {
	return func(next connect.ClientFunc) connect.ClientFunc {
		return func(ctx context.Context, spec connect.Spec) (connect.ClientStream, error) {
			ctx, info := connect.NewClientContext(ctx)
			info.RequestHeader().Set("Authorization", "Bearer "+key)
			return next(ctx, spec)
		}
	}
}

// Start begins taking jobs; the goroutines run until Stop. ctx only carries values.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("remote: worker already started")
	}
	w.started = true
	w.workCtx, w.cancelWork = context.WithCancelCause(context.WithoutCancel(ctx))
	w.intakeCtx, w.stopIntake = context.WithCancel(context.WithoutCancel(ctx))
	w.keepCtx, w.stopKeep = context.WithCancel(context.WithoutCancel(ctx))
	w.loops.Go(w.keepLeases)
	w.loops.Go(w.learnLimits)
	if w.gov != nil {
		w.loops.Go(func() { w.gov.Run(w.intakeCtx) })
		w.loops.Go(w.reportHolds)
	}
	if w.cfg.Mode == Poll {
		w.loops.Go(func() {
			if w.awaitLimits() {
				w.pollLoop()
			}
		})
	} else {
		w.loops.Go(func() {
			if w.awaitLimits() {
				w.streamLoop()
			}
		})
	}
	return nil
}

// stopGrace is how long Stop waits for handlers after canceling them at its deadline. It is
// wall time, as are settle's waits, whatever the worker's clock: they wait for goroutines
// and the network, not for anything the clock paces, and a Stop bounded by its caller's
// context must end even when a test never advances a fake clock.
const stopGrace = 500 * time.Millisecond

// Stop shuts down gracefully: it starts no new job, lets running jobs finish until ctx ends,
// then cancels their contexts (cause attempt.ErrShutdown) and waits a moment (500 ms) for them.
// Jobs it will not run are released back to the queue at once. A handler that ignores its
// context is left running (Stop returns without it) and its job is not released: its lease,
// no longer renewed, expires and the leader rescues it, counted as a lost worker (a rescue,
// bounded by the job's MaxRescues), as for a worker that was killed. If it returns later
// with success, that is still reported (and refused if the job is no longer its own).
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	if !w.started || w.stopping {
		w.mu.Unlock()
		return nil
	}
	w.stopping = true
	w.mu.Unlock()
	w.declineWaiting()
	if w.cfg.Mode == Poll {
		w.stopIntake() // no more polls; a stream stays open until its jobs are done
	}

	drained := make(chan struct{})
	go func() { w.jobs.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-ctx.Done():
		w.cancelWork(attempt.ErrShutdown)
		t := time.NewTimer(stopGrace)
		select {
		case <-drained:
		case <-t.C:
			w.log.Warn("handlers did not return after shutdown; leaving them")
		}
		t.Stop()
	}
	if w.cfg.Mode == Stream {
		w.settle()
	}
	w.stopIntake()
	w.stopKeep()
	w.loops.Wait()
	w.releaseDeclined()
	w.out.close()
	w.own.close()
	w.cancelWork(attempt.ErrShutdown)
	return nil
}

// streamLoop keeps a job stream open, reopening it with backoff when it ends. A stream that
// worked (it delivered a job, or stayed open for streamWorked) resets the backoff, so a
// worker that lives through a server restart reconnects at once however many it saw before.
func (w *Worker) streamLoop() {
	for w.intakeCtx.Err() == nil {
		if !w.untilOpen() { // no stream is opened while the governor holds
			return
		}
		err := w.stream()
		if w.intakeCtx.Err() != nil {
			return
		}
		if refused(err) {
			w.giveUp(err)
			return
		}
		if err == nil {
			err = errors.New("the server ended the stream")
		}
		if !clock.Sleep(w.intakeCtx, w.clock, w.intake.Fail(unavailable(err))) {
			return
		}
	}
}

// refused reports whether err is the server refusing the worker's credentials (no key, a bad
// or revoked key, a key without the work scope): asking again cannot help.
func refused(err error) bool {
	code := connect.CodeOf(err)
	return err != nil && (code == connect.CodeUnauthenticated || code == connect.CodePermissionDenied)
}

// giveUp stops the worker taking jobs and renewing leases, for good, after the server refused
// its API key on any call (a poll, the stream, a report, a renewal, ServerService.Info) or
// serves no input limits (a *NoLimitsError, before any job is taken), and says so once (Err
// reports it). Its running jobs go on; their outcomes are refused too, and their leases then
// expire.
func (w *Worker) giveUp(err error) {
	w.mu.Lock()
	first := w.refusal == nil
	if first {
		w.refusal = err
	}
	w.mu.Unlock()
	if first {
		if errNoLimits(err) {
			w.log.Error("the worker takes no jobs: "+err.Error(), "worker", w.cfg.Name, "url", w.cfg.URL)
		} else {
			w.log.Error("the server refused the worker's API key: it takes no more jobs until it is started again with a valid key",
				"worker", w.cfg.Name, "url", w.cfg.URL, "err", err)
		}
		w.stopIntake()
		w.stopKeep()
	}
}

// Err returns why the worker stopped taking jobs by itself: the server refused its API key
// (connect.CodeUnauthenticated or CodePermissionDenied: no key where one is required, a bad or
// revoked key, a key without the work scope), or it serves no input limits (a *NoLimitsError:
// the worker takes its limits only from its server, and takes no job before it has them).
// Asking again cannot help, so the worker does not: start a new one with a valid key, against
// an upgraded server. Nil when it did not stop by itself.
func (w *Worker) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.refusal
}

// streamWorked is how long a stream must stay open, without a message, to count as working.
// It is long: a stream that a server or a proxy accepts and then drops soon after (a node
// that cannot reach its database, a proxy's idle timeout) is not working, and counted as
// working it would log a recovery and a failure every cycle and reset the backoff to its
// shortest delay each time.
const streamWorked = 10 * time.Second

func (w *Worker) stream() error {
	queue, queues := w.asked()
	ctx, cancel := context.WithCancelCause(w.intakeCtx)
	defer cancel(nil)
	credit := w.cfg.Concurrency + w.cfg.Prefetch
	var caps map[string]int32
	for kind, n := range w.cfg.KindConcurrency {
		if caps == nil {
			caps = map[string]int32{}
		}
		caps[kind] = int32(min(n, credit)) // a bound above the credit bounds nothing
	}
	st, err := w.api.StreamJobs(ctx, &hopperv1.StreamJobsRequest{Worker: w.cfg.Name, Queue: queue, Queues: queues,
		Kinds: w.kinds, Credit: int32(credit), LeaseTimeout: durationOf(w.cfg.LeaseDuration), KindConcurrency: caps,
		BatchKinds: w.batching, FetchParentResults: w.cfg.FetchParentResults})
	if err != nil {
		return err
	}
	defer st.Close()
	worked := w.clock.AfterFunc(streamWorked, w.intake.Succeed)
	defer worked.Stop()
	silence := newSilence(w.clock, cancel)
	defer silence.stop()
	// When the stream ends, the jobs it pushed run on: their leases are this worker's to
	// renew, and their outcomes are reported over a new connection once the server (this one
	// or another) answers again. Only a lost lease (a renewal the server refuses) stops a
	// handler.
	for {
		msg, err := st.Receive()
		if err != nil {
			if cause := context.Cause(ctx); errors.Is(cause, errStreamSilent) {
				return cause
			}
			return err
		}
		silence.heard(msg.GetKeepalive().AsDuration())
		if len(msg.GetJobs()) > 0 && worked.Stop() { // a keepalive alone does not show it works
			w.intake.Succeed()
		}
		for _, jobs := range grouped(msg.GetJobs()) {
			w.admit(jobs)
		}
	}
}

// asked returns the queue and queues fields of the worker's requests: its one queue alone,
// as a server that knows of only one queue expects, or the first and all of them (such a
// server then works the first).
func (w *Worker) asked() (string, []string) {
	if len(w.queues) == 1 {
		return w.queues[0], nil
	}
	return w.queues[0], w.queues
}

// release hands a job this worker will not run back to its queue.
func (w *Worker) release(j *hopperv1.ActivatedJob, why string) {
	w.releaseWithin(j, why, reportTimeout)
}

// releaseWithin releases j with one try of at most d.
func (w *Worker) releaseWithin(j *hopperv1.ActivatedJob, why string, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err := w.releaseCall(ctx, j, why)
	if err != nil && connect.CodeOf(err) != connect.CodeFailedPrecondition {
		w.log.Warn("release job", "job_id", j.GetId(), "err", err)
	}
}

func (w *Worker) isStopping() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopping
}

// newAttempt makes job's attempt, not started; its context is the handler's.
func (w *Worker) newAttempt(job *hopperv1.ActivatedJob) *run {
	ctx, cancel := context.WithCancelCause(w.workCtx)
	return &run{job: job, ctx: ctx, cancel: cancel, lease: w.cfg.LeaseDuration, done: make(chan struct{})}
}

// launchThen runs jobs, a job or a batch's jobs, in a goroutine of its own and calls done
// once its handler has returned (its outcome may still be on its way: the slot is free for
// the next job meanwhile); nil when stopping.
func (w *Worker) launchThen(jobs []*hopperv1.ActivatedJob, done func()) *run {
	a := w.newAttempt(jobs[0])
	if len(jobs) > 1 || jobs[0].GetBatchId() != "" {
		a = w.newBatch(jobs)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopping {
		for _, r := range a.runs() {
			r.cancel(nil)
		}
		return nil
	}
	w.startAnyLocked(a, done)
	return a
}

// startAnyLocked starts a, a job's attempt or a batch's (w.mu held).
func (w *Worker) startAnyLocked(a *run, done func()) {
	if a.batch != nil {
		w.startBatchLocked(a, done)
	} else {
		w.startLocked(a, done)
	}
}

// startLocked runs a in its own goroutine (w.mu held), calling done once its handler has
// returned.
func (w *Worker) startLocked(a *run, done func()) {
	w.running[keyOf(a.job)] = a
	w.jobs.Go(func() {
		defer close(a.done)
		defer a.cancel(nil)
		w.execute(a.ctx, a.job, sync.OnceFunc(done))
		w.mu.Lock()
		delete(w.running, keyOf(a.job))
		w.mu.Unlock()
	})
}

// admit takes a job pushed on the stream, or a batch's jobs: it starts at once on a free slot
// (a batch takes one) if its kind has room (Config.KindConcurrency), else waits for both
// (Config.Prefetch: the server pushes no more than the stream's credit); while the worker
// stops it is declined, to be released once the stream is closed.
func (w *Worker) admit(jobs []*hopperv1.ActivatedJob) {
	a := w.newAttempt(jobs[0])
	if len(jobs) > 1 || jobs[0].GetBatchId() != "" {
		a = w.newBatch(jobs)
	}
	kind := jobs[0].GetKind()
	w.mu.Lock()
	switch {
	case w.stopping:
		w.mu.Unlock()
		for _, r := range a.runs() {
			r.cancel(nil)
			w.decline(r.job)
		}
		return
	case w.busy < w.cfg.Concurrency && w.kindCaps.Take(kind):
		w.busy++
		w.startAnyLocked(a, func() { w.slotFreed(kind) })
	default:
		w.waiting = append(w.waiting, a)
	}
	w.mu.Unlock()
}

// slotFreed hands the slot of a job of kind whose handler returned, and its kind's room, to
// the job that has waited longest whose kind has room. A job whose lease was lost while it
// waited (a renewal refused it: canceled, say) is not run; it is released, which the server
// refuses as the lease is gone, and that frees its credit. While the resource governor
// holds, the worker takes no new work: the waiting jobs go back to their queue, attempt
// unspent (the server pushes none meanwhile).
func (w *Worker) slotFreed(kind string) {
	w.kindCaps.Free(kind, 1)
	governed := w.gov.Hold() != nil
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := 0; i < len(w.waiting) && !w.stopping; {
		a := w.waiting[i]
		why := "lease lost while waiting for a slot"
		switch {
		case !a.alive():
		case governed:
			why = "waiting for a slot, not started: the resource governor holds"
		case !w.kindCaps.Take(a.job.GetKind()):
			i++ // its kind has no room: it waits for one of its kind to end
			continue
		default:
			w.waiting = slices.Delete(w.waiting, i, i+1)
			w.startAnyLocked(a, func() { w.slotFreed(a.job.GetKind()) })
			return
		}
		w.waiting = slices.Delete(w.waiting, i, i+1)
		for _, r := range a.runs() {
			r.cancel(nil)
			w.jobs.Go(func() { w.release(r.job, why) })
		}
	}
	w.busy--
}

// declineWaiting declines the jobs waiting for a slot (the worker is stopping): they are
// released once the stream is closed.
func (w *Worker) declineWaiting() {
	w.mu.Lock()
	waiting := w.waiting
	w.waiting = nil
	w.mu.Unlock()
	for _, a := range waiting {
		for _, r := range a.runs() {
			r.cancel(nil)
			w.decline(r.job)
		}
	}
}

// keepLeases renews the leases of the running jobs, in both modes, with a lease.Keeper: every
// third of the shortest lease held (a handler may have shortened its own with ExtendLease). A lease found lost cancels its handler. When
// the server cannot be reached the renewals are retried with backoff, never later than the
// regular cadence.
func (w *Worker) keepLeases() {
	w.keeper.Clock, w.keeper.Shortest, w.keeper.Retry = w.clock, w.shortestLease, w.leases
	w.keeper.Renew = func(context.Context) (bool, error) {
		n, err := w.extendAll()
		return n > 0, err
	}
	w.keeper.Run(w.keepCtx)
}

// shortestLease is the shortest lease of the running jobs, or the configured one.
func (w *Worker) shortestLease() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.cfg.LeaseDuration
	for _, a := range w.running {
		d = min(d, a.lease)
	}
	return d
}

// extendAll renews the lease of every running job and of every job waiting for a slot, in
// Report batches, and says how many it asked for. A lease found lost cancels its handler (or
// the waiting job's context, so it never starts); a request that fails (the server is
// unreachable) ends the round.
func (w *Worker) extendAll() (int, error) {
	w.mu.Lock()
	running := make([]*run, 0, len(w.running)+len(w.waiting))
	for _, a := range w.running {
		running = append(running, a)
	}
	for _, a := range w.waiting { // pushed, waiting for a slot: theirs too
		running = append(running, a.runs()...)
	}
	w.mu.Unlock()
	asked := 0
	for len(running) > 0 {
		batch := running[:min(len(running), maxBatch)]
		running = running[len(batch):]
		req := &hopperv1.ReportRequest{Renewals: make([]*hopperv1.ExtendLeaseRequest, len(batch))}
		for i, a := range batch {
			req.Renewals[i] = &hopperv1.ExtendLeaseRequest{Id: a.job.GetId(), LeaseToken: a.job.GetLeaseToken(),
				Duration: durationOf(a.lease)}
		}
		res, err := w.api.Report(w.keepCtx, req)
		if err == nil && len(res.GetRenewals()) != len(batch) {
			err = errors.New("extend leases: the server answered a different number of verdicts")
		}
		if refused(err) {
			w.giveUp(err) // ends the keeper too: no renewal can pass
			return asked, nil
		}
		if err != nil {
			return asked, unavailable(err)
		}
		asked += len(batch)
		for i, a := range batch {
			switch connect.CodeOf(verdictErr(res.GetRenewals()[i])) {
			case connect.CodeFailedPrecondition, connect.CodeNotFound:
				a.cancel(hoppertype.ErrLeaseLost)
			}
		}
	}
	return asked, nil
}

// checkKindConcurrency checks Config.KindConcurrency against the worker's kinds.
func checkKindConcurrency(cfg Config, kinds []string) error {
	if cfg.Mode == Stream && len(cfg.KindConcurrency) > workerapi.MaxStreamKindCaps {
		return fmt.Errorf("remote: Config.KindConcurrency caps %d kinds; a stream caps at most %d",
			len(cfg.KindConcurrency), workerapi.MaxStreamKindCaps)
	}
	for kind, n := range cfg.KindConcurrency {
		switch {
		case n < 1:
			return fmt.Errorf("remote: Config.KindConcurrency[%s] %d is under 1", kind, n)
		case !slices.Contains(kinds, kind):
			return fmt.Errorf("remote: Config.KindConcurrency[%s] names a kind with no worker in Config.Workers", kind)
		}
	}
	return nil
}
