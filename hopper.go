// Package hopper is a durable background-job system: enqueue jobs, work them with typed
// handlers, retry them with backoff, and see every attempt and transition. Jobs live in a
// store: the embedded SQLite file of package sqlitestore, or PostgreSQL (package pgstore) for
// many processes sharing one database.
//
// A program registers workers, opens a store and starts a Client:
//
//	workers := hopper.NewWorkers()
//	hopper.AddWorkerFunc(workers, func(ctx context.Context, job *hopper.Job[SendInvoice]) error {
//		return send(ctx, job.Args)
//	})
//	st, _ := sqlitestore.Open(ctx, sqlitestore.Config{Path: "hopper.db"})
//	client, _ := hopper.NewClient(hopper.Config{Store: st, Workers: workers})
//	client.Start(ctx)
//	client.Enqueue(ctx, SendInvoice{ID: 42}, nil)
package hopper

import (
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
)

// Store is where jobs live; open one with sqlitestore.Open or pgstore.Open. Its methods are
// internal.
type Store = store.Store

// Clock is Hopper's time source; tests inject a fake one.
type Clock = clock.Clock

// Plain types shared with every layer, re-exported for convenience.
type (
	JobRow        = hoppertype.JobRow
	JobState      = hoppertype.JobState
	Event         = hoppertype.Event
	AttemptRecord = hoppertype.AttemptRecord
	RetryPolicy   = hoppertype.RetryPolicy
	Outcome       = hoppertype.Outcome
	Actor         = hoppertype.Actor
	// InputLimits are the bounds a client puts on what it is given (Client.InputLimits).
	InputLimits = hoppertype.InputLimits
)

// Actors recorded in job history.
const (
	ActorAPI      = hoppertype.ActorAPI
	ActorWorker   = hoppertype.ActorWorker
	ActorLeader   = hoppertype.ActorLeader
	ActorOperator = hoppertype.ActorOperator
	ActorServer   = hoppertype.ActorServer
)

// Job states; see docs/jobs.md.
const (
	StateScheduled = hoppertype.StateScheduled
	StateQueued    = hoppertype.StateQueued
	StateRunning   = hoppertype.StateRunning
	StateSuspended = hoppertype.StateSuspended
	StateCompleted = hoppertype.StateCompleted
	StateFailed    = hoppertype.StateFailed
	StateCanceled  = hoppertype.StateCanceled
	// StateWaiting: the job waits for its parents (InsertOpts.After); see docs/workflows.md.
	StateWaiting = hoppertype.StateWaiting
)

// ParentPolicy says what a job does when a parent it waits for ends failed or canceled
// (InsertOpts.OnParentFailure); see docs/workflows.md.
type ParentPolicy = hoppertype.ParentPolicy

// The parent failure policies.
const (
	// ParentCancel (the default): the job ends canceled, and so do its children, by theirs.
	ParentCancel = hoppertype.ParentCancel
	// ParentRun: the job runs once every parent has ended, failed or not.
	ParentRun = hoppertype.ParentRun
	// ParentSkip: the job ends canceled but counts as succeeded for its own children.
	ParentSkip = hoppertype.ParentSkip
)

// ParseParentPolicy returns the policy named by text ("" is ParentCancel), or an error naming
// the accepted values.
func ParseParentPolicy(text string) (ParentPolicy, error) { return hoppertype.ParseParentPolicy(text) }

// MaxParents bounds InsertOpts.After.
const MaxParents = 10_000

// MaxSpawn bounds the jobs of one SpawnMany (and WorkerService.Spawn).
const MaxSpawn = 10_000

// Attempt outcomes.
const (
	OutcomeOK           = hoppertype.OutcomeOK
	OutcomeError        = hoppertype.OutcomeError
	OutcomeTimeout      = hoppertype.OutcomeTimeout
	OutcomePanic        = hoppertype.OutcomePanic
	OutcomeLeaseExpired = hoppertype.OutcomeLeaseExpired
	OutcomeCanceled     = hoppertype.OutcomeCanceled
	OutcomeSnoozed      = hoppertype.OutcomeSnoozed
	OutcomeSuspended    = hoppertype.OutcomeSuspended
	// OutcomeUndeliverable: a job a remote worker claimed could not be sent to it
	// (Client.FailUndeliverable); it failed at once, without retry.
	OutcomeUndeliverable = hoppertype.OutcomeUndeliverable
	OutcomeWorkerLost    = hoppertype.OutcomeWorkerLost
)
