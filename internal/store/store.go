// Package store defines the seam between Hopper's engine and its databases: the Store
// interface, its parameter structs and the errors every implementation returns. Behaviour is
// pinned down by the conformance suite in storetest, which every store runs. The interface is
// internal and unstable by design.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/jobstate"
)

// Errors every store returns for the cases callers must tell apart.
var (
	// ErrNotFound: no job (or other object) with that id.
	ErrNotFound = hoppertype.ErrNotFound
	// ErrLeaseLost: the fencing token presented is not the job's current lease (the job was
	// rescued, re-claimed, canceled or finished). Nothing was changed.
	ErrLeaseLost = hoppertype.ErrLeaseLost
	// ErrDuplicate: an idempotency key already names a job with a different payload.
	ErrDuplicate = errors.New("duplicate idempotency key with a different payload")
	// ErrInvalidTransition: the state machine does not allow the move.
	ErrInvalidTransition = jobstate.ErrInvalidTransition
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store closed")
	// ErrInvalid: a value the store cannot keep (a NUL byte or bytes that are not UTF-8 in
	// text PostgreSQL keeps, a number or time out of its range). Callers validate first; a
	// store returns it so that bad input it still receives is the caller's error, not its own.
	ErrInvalid = hoppertype.ErrInvalid
)

// ErrUnavailable: the database cannot be reached or cannot take writes right now (connection
// refused or lost, server shutting down or out of connections, disk full, file locked past
// the busy timeout or read-only). Trying again later may succeed. A call whose connection was
// lost while it committed may have taken effect: retry what is idempotent (fenced outcomes,
// enqueues with an idempotency key). Stores wrap it around the driver's error.
var ErrUnavailable = errors.New("store unavailable")

