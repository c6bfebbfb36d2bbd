package hopper

import (
	"context"
	"errors"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// eventLog is an Observer that keeps every event.
type eventLog struct {
	mu     sync.Mutex
	events []JobEvent
}

func (l *eventLog) ObserveJob(_ context.Context, ev JobEvent) {
	l.mu.Lock()
	l.events = append(l.events, ev)
	l.mu.Unlock()
}

// of returns the events of job id, in order.
func (l *eventLog) of(id string) []JobEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []JobEvent
	for _, ev := range l.events {
		if ev.JobID == id {
			out = append(out, ev)
		}
	}
	return out
}

// waitEvents waits until job id has n events and returns them.
func (l *eventLog) waitEvents(t *testing.T, id string, n int) []JobEvent {
	t.Helper()
	require.Eventually(t, func() bool { return len(l.of(id)) >= n }, 10*time.Second, time.Millisecond,
		"job %s: want %d events", id, n)
	evs := l.of(id)
	require.Len(t, evs, n, "job %s: no more events than that", id)
	return evs
}

type observed struct {
	Mode string `json:"mode"`
}

func (observed) Kind() string { return "observed" }

// Every in-process attempt is observed from its enqueue to its outcome, with its kind and
// queue, how long it waited since it was due, how long it ran, and whether it will be retried.
func TestObserverHearsInProcessJobs(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	var b *testBundle
	release := make(chan struct{})
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[observed]) error {
		switch job.Args.Mode {
		case "block":
			<-release
			return nil
		case "slow":
			b.clock.Advance(3 * time.Second) // the attempt "runs" 3 s on the fake clock
			return nil
		case "retry":
			return errors.New("try again")
		default:
			return NoRetry(errors.New("give up"))
		}
	})
	log := &eventLog{}
	b = setup(t, ws, func(c *Config) {
		c.Observers = []Observer{log}
		c.Queues = map[string]QueueConfig{"default": {MaxWorkers: 1}} // one job at a time
	})
	ctx := t.Context()

	// The one slot is busy while the next job is due: it waits 10 s (on the fake clock).
	blocker, err := b.client.Enqueue(ctx, observed{Mode: "block"}, nil)
	require.NoError(t, err)
	log.waitEvents(t, blocker.Job.ID, 2)
	slow, err := b.client.Enqueue(ctx, observed{Mode: "slow"}, &InsertOpts{Queue: "default"})
	require.NoError(t, err)
	b.clock.Advance(10 * time.Second)
	close(release)
	evs := log.waitEvents(t, slow.Job.ID, 3)
	require.Equal(t, JobEvent{Type: JobEnqueued, JobID: slow.Job.ID, Kind: "observed", Queue: "default", State: StateQueued}, evs[0])
	require.Equal(t, JobEvent{Type: JobStarted, JobID: slow.Job.ID, Kind: "observed", Queue: "default", Attempt: 1,
		State: StateRunning, Wait: 10 * time.Second}, evs[1])
	require.Equal(t, JobEvent{Type: JobEnded, JobID: slow.Job.ID, Kind: "observed", Queue: "default", Attempt: 1,
		State: StateCompleted, Outcome: OutcomeOK, Run: 3 * time.Second}, evs[2])
	require.False(t, evs[2].Retried())

	retry, err := b.client.Enqueue(ctx, observed{Mode: "retry"}, &InsertOpts{MaxAttempts: 3})
	require.NoError(t, err)
	evs = log.waitEvents(t, retry.Job.ID, 3)
	require.Equal(t, StateScheduled, evs[2].State)
	require.Equal(t, OutcomeError, evs[2].Outcome)
	require.True(t, evs[2].Retried(), "an error with attempts left is a retry")

	fail, err := b.client.Enqueue(ctx, observed{Mode: "fail"}, nil)
	require.NoError(t, err)
	evs = log.waitEvents(t, fail.Job.ID, 3)
	require.Equal(t, StateFailed, evs[2].State)
	require.False(t, evs[2].Retried())

	// An idempotent repeat inserts nothing: nothing is observed.
	key := &InsertOpts{IdempotencyKey: "once", Queue: "elsewhere"}
	first, err := b.client.Enqueue(ctx, observed{}, key)
	require.NoError(t, err)
	_, err = b.client.Enqueue(ctx, observed{}, key)
	require.NoError(t, err)
	require.Len(t, log.of(first.Job.ID), 1, "one enqueue event for the key")
}

