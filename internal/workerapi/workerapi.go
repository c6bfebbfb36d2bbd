// Package workerapi is the server half of Hopper's remote-worker protocol: what `hopper serve`
// (internal/server) does on a worker's behalf through a hopper.Client: claim jobs for it, take
// its outcomes, renew its leases, wake it when jobs come. The hopper package implements API
// for its Client (remote.go, remote_queues.go at the module's root, where the engine and the
// store are at hand); the server, the bench and the store conformance suite's fuzz target
// reach it with Of. None of it is public API: library users work jobs with hopper.AddWorker,
// other processes with the remote package or an SDK.
//
// A claimed job belongs to its worker until its lease expires; every call about the attempt
// presents the lease token the claim returned and fails with hoppertype.ErrLeaseLost,
// changing nothing, when the token is no longer the job's current lease, or with ErrNotFound
// (which matches ErrLeaseLost too) when no job has the id. Ids and text must be valid UTF-8
// without NUL bytes, and JSON valid JSON in UTF-8: anything else is a
// *hoppertype.ValidationError naming the field of the wire protocol (lease_timeout,
// retry_backoff…).
package workerapi

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/field"
)

// Limits of Activate and of job streams.
const (
	MaxActivateJobs   = 1000
	MaxActivateWait   = 5 * time.Minute
	MaxActivateQueues = 64
	// MaxStreamCredit bounds a job stream's credit (StreamJobsRequest.credit): the unfinished
	// jobs one stream may hold, running and waiting for a slot.
	MaxStreamCredit = 1000
	// MaxStreamKindCaps bounds the kinds a job stream caps (StreamJobsRequest.kind_concurrency).
	MaxStreamKindCaps = 64
	// MaxBatchKinds bounds the kinds a request takes in batches (ActivateParams.BatchKinds).
	MaxBatchKinds = 64
)

// BatchKind asks for a kind's jobs in batches (docs/workers.md, "Batches"), as
// hopper.BatchOpts says for an in-process batch worker.
type BatchKind struct {
	Kind string
	// MaxJobs bounds one batch's jobs, 1–MaxActivateJobs.
	MaxJobs int
	// MaxWait is the linger (0: claim at once whatever is there).
	MaxWait time.Duration
	// Ungrouped batches the kind's jobs without a group key too.
	Ungrouped bool
}

// checkBatchKinds checks a request's batch kinds against its kinds: at most MaxBatchKinds,
// each one of kinds (which must be given: a claim of every kind cannot leave the batch kinds
// out of its plain claim), none twice, MaxJobs 1–MaxActivateJobs, MaxWait not negative. A bad
// value is a *hoppertype.ValidationError naming the field (batch_kinds[2].max_jobs).
func checkBatchKinds(bks []BatchKind, kinds []string) error {
	switch {
	case len(bks) == 0:
		return nil
	case len(bks) > MaxBatchKinds:
		return field.Invalid("batch_kinds", "%d kinds, more than %d", len(bks), MaxBatchKinds)
	case len(kinds) == 0:
		return field.Invalid("batch_kinds", "needs kinds: a claim of every kind cannot leave the batch kinds out")
	}
	seen := map[string]bool{}
	for i, bk := range bks {
		name := fmt.Sprintf("batch_kinds[%d]", i)
		switch {
		case !slices.Contains(kinds, bk.Kind):
			return field.Invalid(name+".kind", "%q is not among the request's kinds", field.Clean(bk.Kind))
		case seen[bk.Kind]:
			return field.Invalid(name+".kind", "%q is named twice", bk.Kind)
		case bk.MaxJobs < 1 || bk.MaxJobs > MaxActivateJobs:
			return field.Invalid(name+".max_jobs", "%d is outside 1–%d", bk.MaxJobs, MaxActivateJobs)
		case bk.MaxWait < 0:
			return field.Invalid(name+".max_wait", "%s is negative", bk.MaxWait)
		}
		seen[bk.Kind] = true
	}
	return nil
}