// Store is what the engine and the client need from a database. Implementations are safe for
// concurrent use. Times are taken from the store's clock unless a parameter says otherwise.
// Every store keeps dead letters, schedules, suspended jobs and API keys and sweeps expired
// jobs: the compiler checks it. Only pushing notifications (Notifier) is optional.
type Store interface {
	DeadLetterStore
	CompactStore
	IncidentStore
	ScheduleStore
	SuspendStore
	KeyStore
	Sweeper
	StatsStore
	WorkflowStore
	ParentStore
	SpawnStore

	// JobInsertMany inserts jobs in one transaction: all or none. A job whose idempotency key is
	// live returns the existing job (Existing=true) or ErrDuplicate when its payload differs.
	JobInsertMany(ctx context.Context, params []*InsertParams) ([]*InsertResult, error)
	// JobGet returns one job or ErrNotFound.
	JobGet(ctx context.Context, id string) (*hoppertype.JobRow, error)
	// JobList returns a page of jobs in id order, filtered.
	JobList(ctx context.Context, params *ListParams) (*ListResult, error)
	// JobEvents returns a job's transition history, oldest first, or ErrNotFound.
	JobEvents(ctx context.Context, id string) ([]*hoppertype.Event, error)
	// JobAttempts returns a job's finished attempts, oldest first, or ErrNotFound.
	JobAttempts(ctx context.Context, id string) ([]*hoppertype.AttemptRecord, error)
	// JobCancel cancels a non-terminal job (ErrInvalidTransition for a terminal one). A running
	// job's attempt is recorded with outcome canceled and its lease is void.
	JobCancel(ctx context.Context, params *CancelParams) (*hoppertype.JobRow, error)

	// JobClaim moves up to Limit queued jobs of one queue to running under new leases, highest
	// priority first, then oldest first, each with a new fencing token, within the fleet-wide
	// caps and rate limits that apply; the Hold says what they held back.
	JobClaim(ctx context.Context, params *ClaimParams) (jobs []*hoppertype.JobRow, hold Hold, err error)
	// JobClaimBatch claims one batch of jobs of one kind (BatchClaimParams): the first ready
	// candidate batch in claim order, within the same caps, rate limits, pause and disabled
	// kinds as JobClaim, each job under its own lease and token.
	JobClaimBatch(ctx context.Context, params *BatchClaimParams) (*BatchClaim, error)
	// JobFinishMany ends running attempts in one transaction. Each item's error is nil, or
	// ErrLeaseLost when its token is stale, or NoSuchJob when no job has its id, or
	// ErrInvalidTransition for a bad target state.
	JobFinishMany(ctx context.Context, params []*FinishParams) ([]error, error)
	// JobExtendLeases sets each lease to expire Duration from now (it may shorten it).
	JobExtendLeases(ctx context.Context, params []*ExtendParams) ([]error, error)
	// JobHeartbeat records a sign of life of a running attempt; ErrLeaseLost when stale,
	// NoSuchJob when no job has the id (the same holds for JobExtendLeases' items and
	// JobProgress).
	JobHeartbeat(ctx context.Context, params *HeartbeatParams) error
	// JobProgress stores progress (percent clamped to 0–100) and counts as a heartbeat.
	JobProgress(ctx context.Context, params *ProgressParams) error

	// JobRescueExpired returns running jobs whose lease expired to queued without consuming an
	// attempt, recording the attempt as lease_expired and counting a rescue; a job out of
	// rescues fails instead (see RescueBound). It returns the rescued jobs' queues.
	JobRescueExpired(ctx context.Context, params *RescueParams) (*RescueResult, error)
	// JobRescueLeases rescues the running attempts named by (ID, Token), as JobRescueExpired
	// does, for a caller that knows their worker is gone. Stale tokens are skipped.
	JobRescueLeases(ctx context.Context, params *RescueLeasesParams) (*RescueResult, error)
	// JobPromoteScheduled moves scheduled jobs whose run_at has come to queued.
	JobPromoteScheduled(ctx context.Context, params *PromoteParams) (*PromoteResult, error)

	// QueueSetPaused pauses or resumes a queue: a paused queue's jobs are not claimed (running
	// ones finish). Unknown queues are created.
	QueueSetPaused(ctx context.Context, queue string, paused bool) error
	// QueueSetWeight stores a queue's fair-share weight (at least 1), fleet-wide; 0 removes
	// it (each process then uses its own). Unknown queues are created.
	QueueSetWeight(ctx context.Context, queue string, weight int) error
	// QueueList returns the settings of every queue that has any (paused, weight).
	QueueList(ctx context.Context) ([]*QueueSettings, error)
	// QueueSetKeyWeight stores the weight of a fairness key in a queue (2 to MaxKeyWeight: the
	// key takes that many turns a round of the queue's fair claims); 0 or 1 removes it. A
	// negative weight is ErrInvalid.
	QueueSetKeyWeight(ctx context.Context, queue, key string, weight int) error
	// QueueKeyWeights returns the stored key weights, by queue, then key.
	QueueKeyWeights(ctx context.Context) ([]*KeyWeight, error)
	// JobCounts returns the number of jobs per queue, kind and state, by queue, kind, then
	// state; states without jobs are left out.
	JobCounts(ctx context.Context) ([]*JobCount, error)

	// KindSetDisabled disables or enables a kind everywhere: no claim takes a queued job of a
	// disabled kind (running ones finish; enqueues still succeed). Enabling a kind that is not
	// disabled changes nothing. Enabling one wakes the workers of every queue, on every
	// process where the store pushes notifications (a JobsAvailable with no queue).
	KindSetDisabled(ctx context.Context, kind string, disabled bool) error
	// KindSetCompaction stores a kind's compaction setting (KindSettings.CompactOver and
	// CompactMerge); over 0 removes it.
	KindSetCompaction(ctx context.Context, kind string, over int, merge hoppertype.MergePolicy) error
	// KindList returns the settings of every kind that has any (disabled, a cap), by name.
	KindList(ctx context.Context) ([]*KindSettings, error)

	// LimitSet sets (MaxRunning > 0) or removes (0) the fleet-wide cap on running jobs of a
	// queue or a kind, or with PerKey its cap on the running jobs of each fairness key
	// (keylimits.go). Claims never take a job that would exceed a cap. A kind's cap is kept
	// while the kind is disabled, and applies again once it is enabled.
	LimitSet(ctx context.Context, params *LimitParams) error
	// LimitList returns every cap (not the caps per key: QueueList and KindList show those),
	// queues first, by name.
	LimitList(ctx context.Context) ([]*LimitParams, error)
	// RateSet sets or removes the fleet-wide rate limit of a queue or a kind, or with PerKey
	// the rate limit of each of its fairness keys (keylimits.go). A new limit starts with a
	// full bucket; a changed one keeps the starts its bucket holds, up to the new limit; a
	// removed limit per key drops its buckets. QueueList and KindList show the limits.
	RateSet(ctx context.Context, params *RateParams) error

	// NodeHeartbeat registers a node or refreshes its heartbeat, with its governor's state
	// (Holding, Queues, HeldQueues).
	NodeHeartbeat(ctx context.Context, node *hoppertype.Node) error
	// NodeHeldQueues returns, by name, the queues that live nodes (heartbeat within nodeTTL
	// of the store's clock, or marked idle) work and that every live node working them holds
	// back (see HeldQueues): the queues whose queued jobs await compute.
	NodeHeldQueues(ctx context.Context, nodeTTL time.Duration) ([]string, error)
	// NodeList returns the registered nodes, oldest first.
	NodeList(ctx context.Context) ([]*hoppertype.Node, error)
	// NodeRemove deregisters a node (clean shutdown); unknown ids are fine.
	NodeRemove(ctx context.Context, id string) error
	// LeaderElect takes the leader lease for NodeID when it is free or expired, or renews it
	// when NodeID holds it, for TTL from the store's clock. It returns the holder after the
	// attempt: compare its NodeID to know whether the caller leads.
	LeaderElect(ctx context.Context, params *LeaderParams) (*hoppertype.Leadership, error)
	// LeaderResign gives up the lease if nodeID holds it.
	LeaderResign(ctx context.Context, nodeID string) error
	// LeaderDue reads, without writing, the leader lease and when the leader's duties next
	// have work (Due): a node takes the lease only while some of it is due.
	LeaderDue(ctx context.Context, params *DueParams) (*Due, error)
	// JobRescueDeadNodes returns to queued the running jobs of nodes whose heartbeat is older
	// than NodeTTL (without consuming an attempt; outcome lease_expired; counting a rescue, so
	// a job out of rescues fails instead) and removes those nodes. Jobs of live nodes are left
	// alone however long they run. A node marked idle is not dead whatever its heartbeat's
	// age (it heartbeats again when it runs a job); it is removed once idle for IdleNodeTTL.
	JobRescueDeadNodes(ctx context.Context, params *RescueDeadParams) (*RescueResult, error)
	// JobRescuePass runs the leader's periodic pass: JobRescueExpired, JobRescueDeadNodes and
	// JobFailOverdue, each when its parameters are set, in that order, in one round trip where
	// the store can (PostgreSQL: one transaction), so an idle leader costs the database one
	// transaction a pass.
	JobRescuePass(ctx context.Context, params *RescuePassParams) (*RescuePassResult, error)

	// Ping checks that the database answers, cheaply and within about 2 s (PostgreSQL: a round
	// trip; SQLite: a read, and the last write did not fail for want of disk or access). Its
	// error wraps ErrUnavailable when the database cannot be reached or cannot take writes.
	Ping(ctx context.Context) error

	// Now is the store's clock.
	Now() time.Time
	// Close releases the store's resources.
	Close() error
}

