package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper"
	"golang.org/x/sync/errgroup"
)

// The workflow scenario (docs/workflows.md): workflows (Client.EnqueueWorkflow) of
// WorkflowWidth parallel no-op steps and one fan-in step that runs after all of them, every
// workflow enqueued before the workers start, worked on a fresh store; then as many plain
// no-op jobs on another fresh store, for the ratio; then the same workflows with every step in
// one queue; then one fan-in of FanInParents parents (plain jobs) into one child. The fan-in
// steps' release latency is the time from the end of a step's last parent's handler to the
// start of its own: the parent's outcome written, the child released in the same transaction,
// the workers woken and the child claimed. In the first run (and the paced one) the fan-in
// steps have a queue of their own (fanInQueue), so that the latency is the release's; in the
// one-queue run they are in the steps' queue, as EnqueueWorkflow puts them by default, where
// a released step waits behind the steps claimed before it.

// WorkflowWidth is the parallel steps of each of the workflow scenario's workflows.
const WorkflowWidth = 10

// DefaultWorkflowJobs is the workflow scenario's default Config.Jobs: 2,000 workflows of
// WorkflowWidth steps and a fan-in step.
const DefaultWorkflowJobs = 2000 * (WorkflowWidth + 1)

// FanInParents is the parents of the workflow scenario's large fan-in (a variable: the
// package's tests shorten it).
var FanInParents = 10_000

// WorkflowResult is what the workflow scenario measured. The JSON names are stable.
type WorkflowResult struct {
	Workflows          int     `json:"workflows"`
	Width              int     `json:"width"`
	Jobs               int     `json:"jobs"`
	Workers            int     `json:"workers"`
	WorkflowJobsPerSec float64 `json:"workflow_jobs_per_sec"`
	PlainJobsPerSec    float64 `json:"plain_jobs_per_sec"`
	Ratio              float64 `json:"ratio"` // workflow over plain
	ReleaseP50Ms       float64 `json:"release_p50_ms"`
	ReleaseP99Ms       float64 `json:"release_p99_ms"`
	// PacedWorkflows were enqueued one at a time at PacedRate jobs a second, the workers
	// running, for the release latency at a steady load (0 when the latency phase is skipped).
	PacedWorkflows    int     `json:"paced_workflows"`
	PacedRate         int     `json:"paced_rate"`
	PacedReleaseP50Ms float64 `json:"paced_release_p50_ms"`
	PacedReleaseP99Ms float64 `json:"paced_release_p99_ms"`
	// OneQueueJobsPerSec is the same workflows with every step in the default queue (the
	// fan-in steps too), and OneQueueRatio its ratio to the plain jobs: the workflows as
	// EnqueueWorkflow enqueues them by default, with one queue's claims, as the plain jobs
	// have. Its release latency includes the wait behind the steps claimed before.
	OneQueueJobsPerSec   float64 `json:"one_queue_jobs_per_sec"`
	OneQueueRatio        float64 `json:"one_queue_ratio"`
	OneQueueReleaseP50Ms float64 `json:"one_queue_release_p50_ms"`
	OneQueueReleaseP99Ms float64 `json:"one_queue_release_p99_ms"`
	// Rounds is Config.Rounds: the plain and one-queue runs were made that many times, in
	// turn. PlainJobsPerSec, OneQueueJobsPerSec and OneQueueRatio are then the medians of the
	// rounds' (OneQueueRatios, one per round, each one-queue run over the plain run just
	// before it), Ratio is over the median plain run, and the one-queue release latencies
	// are over every round's fan-in steps.
	Rounds          int       `json:"rounds"`
	OneQueueRatios  []float64 `json:"one_queue_ratios"`
	FanInParents    int       `json:"fan_in_parents"`
	FanInJobsPerSec float64   `json:"fan_in_jobs_per_sec"`
	FanInReleaseMs  float64   `json:"fan_in_release_ms"`
	Store           string    `json:"store"`
	Durability      string    `json:"durability"`
	CPUs            int       `json:"cpus"`
	GoVersion       string    `json:"go_version"`
}

// JSON renders r as one JSON object.
func (r *WorkflowResult) JSON() []byte {
	b, _ := json.Marshal(r) // plain numbers and strings always marshal
	return b
}

// fanInQueue is the fan-in steps' queue: released, they do not wait behind the backlog of
// steps the scenario enqueued up front (the client shares its workers between queues), so
// their release latency is the release's, not the backlog's.
const fanInQueue = "bench-fan-in"

// stepDoc is a parallel step of workflow W; fanInDoc the step after them.
type stepDoc struct {
	W int `json:"w"`
}

func (stepDoc) Kind() string { return "bench-step" }