// CheckKindCaps checks a job stream's caps per kind (StreamJobsRequest.kind_concurrency)
// against its kinds and credit: at most MaxStreamKindCaps kinds, each one of kinds (which
// must be given: a stream of every kind cannot leave a saturated one out of its claims), each
// bound 1–credit. A bad value is a *hoppertype.ValidationError naming the field, the first
// in the order of the kinds.
func CheckKindCaps(caps map[string]int, kinds []string, credit int) error {
	if len(caps) == 0 {
		return nil
	}
	switch {
	case len(caps) > MaxStreamKindCaps:
		return field.Invalid("kind_concurrency", "%d kinds, more than %d", len(caps), MaxStreamKindCaps)
	case len(kinds) == 0:
		return field.Invalid("kind_concurrency", "needs kinds: a stream of every kind cannot leave a saturated one out")
	}
	for _, kind := range slices.Sorted(maps.Keys(caps)) {
		name := "kind_concurrency[" + kind + "]"
		switch n := caps[kind]; {
		case !slices.Contains(kinds, kind):
			return field.Invalid(name, "names a kind not among the stream's kinds")
		case n < 1 || n > credit:
			return field.Invalid(name, "%d is outside 1–%d (credit)", n, credit)
		}
	}
	return nil
}

// DefaultQueue is the queue of a worker that names none.
const DefaultQueue = "default"

// API is the server half of the protocol, for one client.
type API interface {
	// Activate is ActivateQueues's jobs alone.
	Activate(ctx context.Context, p ActivateParams) ([]*hoppertype.JobRow, error)
	// ActivateQueues claims up to p.MaxJobs jobs for a remote worker (see ActivateParams), and
	// says which queues it found without ready jobs.
	ActivateQueues(ctx context.Context, p ActivateParams) (*Activated, error)
	// CompleteJob ends an attempt successfully, storing result (a JSON value, or nil).
	CompleteJob(ctx context.Context, id string, token int64, result json.RawMessage) error
	// FailJob ends an attempt with an error: retried after its backoff while it has attempts
	// left, else failed for good, as the engine decides for an in-process attempt.
	FailJob(ctx context.Context, id string, token int64, p FailParams) (*FailResult, error)
	// ReleaseJob hands a job back to its queue at the worker's request, attempt unspent.
	ReleaseJob(ctx context.Context, id string, token int64, why string) error
	// ReturnJob hands a job back to its queue on the server's account (it stops serving the
	// worker through no fault of the worker's or the job's), attempt unspent, no rescue.
	ReturnJob(ctx context.Context, id string, token int64, why string) error
	// FailUndeliverable fails, for good, a claimed job that the wire cannot carry.
	FailUndeliverable(ctx context.Context, job *hoppertype.JobRow, why string) error
	// RescueJobs returns attempts whose worker went away under them to their queue, each
	// counting a rescue, and returns the ids of those that failed for running out of rescues.
	RescueJobs(ctx context.Context, refs []LeaseRef, why string) ([]string, error)
	// SnoozeJob ends an attempt with "not now": the job runs again after d.
	SnoozeJob(ctx context.Context, id string, token int64, d time.Duration) error
	// SuspendJob parks the job with checkpoint until a time or an external resume.
	SuspendJob(ctx context.Context, id string, token int64, checkpoint json.RawMessage, p SuspendParams) error
	// ExtendJobLease sets an attempt's lease to expire d from now and returns the new expiry.
	ExtendJobLease(ctx context.Context, id string, token int64, d time.Duration) (time.Time, error)
	// HeartbeatJob records a sign of life of an attempt (separate from its lease).
	HeartbeatJob(ctx context.Context, id string, token int64) error
	// ReportJobProgress stores an attempt's progress (percent clamped to 0–100).
	ReportJobProgress(ctx context.Context, id string, token int64, percent int, message string) error
	// JobParents reads the parents of an attempt's job, in the order it named them, with how
	// each ended and what it left (docs/workflows.md, "Results passed along"). When
	// maxResultBytes is positive and their results together are larger, every Result is left
	// out and omitted says so.
	JobParents(ctx context.Context, id string, token int64, maxResultBytes int) (parents []*hoppertype.ParentResult, omitted bool, err error)
	// SpawnJobs adds jobs for an attempt (docs/workflows.md, "Fan-out at run time"), validated
	// as an enqueue's (a *hopper.ValidationError naming jobs[i].field), all or none.
	SpawnJobs(ctx context.Context, id string, token int64, jobs []*attempt.SpawnJob) ([]*attempt.Spawned, error)
	// Batch starts a batch of n outcomes reported in one request, written together.
	Batch(n int) Batch
	// JobsAvailable returns a channel closed the next time jobs may have become claimable in
	// queue, and a function to call when no longer waiting.
	JobsAvailable(queue string) (<-chan struct{}, func())
	// ListenFunc calls fn with each of queues in which jobs may have become claimable, until
	// stop is called. fn must not block nor call back into the API.
	ListenFunc(queues []string, fn func(queue string)) (stop func())
	// QueueWeights returns the weights a worker's jobs of several queues are shared by.
	QueueWeights(ctx context.Context, queues []string) map[string]int
	// SetRemoteQueues tells the client which queues the remote workers it serves work, and
	// which of them their governors hold back, for its node heartbeats; f must not block.
	SetRemoteQueues(f func() (queues, held []string))
	// RemoteQueuesChanged asks for a node heartbeat now. It never blocks.
	RemoteQueuesChanged()
}