// ErrInvalidCursor: a list cursor that no store issued.
var ErrInvalidCursor = errors.New("invalid cursor")

// JobCount is how many jobs of a kind in a queue are in one state.
type JobCount struct {
	Queue string
	Kind  string
	State hoppertype.JobState
	Count int64
}

// QueueSettings are a queue's stored settings.
type QueueSettings struct {
	Name   string
	Paused bool
	Weight int  // 0 when none is stored
	Rate   Rate // the fleet-wide rate limit, zero for none
	// CapPerKey and RatePerKey are the limits per fairness key (0 and zero: none).
	CapPerKey  int
	RatePerKey Rate
}

// KeyWeight is a fairness key's weight in a queue.
type KeyWeight struct {
	Queue, Key string
	Weight     int
}

// KindSettings are a kind's stored settings.
type KindSettings struct {
	Name       string
	Disabled   bool
	MaxRunning int  // the fleet-wide cap, 0 for none
	Rate       Rate // the fleet-wide rate limit, zero for none
	// CompactOver asks the leader to compact the kind's groups in which more than this many
	// jobs wait (0: never), with the merge policy CompactMerge (empty: keep).
	CompactOver  int
	CompactMerge hoppertype.MergePolicy
	// CapPerKey and RatePerKey are the limits per fairness key (0 and zero: none).
	CapPerKey  int
	RatePerKey Rate
}