// A remote worker's attempt is observed through the WorkerAPI: its start at the claim and its
// outcome with the kind, queue and run time the claim remembered, although CompleteJob names
// the attempt by id and token only.
func TestObserverHearsRemoteAttempts(t *testing.T) {
	t.Parallel()
	log := &eventLog{}
	b := setup(t, nil, func(c *Config) { c.Observers = []Observer{log} })
	ctx := t.Context()
	res, err := b.client.Enqueue(ctx, observed{}, &InsertOpts{Queue: "remote-q"})
	require.NoError(t, err)
	jobs, err := b.client.workerAPI.Activate(ctx, workerapi.ActivateParams{Worker: "w1", Queue: "remote-q"})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	b.clock.Advance(2 * time.Second)
	require.NoError(t, b.client.workerAPI.CompleteJob(ctx, jobs[0].ID, jobs[0].Token, nil))

	evs := log.waitEvents(t, res.Job.ID, 3)
	require.Equal(t, JobEvent{Type: JobStarted, JobID: res.Job.ID, Kind: "observed", Queue: "remote-q", Attempt: 1,
		State: StateRunning, Remote: true}, evs[1])
	require.Equal(t, JobEvent{Type: JobEnded, JobID: res.Job.ID, Kind: "observed", Queue: "remote-q", Attempt: 1,
		State: StateCompleted, Outcome: OutcomeOK, Run: 2 * time.Second, Remote: true}, evs[2])

	// A stale token's outcome is refused: not observed, and the claim is forgotten all the same.
	res, err = b.client.Enqueue(ctx, observed{}, &InsertOpts{Queue: "remote-q"})
	require.NoError(t, err)
	jobs, err = b.client.workerAPI.Activate(ctx, workerapi.ActivateParams{Worker: "w1", Queue: "remote-q"})
	require.NoError(t, err)
	_, err = b.client.workerAPI.FailJob(ctx, jobs[0].ID, jobs[0].Token+1, workerapi.FailParams{Error: "x"})
	require.ErrorIs(t, err, ErrLeaseLost)
	_, err = b.client.workerAPI.FailJob(ctx, jobs[0].ID, jobs[0].Token, workerapi.FailParams{Error: "boom", NoRetry: true})
	require.NoError(t, err)
	evs = log.waitEvents(t, res.Job.ID, 3)
	require.Equal(t, StateFailed, evs[2].State)
	require.Equal(t, "remote-q", evs[2].Queue)
	require.True(t, evs[2].Remote)
	require.Zero(t, b.client.remote.n.Load(), "no claim is remembered once its outcome is written")
}

// The claims of remote attempts whose outcome never comes are forgotten once their lease has
// been over for a while, so the table stays bounded whatever workers do.
func TestRemoteAttemptsAreForgottenAfterTheirLease(t *testing.T) {
	t.Parallel()
	var r remoteAttempts
	now := testStart
	r.add([]*JobRow{{ID: "a", Token: 1}}, now, time.Minute)
	r.add([]*JobRow{{ID: "b", Token: 1}}, now, time.Hour)
	r.renewed([]workerapi.LeaseRef{{ID: "a", Token: 1}}, []error{nil}, now.Add(2*time.Minute))
	now = now.Add(2*time.Minute + remoteForget + time.Second)
	r.add([]*JobRow{{ID: "c", Token: 1}}, now, time.Minute) // sweeps: a's lease is long over
	require.False(t, r.take(workerapi.LeaseRef{ID: "a", Token: 1}), "a is forgotten")
	require.True(t, r.take(workerapi.LeaseRef{ID: "b", Token: 1}), "b's lease still runs")
	require.True(t, r.take(workerapi.LeaseRef{ID: "c", Token: 1}))
	require.Zero(t, r.n.Load())
}

// An observer that panics is logged and changes nothing: the job still runs and completes.
func TestObserverPanicIsContained(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[observed]) error { return nil })
	b := setup(t, ws, func(c *Config) {
		c.Observers = []Observer{ObserverFunc(func(context.Context, JobEvent) { panic("observer bug") })}
	})
	res, err := b.client.Enqueue(t.Context(), observed{}, nil)
	require.NoError(t, err)
	b.waitFor(t, res.Job.ID, StateCompleted)
}

type observedStep struct{ Advance time.Duration }

func (observedStep) Kind() string { return "observed-step" }

// A workflow is observed once when it is enqueued and once when it is canceled (a second
// cancel is refused and reports nothing); its steps' events carry its id, and a released
// step's wait runs from its release, not from its enqueue.
func TestObserverHearsWorkflows(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	var b *testBundle
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[observedStep]) error {
		b.clock.Advance(job.Args.Advance) // the attempt "runs" that long on the fake clock
		return nil
	})
	log := &eventLog{}
	b = setup(t, ws, func(c *Config) { c.Observers = []Observer{log} })
	ctx := t.Context()

	res, err := b.client.EnqueueWorkflow(ctx, Workflow{Name: "album", Steps: []WorkflowStep{
		{Name: "a", Args: observedStep{Advance: 5 * time.Second}}, {Name: "b", Args: observedStep{}, After: []string{"a"}}}})
	require.NoError(t, err)
	wfID := res.Workflow.ID
	evs := log.waitEvents(t, res.Job("b").ID, 3)
	require.Equal(t, JobEvent{Type: JobEnqueued, JobID: res.Job("b").ID, Kind: "observed-step", Queue: "default",
		State: StateWaiting, WorkflowID: wfID}, evs[0])
	require.Equal(t, JobStarted, evs[1].Type)
	require.Equal(t, wfID, evs[1].WorkflowID)
	require.Zero(t, evs[1].Wait, "from its release, 5 s after its enqueue, to its start")
	require.Equal(t, []JobEvent{{Type: WorkflowEnqueued, WorkflowID: wfID, Workflow: "album", WorkflowState: WorkflowRunning}},
		log.of(""), "one event for the workflow")

	later, err := b.client.EnqueueWorkflow(ctx, Workflow{Name: "later", Steps: []WorkflowStep{
		{Name: "x", Args: observedStep{}, Opts: &InsertOpts{Delay: time.Hour}}}})
	require.NoError(t, err)
	_, err = b.client.CancelWorkflow(ctx, later.Workflow.ID, "")
	require.NoError(t, err)
	_, err = b.client.CancelWorkflow(ctx, later.Workflow.ID, "")
	require.ErrorIs(t, err, ErrInvalidTransition)
	var cancels []JobEvent
	for _, ev := range log.of("") {
		if ev.Type == WorkflowCancel {
			cancels = append(cancels, ev)
		}
	}
	require.Equal(t, []JobEvent{{Type: WorkflowCancel, WorkflowID: later.Workflow.ID, Workflow: "later",
		WorkflowState: WorkflowCanceled}}, cancels)
}