// Batch gathers the outcomes of one report: each item calls one of the outcome methods under
// the context Item gives it, and the outcomes go to the store at once when every item has made
// its call or ended. Items run concurrently.
type Batch interface {
	// Item returns the context of one item and the func that ends it, which the item must
	// call when its work is over, whether or not it reached the store.
	Item(ctx context.Context) (context.Context, func())
}

// of finds a client's API (Register).
var of func(client any) API

// Register tells the package how to find a client's API: the hopper package calls it as it
// starts, since this package cannot import it (it imports this one).
func Register(f func(client any) API) { of = f }

// Of returns the API of client, a *hopper.Client.
func Of(client any) API { return of(client) }

// LeaseRef names one attempt: a job and its lease token.
type LeaseRef struct {
	ID    string
	Token int64
}

// ActivateParams asks for jobs on behalf of a remote worker.
type ActivateParams struct {
	// Worker names the worker on its leases and attempts (1–128 characters). Required.
	Worker string
	// Queue to take jobs from (default "default" when Queues is empty too).
	Queue string
	// Queues to take jobs from as well as Queue: the two are merged, a queue named twice
	// counting once, into at most MaxActivateQueues queues, which share MaxJobs by weight.
	Queues []string
	// Held counts, per queue, the unfinished jobs the worker holds already: with several
	// queues, MaxJobs goes first to those furthest below their weighted share of MaxJobs plus
	// what they hold. nil: none; negative counts are 0.
	Held map[string]int
	// Kinds limits the jobs to these kinds; empty takes any kind.
	Kinds []string
	// MaxJobs is the most jobs to claim, 1–MaxActivateJobs (default 1).
	MaxJobs int
	// Ahead is how many of MaxJobs the caller asks for beyond what its worker can take now
	// (claiming ahead, docs/workers.md); 0 to MaxJobs-1, and only with a single queue. Where
	// a fleet-wide cap, a rate limit or a disabled kind applies, the claim takes none of them
	// and says so (Activated.Restricted).
	Ahead int
	// LeaseDuration is how long the worker holds each job before it may be given to another
	// (default the client's, at most 24 h).
	LeaseDuration time.Duration
	// Wait is how long to wait for a first job when none is available (long poll); 0 answers
	// at once. At most MaxActivateWait.
	Wait time.Duration
	// BatchKinds are kinds of Kinds whose jobs are claimed in batches, before the other
	// kinds' jobs, never ahead: MaxJobs (less Ahead) bounds all the jobs together.
	BatchKinds []BatchKind
}

// Check reports whether the API would accept p, without claiming anything.
func (p ActivateParams) Check() error { return p.Validate(time.Minute) }

// QueueNames returns the queues p asks for: Queue, then Queues, each once; "default" when
// both are empty.
func (p ActivateParams) QueueNames() []string {
	return field.QueueNames(p.Queue, p.Queues, DefaultQueue)
}