type fanInDoc struct {
	W int `json:"w"`
}

func (fanInDoc) Kind() string { return "bench-fan-in" }

// Workflow runs the workflow scenario on fresh stores of cfg's kind. cfg.Jobs defaults to
// DefaultWorkflowJobs and must be a multiple of WorkflowWidth+1.
func Workflow(ctx context.Context, cfg Config) (*WorkflowResult, error) {
	if cfg.Jobs == 0 {
		cfg.Jobs = DefaultWorkflowJobs
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Jobs%(WorkflowWidth+1) != 0 {
		return nil, fmt.Errorf("bench: the workflow scenario's --jobs %d must be a multiple of %d", cfg.Jobs, WorkflowWidth+1)
	}
	cfg = cfg.withDefaults()
	res := &WorkflowResult{Workflows: cfg.Jobs / (WorkflowWidth + 1), Width: WorkflowWidth, Jobs: cfg.Jobs,
		Workers: cfg.Workers, FanInParents: FanInParents, CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Durability: durability(ctx, cfg)}
	var err error
	var release []time.Duration
	phase(ctx, "workflows", func(ctx context.Context) {
		res.WorkflowJobsPerSec, release, res.Store, err = workflowRun(ctx, cfg, res.Workflows, WorkflowWidth, fanInQueue)
	})
	if err != nil {
		return nil, fmt.Errorf("workflow run: %w", err)
	}
	res.ReleaseP50Ms, res.ReleaseP99Ms = percentileMs(release, 0.50), percentileMs(release, 0.99)
	if err := oneQueueRounds(ctx, cfg, res); err != nil {
		return nil, err
	}
	phase(ctx, "fan-in", func(ctx context.Context) {
		res.FanInJobsPerSec, release, _, err = workflowRun(ctx, cfg, 1, FanInParents, fanInQueue)
	})
	if err != nil {
		return nil, fmt.Errorf("fan-in run: %w", err)
	}
	res.FanInReleaseMs = percentileMs(release, 0.5)
	if cfg.LatencyJobs > 0 {
		res.PacedWorkflows, res.PacedRate = max(1, cfg.LatencyJobs/(WorkflowWidth+1)), cfg.Rate
		phase(ctx, "paced", func(ctx context.Context) {
			release, err = workflowPaced(ctx, cfg, res.PacedWorkflows, WorkflowWidth)
		})
		if err != nil {
			return nil, fmt.Errorf("paced run: %w", err)
		}
		res.PacedReleaseP50Ms, res.PacedReleaseP99Ms = percentileMs(release, 0.50), percentileMs(release, 0.99)
	}
	return res, nil
}

// oneQueueRounds makes cfg.Rounds rounds of a plain run and a one-queue workflow run, and
// sets res's plain and one-queue figures and Ratio from them (WorkflowResult.Rounds).
func oneQueueRounds(ctx context.Context, cfg Config, res *WorkflowResult) error {
	res.Rounds = cfg.Rounds
	var plain, oneQueue []float64
	var releases []time.Duration
	for r := range cfg.Rounds {
		var p, q float64
		var release []time.Duration
		var err error
		phase(ctx, "plain", func(ctx context.Context) { p, err = plainRun(ctx, cfg) })
		if err != nil {
			return fmt.Errorf("plain run %d: %w", r+1, err)
		}
		phase(ctx, "one-queue", func(ctx context.Context) {
			q, release, _, err = workflowRun(ctx, cfg, res.Workflows, WorkflowWidth, hopper.DefaultQueue)
		})
		if err != nil {
			return fmt.Errorf("one-queue workflow run %d: %w", r+1, err)
		}
		plain, oneQueue = append(plain, p), append(oneQueue, q)
		res.OneQueueRatios = append(res.OneQueueRatios, q/p)
		releases = append(releases, release...)
	}
	res.PlainJobsPerSec, res.OneQueueJobsPerSec, res.OneQueueRatio = median(plain), median(oneQueue), median(res.OneQueueRatios)
	res.Ratio = res.WorkflowJobsPerSec / res.PlainJobsPerSec
	res.OneQueueReleaseP50Ms, res.OneQueueReleaseP99Ms = percentileMs(releases, 0.50), percentileMs(releases, 0.99)
	return nil
}

// median is the middle value of xs (the mean of the two middle ones for an even count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// phase runs f with the profiler label phase=name, which the goroutines it starts inherit, so
// that a CPU profile of a run with several phases (--cpuprofile) splits by phase:
// go tool pprof -tagfocus phase=plain.
func phase(ctx context.Context, name string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels("phase", name), f)
}