// Validate fills p's defaults (def: the lease) and checks it.
func (p *ActivateParams) Validate(def time.Duration) error {
	if p.Queue == "" && len(p.Queues) == 0 {
		p.Queue = DefaultQueue
	}
	if p.MaxJobs == 0 {
		p.MaxJobs = 1
	}
	if p.LeaseDuration == 0 {
		p.LeaseDuration = def
	}
	if err := field.Text("worker", p.Worker); err != nil {
		return err
	}
	switch {
	case p.Worker == "" || len(p.Worker) > 128:
		return field.Invalid("worker", "must be 1–128 characters")
	case p.MaxJobs < 1 || p.MaxJobs > MaxActivateJobs:
		return field.Invalid("max_jobs", "%d is outside 1–%d", p.MaxJobs, MaxActivateJobs)
	case p.Ahead < 0 || p.Ahead >= p.MaxJobs:
		return field.Invalid("ahead", "%d is outside 0–%d (max_jobs - 1)", p.Ahead, p.MaxJobs-1)
	case p.Ahead > 0 && len(p.QueueNames()) > 1:
		return field.Invalid("ahead", "needs a single queue, not %d", len(p.QueueNames()))
	case p.LeaseDuration < time.Second || p.LeaseDuration > 24*time.Hour:
		return field.Invalid("lease_timeout", "%s is outside 1s–24h", p.LeaseDuration)
	case p.Wait < 0 || p.Wait > MaxActivateWait:
		return field.Invalid("request_timeout", "%s is outside 0–%s", p.Wait, MaxActivateWait)
	}
	if err := field.Queues(p.Queue, p.Queues, MaxActivateQueues); err != nil {
		return err
	}
	for _, k := range p.Kinds {
		if err := field.Kind(k); err != nil {
			return err
		}
	}
	return checkBatchKinds(p.BatchKinds, p.Kinds)
}

// Activated is what ActivateQueues found.
type Activated struct {
	Jobs []*hoppertype.JobRow
	// Drained are the queues found without ready jobs (of the claim's kinds) at the last look,
	// or held back by a cap or rate limit.
	Drained []string
	// Retry, when positive, is how soon a rate limit that held a claim back allows another
	// start (at most a second): when to look at the drained queues again.
	Retry time.Duration
	// Restricted: a cap, a rate limit or a disabled kind applied to a claim, which then took
	// none of ActivateParams.Ahead.
	Restricted bool
	// FairAhead, when positive: a queue claimed has fairness keys, so its jobs were taken in
	// turns between the keys; the caller should claim ahead only for the jobs that end within
	// it (a later job of a key waits behind those claimed ahead).
	FairAhead time.Duration
	// BatchIDs names the batch of each job claimed in one (ActivateParams.BatchKinds), by job
	// id; the jobs of a batch are consecutive in Jobs. A job claimed alone is not here.
	BatchIDs map[string]string
}

// FailParams says how a remote worker's attempt failed.
type FailParams struct {
	// Error is recorded with the attempt (required, at most hopper.MaxErrorBytes).
	Error string
	// Outcome is OutcomeError (the default), OutcomePanic (the handler crashed) or
	// OutcomeTimeout (it ran past its execution limit).
	Outcome hoppertype.Outcome
	// Stack is a crashed handler's stack, recorded apart from Error.
	Stack string
	// NoRetry fails the job for good, whatever attempts it has left.
	NoRetry bool
	// RetriesLeft, when set, overrides the attempts left: 0 or less fails the job for good,
	// n > 0 allows n more attempts whatever the job's budget was.
	RetriesLeft *int
	// Backoff, when set, is the wait before the retry instead of the job's backoff policy.
	Backoff *time.Duration
	// KindPolicy is the backoff of the job's kind on the worker, if it has one: it is merged
	// under the job's own policy and over the client's, as for in-process workers.
	KindPolicy *hoppertype.RetryPolicy
	// Checkpoint, a JSON value when not empty, replaces the job's checkpoint: the next
	// attempt receives it (a failed job keeps it).
	Checkpoint json.RawMessage
	// ErrorCode, when set, is a business error's code: the job fails for good.
	ErrorCode string
}

// FailResult is where a failed attempt sent the job.
type FailResult struct {
	// State is StateScheduled (it will be retried at RunAt) or StateFailed.
	State hoppertype.JobState
	RunAt time.Time
}

// SuspendParams says until when a suspended job waits: Until, a time it runs again at
// (scheduled), or none, when it waits for an external resume, at most until Deadline.
type SuspendParams struct {
	Until    time.Time
	Deadline time.Time
}