// enqueueWorkflows enqueues the workflows (Client.EnqueueWorkflow), their fan-in steps in
// queue fanIn, from a few goroutines so that the store's writer commits several in one
// transaction.
func enqueueWorkflows(ctx context.Context, enq *hopper.Client, workflows, width int, fanIn string) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for w := range workflows {
		g.Go(func() error {
			steps := workflowSteps(w, width, fanIn)
			if _, err := enq.EnqueueWorkflow(ctx, hopper.Workflow{Name: "bench", Steps: steps}); err != nil {
				return fmt.Errorf("enqueue workflow %d: %w", w, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// workflowSteps are the steps of the scenario's workflow w: width parallel steps and a fan-in
// step after them, in queue fanIn.
func workflowSteps(w, width int, fanIn string) []hopper.WorkflowStep {
	steps := make([]hopper.WorkflowStep, width+1)
	after := make([]string, width)
	for i := range width {
		after[i] = fmt.Sprintf("step-%d", i)
		steps[i] = hopper.WorkflowStep{Name: after[i], Args: stepDoc{W: w}}
	}
	steps[width] = hopper.WorkflowStep{Name: "fan-in", Args: fanInDoc{W: w},
		Opts: &hopper.InsertOpts{Queue: fanIn}, After: after}
	return steps
}

// enqueueFanIn enqueues one fan-in of width parents (more than a workflow may hold: plain
// jobs and InsertOpts.After), the parents in batches, then the child.
func enqueueFanIn(ctx context.Context, enq *hopper.Client, batch, width int) error {
	var ids []string
	for i := 0; i < width; i += batch {
		parents := make([]hopper.EnqueueParams, min(batch, width-i))
		for k := range parents {
			parents[k] = hopper.EnqueueParams{Args: stepDoc{}}
		}
		res, err := enq.EnqueueMany(ctx, parents)
		if err != nil {
			return fmt.Errorf("enqueue steps: %w", err)
		}
		for _, r := range res {
			ids = append(ids, r.Job.ID)
		}
	}
	_, err := enq.Enqueue(ctx, fanInDoc{}, &hopper.InsertOpts{Queue: fanInQueue, After: ids})
	if err != nil {
		return fmt.Errorf("enqueue the fan-in step: %w", err)
	}
	return nil
}

// workflowRun enqueues workflows of width parallel steps and a fan-in step (in queue fanIn) on
// a fresh store, then works them, and returns the jobs per second from the workers' start to
// the last fan-in step's end, and each fan-in step's release latency.
func workflowRun(ctx context.Context, cfg Config, workflows, width int, fanIn string) (float64, []time.Duration, string, error) {
	st, storeName, cleanup, err := openStore(ctx, cfg)
	if err != nil {
		return 0, nil, "", err
	}
	defer cleanup()
	enq, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		return 0, nil, "", err
	}
	pprof.Do(ctx, pprof.Labels("step", "enqueue"), func(ctx context.Context) {
		if workflows == 1 {
			err = enqueueFanIn(ctx, enq, cfg.Batch, width)
		} else {
			err = enqueueWorkflows(ctx, enq, workflows, width, fanIn)
		}
	})
	if err != nil {
		return 0, nil, "", err
	}
	w := newWorkflowWorkers(workflows, width)
	elapsed, err := workAll(ctx, w.config(cfg, st, fanIn), w.all)
	if err != nil {
		return 0, nil, "", err
	}
	release, err := w.releases()
	if err != nil {
		return 0, nil, "", err
	}
	return float64(workflows*(width+1)) / elapsed.Seconds(), release, storeName, nil
}

// workflowPaced starts the workers on a fresh store, then enqueues workflows of width steps
// and a fan-in step one at a time, cfg.Rate jobs a second (a workflow every width+1 of them),
// and returns each fan-in step's release latency: the release measured at a steady,
// unsaturated load, where the throughput run's fan-in steps also wait for the workers' slots.
func workflowPaced(ctx context.Context, cfg Config, workflows, width int) ([]time.Duration, error) {
	st, _, cleanup, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	w := newWorkflowWorkers(workflows, width)
	client, err := hopper.NewClient(w.config(cfg, st, fanInQueue))
	if err != nil {
		return nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, err
	}
	defer client.Stop(context.Background())
	rate := max(1, cfg.Rate/(width+1))
	next := 0
	if err := paced(ctx, rate, workflows, func() error {
		steps := workflowSteps(next, width, fanInQueue)
		next++
		_, err := client.EnqueueWorkflow(ctx, hopper.Workflow{Name: "bench", Steps: steps})
		return err
	}); err != nil {
		return nil, err
	}
	select {
	case <-w.all:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return w.releases()
}

// workflowWorkers works the workflow scenario's steps and records, for each workflow, when
// its last parallel step ended and how long its fan-in step waited after that.
type workflowWorkers struct {
	ws         *hopper.Workers
	width      int
	lastEnd    []atomic.Int64 // unix nanos of each workflow's latest step end
	stepsEnded []atomic.Int64
	early      atomic.Int64 // fan-in steps that started before all their parents ended
	mu         sync.Mutex
	release    []time.Duration
	all        chan struct{} // closed once every workflow's fan-in step ran
}

func newWorkflowWorkers(workflows, width int) *workflowWorkers {
	w := &workflowWorkers{ws: hopper.NewWorkers(), width: width, lastEnd: make([]atomic.Int64, workflows),
		stepsEnded: make([]atomic.Int64, workflows), release: make([]time.Duration, 0, workflows), all: make(chan struct{})}
	hopper.AddWorkerFunc(w.ws, func(_ context.Context, j *hopper.Job[stepDoc]) error {
		end := time.Now().UnixNano()
		for at := &w.lastEnd[j.Args.W]; ; {
			if old := at.Load(); old >= end || at.CompareAndSwap(old, end) {
				break
			}
		}
		w.stepsEnded[j.Args.W].Add(1)
		return nil
	})
	hopper.AddWorkerFunc(w.ws, func(_ context.Context, j *hopper.Job[fanInDoc]) error {
		if w.stepsEnded[j.Args.W].Load() != int64(width) {
			w.early.Add(1)
		}
		d := time.Since(time.Unix(0, w.lastEnd[j.Args.W].Load()))
		w.mu.Lock()
		defer w.mu.Unlock()
		w.release = append(w.release, d)
		if len(w.release) == workflows {
			close(w.all)
		}
		return nil
	})
	return w
}

// config is the client configuration that works the scenario on st, the fan-in steps in
// queue fanIn.
func (w *workflowWorkers) config(cfg Config, st hopper.Store, fanIn string) hopper.Config {
	queues := map[string]hopper.QueueConfig{hopper.DefaultQueue: {MaxWorkers: cfg.Workers}, fanIn: {MaxWorkers: cfg.Workers}}
	return hopper.Config{Store: st, Workers: w.ws, MaxWorkers: cfg.Workers, ClaimAhead: cfg.ClaimAhead, Queues: queues}
}

// releases returns the fan-in steps' release latencies, or an error if one of them started
// before all its parents ended.
func (w *workflowWorkers) releases() ([]time.Duration, error) {
	if n := w.early.Load(); n > 0 {
		return nil, fmt.Errorf("%d fan-in steps started before all their parents ended", n)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.release, nil
}

// plainRun enqueues cfg.Jobs plain no-op jobs on a fresh store, then works them, and returns
// the jobs per second from the workers' start to the last job's end.
func plainRun(ctx context.Context, cfg Config) (float64, error) {
	st, _, cleanup, err := openStore(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer cleanup()
	enq, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		return 0, err
	}
	for done := 0; done < cfg.Jobs; {
		batch := make([]hopper.EnqueueParams, min(cfg.Batch, cfg.Jobs-done))
		for i := range batch {
			batch[i] = hopper.EnqueueParams{Args: stepDoc{}}
		}
		if _, err := enq.EnqueueMany(ctx, batch); err != nil {
			return 0, fmt.Errorf("enqueue: %w", err)
		}
		done += len(batch)
	}
	var ended atomic.Int64
	all := make(chan struct{})
	ws := hopper.NewWorkers()
	hopper.AddWorkerFunc(ws, func(context.Context, *hopper.Job[stepDoc]) error {
		if ended.Add(1) == int64(cfg.Jobs) {
			close(all)
		}
		return nil
	})
	elapsed, err := workAll(ctx, hopper.Config{Store: st, Workers: ws, MaxWorkers: cfg.Workers, ClaimAhead: cfg.ClaimAhead}, all)
	if err != nil {
		return 0, err
	}
	return float64(cfg.Jobs) / elapsed.Seconds(), nil
}

// workAll starts a client of cfg and returns the time from its start until all is closed (the
// last job ended); the client is stopped on return. Its goroutines carry the profiler label
// step=work (the enqueues before it do not).
func workAll(ctx context.Context, cfg hopper.Config, all <-chan struct{}) (d time.Duration, err error) {
	pprof.Do(ctx, pprof.Labels("step", "work"), func(ctx context.Context) { d, err = workAllLabeled(ctx, cfg, all) })
	return d, err
}

func workAllLabeled(ctx context.Context, cfg hopper.Config, all <-chan struct{}) (time.Duration, error) {
	client, err := hopper.NewClient(cfg)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	defer client.Stop(context.Background())
	select {
	case <-all:
		return time.Since(start), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
