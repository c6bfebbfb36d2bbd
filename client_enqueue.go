package hopper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/jobtrace"
	"github.com/hopperjobs/hopper/internal/store"
)

// InsertOpts are per-job options. A nil *InsertOpts means all defaults.
type InsertOpts struct {
	// Queue (default "default"): 1–128 characters of letters, digits, '_', '-', '.', ':'.
	Queue string
	// Priority: higher runs first within a queue, from -1000 to 1000 (default 0).
	Priority int
	// RunAt delays the job until then. It may be at most MaxRunAtPast in the past (it then runs
	// at once) and MaxRunAtFuture ahead. Set RunAt or Delay, not both.
	RunAt time.Time
	// Delay delays the job by this much from now (0 to MaxRunAtFuture).
	Delay time.Duration
	// MaxAttempts bounds attempts, 1–1000 (default Config.MaxAttempts).
	MaxAttempts int
	// MaxRescues bounds how often the job is rescued — returned to its queue, without spending
	// an attempt, because its worker was lost (its lease expired, its process died, its stream
	// closed) — 1–1000, or UnlimitedRescues (default Config.MaxRescues, 3). The loss after the
	// last rescue fails the job with OutcomeWorkerLost: it goes to the dead-letter queue.
	MaxRescues int
	// Timeout limits each attempt, up to 30 days (default: the worker's, then Config.JobTimeout).
	Timeout time.Duration
	// RetryPolicy overrides the backoff for this job; zero fields fall back to the worker's and
	// the client's policy.
	RetryPolicy *RetryPolicy
	// Headers are string metadata carried with the job (trace context, request data).
	Headers map[string]string
	// IdempotencyKey de-duplicates enqueues: within its retention, an enqueue with the same key
	// and payload returns the existing job; with another payload it fails with ErrDuplicate.
	IdempotencyKey string
	// IdempotencyRetention is how long the key de-duplicates (default 24 h, at most 90 days).
	IdempotencyRetention time.Duration
	// GroupKey: jobs sharing it run one at a time, oldest first.
	GroupKey string
	// FairnessKey names the tenant the job is run for (a customer id, say): when several keys
	// have jobs due in one queue, claims share the queue's slots between them, round robin,
	// instead of taking the oldest jobs first, so that one key's flood does not delay another
	// key's jobs. Jobs without a key are one more key. Priority still comes first. At most 128
	// bytes, no control characters. See docs/flow-control.md.
	FairnessKey string
	// MergeKey merges this enqueue into the job of the same kind with the same key that no
	// worker has been handed yet (queued or scheduled, never claimed), as Merge says, instead of
	// adding a job; InsertResult.Merged says so and Job is that job. Once that job has been
	// claimed, even if it comes back to its queue, the next enqueue makes a new job: no change
	// is lost. The waiting job keeps its own queue, priority, run_at, headers and other
	// options. At most 512 bytes. See docs/flow-control.md.
	MergeKey string
	// Merge is the merge policy: MergeKeep (the default with a MergeKey), MergeReplace or
	// MergeAppend. A policy without a MergeKey is a *ValidationError naming merge.
	Merge MergePolicy
	// After names jobs (by id, at most MaxParents) this one waits for: it is enqueued in state
	// StateWaiting, not claimable, and released to its queue (or scheduled, with a later RunAt)
	// in the transaction of the last of them to end. Each must exist, or be enqueued earlier
	// in the same EnqueueMany; an unknown one is a *ValidationError naming after[i], and
	// nothing is enqueued. A job whose parents have all ended already is released at once.
	// Not with MergeKey. See docs/workflows.md.
	After []string
	// OnParentFailure says what happens when a parent ends failed or canceled: ParentCancel
	// (the default), ParentRun or ParentSkip. Only with After.
	OnParentFailure ParentPolicy
	// ResultTTL is how long the job is kept once it completes or is canceled (0: the
	// worker's, then Config.ResultTTL; at most 5 years). It wins over the worker's. A failed
	// job is kept for Config.DeadLetterRetention instead.
	ResultTTL time.Duration
}

// InsertResult is an enqueued job. Existing is true when an idempotency key returned a job
// enqueued before; Merged is true when a merge key merged the enqueue into a waiting job: Job
// is that job as the merge left it.
type InsertResult struct {
	Job      *JobRow
	Existing bool
	Merged   bool
}

// EnqueueParams is one job of EnqueueMany.
type EnqueueParams struct {
	Args JobArgs
	Opts *InsertOpts
}

// RawArgs enqueues a job of any kind with a JSON payload, for callers without a Go type for
// it (the CLI, bridges). JSON must be valid JSON.
type RawArgs struct {
	KindName string
	JSON     json.RawMessage
}

// Kind returns KindName.
func (r RawArgs) Kind() string { return r.KindName }

// MarshalJSON returns JSON as it is.
func (r RawArgs) MarshalJSON() ([]byte, error) { return r.JSON, nil }

// Enqueue stores one job. Bad input returns a *ValidationError naming the field; nothing is
// stored then. A job that is due wakes this process's workers at once.
func (c *Client) Enqueue(ctx context.Context, args JobArgs, opts *InsertOpts) (*InsertResult, error) {
	res, err := c.EnqueueMany(ctx, []EnqueueParams{{Args: args, Opts: opts}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// EnqueueMany stores jobs in one transaction: all of them or, on any error, none. Jobs with one
// merge key merge in their order, as if enqueued one after the other.
func (c *Client) EnqueueMany(ctx context.Context, jobs []EnqueueParams) ([]*InsertResult, error) {
	res, err := c.insert(ctx, c.store, jobs)
	if err != nil {
		return nil, err
	}
	c.wakeInserted(res)
	return res, nil
}

// wakeInserted tells this process's workers of the new jobs of an insert that are due or
// scheduled (wake).
func (c *Client) wakeInserted(res []*InsertResult) {
	for _, r := range res {
		if !r.Existing && !r.Merged && (r.Job.State == StateQueued || r.Job.State == StateScheduled) {
			c.wake(r.Job)
		}
	}
}

// TxInserter inserts jobs inside a transaction the application owns. Get one from the
// PostgreSQL store for a pgx.Tx or a *sql.Tx (see package pgstore).
type TxInserter = store.TxInserter

// EnqueueTx stores one job inside the application's own transaction: the job exists if and
// only if that transaction commits (contract 17). Workers hear of it when it commits.
func (c *Client) EnqueueTx(ctx context.Context, tx TxInserter, args JobArgs, opts *InsertOpts) (*InsertResult, error) {
	res, err := c.EnqueueManyTx(ctx, tx, []EnqueueParams{{Args: args, Opts: opts}})
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// EnqueueManyTx stores jobs inside the application's own transaction; see EnqueueTx. A store
// error leaves the transaction for the application to roll back.
func (c *Client) EnqueueManyTx(ctx context.Context, tx TxInserter, jobs []EnqueueParams) ([]*InsertResult, error) {
	if tx == nil {
		return nil, invalid("tx", "is nil")
	}
	return c.insert(ctx, tx, jobs)
}

// insert validates jobs (nothing is stored when one is bad) and inserts them through ins.
func (c *Client) insert(ctx context.Context, ins TxInserter, jobs []EnqueueParams) ([]*InsertResult, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	params := make([]*store.InsertParams, len(jobs))
	now := c.clock.Now()
	for i, j := range jobs {
		p, err := c.insertParams(ctx, j.Args, j.Opts, now)
		if err != nil {
			if len(jobs) > 1 {
				return nil, inBatch(i, err)
			}
			return nil, err
		}
		params[i] = p
	}
	if first, second := store.RepeatedKey(params); first >= 0 {
		// One key is one job: the same payload twice returns that job for both entries;
		// another payload under the key is a mistake in the batch itself.
		return nil, invalid(fmt.Sprintf("jobs[%d].idempotency_key", second),
			"%q is also the key of jobs[%d], with a different payload", params[second].IdempotencyKey, first)
	}
	res, err := ins.JobInsertMany(ctx, params)
	if err != nil {
		return nil, parentRefused(mergeRefused(err, len(jobs)), len(jobs))
	}
	out := make([]*InsertResult, len(res))
	for i, r := range res {
		out[i] = &InsertResult{Job: r.Job, Existing: r.Existing, Merged: r.Merged}
	}
	c.obs.enqueued(ctx, out)
	return out, nil
}

// inBatch names entry i of a batch in its validation error: jobs[3].queue.
func inBatch(i int, err error) error {
	if errors.As(err, new(*ValidationError)) {
		return prefixField(fmt.Sprintf("jobs[%d].", i), err)
	}
	return fmt.Errorf("jobs[%d]: %w", i, err)
}

// insertParams builds the store's insert of one job, with the trace context of ctx's span
// in its headers (traceparent) unless they carry one.
func (c *Client) insertParams(ctx context.Context, args JobArgs, opts *InsertOpts, now time.Time) (*store.InsertParams, error) {
	if args == nil {
		return nil, invalid("args", "is nil")
	}
	o := InsertOptsFor(args, opts)
	if o.MergeKey != "" && o.Merge == "" {
		o.Merge = MergeKeep
	}
	raw, err := encodeArgs(args, o.Merge == MergeAppend, c.cfg.MaxArgsBytes)
	if err != nil {
		return nil, err
	}
	p := &store.InsertParams{
		ID: uuid.Must(uuid.NewV7()).String(), Kind: args.Kind(), Queue: o.Queue, Priority: o.Priority,
		Args: raw, Headers: o.Headers, MaxAttempts: o.MaxAttempts, MaxRescues: o.MaxRescues, Timeout: o.Timeout,
		RetryPolicy: o.RetryPolicy, IdempotencyKey: o.IdempotencyKey, IdempotencyTTL: o.IdempotencyRetention,
		GroupKey: o.GroupKey, FairnessKey: o.FairnessKey, MergeKey: o.MergeKey, Merge: o.Merge, MaxArgsBytes: c.cfg.MaxArgsBytes,
		ResultTTL: o.ResultTTL, After: o.After, OnParentFailure: o.OnParentFailure,
		Actor: hoppertype.ActorAPI, Reason: "enqueue",
	}
	if p.Queue == "" {
		p.Queue = DefaultQueue
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = c.cfg.MaxAttempts
	}
	if p.MaxRescues == 0 {
		p.MaxRescues = c.cfg.MaxRescues
	}
	if p.IdempotencyTTL == 0 {
		p.IdempotencyTTL = DefaultIdempotencyRetention
	}
	if err := checkInsert(p, o, now); err != nil {
		return nil, err
	}
	p.Headers = jobtrace.Inject(ctx, p.Headers)
	p.RunAt = o.RunAt
	if o.Delay > 0 {
		p.RunAt = now.Add(o.Delay)
	}
	return p, nil
}

// InsertOptsFor returns the options an enqueue of args with opts takes: opts laid over the
// args type's own defaults (JobArgsWithInsertOpts), field by field, a zero field of opts
// keeping the default. Enqueue applies it, and so does a client of a server (package
// hopperclient) before it sends the job. It is safe for concurrent use if args' InsertOpts is.
func InsertOptsFor(args JobArgs, opts *InsertOpts) InsertOpts {
	var o InsertOpts
	if d, ok := args.(JobArgsWithInsertOpts); ok {
		o = d.InsertOpts()
	}
	if opts == nil {
		return o
	}
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&o.Queue, opts.Queue)
	set(&o.IdempotencyKey, opts.IdempotencyKey)
	set(&o.GroupKey, opts.GroupKey)
	set(&o.FairnessKey, opts.FairnessKey)
	set(&o.MergeKey, opts.MergeKey)
	if len(opts.After) > 0 {
		o.After = opts.After
	}
	if opts.OnParentFailure != "" {
		o.OnParentFailure = opts.OnParentFailure
	}
	if opts.Merge != "" {
		o.Merge = opts.Merge
	}
	if opts.Priority != 0 {
		o.Priority = opts.Priority
	}
	if !opts.RunAt.IsZero() {
		o.RunAt = opts.RunAt
	}
	if opts.Delay != 0 {
		o.Delay = opts.Delay
	}
	if opts.MaxAttempts != 0 {
		o.MaxAttempts = opts.MaxAttempts
	}
	if opts.MaxRescues != 0 {
		o.MaxRescues = opts.MaxRescues
	}
	if opts.Timeout != 0 {
		o.Timeout = opts.Timeout
	}
	if opts.RetryPolicy != nil {
		o.RetryPolicy = opts.RetryPolicy
	}
	if opts.Headers != nil {
		o.Headers = opts.Headers
	}
	if opts.IdempotencyRetention != 0 {
		o.IdempotencyRetention = opts.IdempotencyRetention
	}
	if opts.ResultTTL != 0 {
		o.ResultTTL = opts.ResultTTL
	}
	return o
}

// encodeArgs returns args as stored, as the list of a MergeAppend job when list is set, if
// that is at most limit bytes.
func encodeArgs(args JobArgs, list bool, limit int) (json.RawMessage, error) {
	b, err := marshalArgs(args)
	if err != nil {
		return nil, err
	}
	if list {
		b = appendList(args, b)
	}
	if len(b) > limit {
		return nil, invalid("args", "%d bytes exceed the limit of %d", len(b), limit)
	}
	return b, nil
}

// marshalArgs encodes args as valid JSON and valid UTF-8, parsing them once. RawArgs are kept
// as they came, insignificant white space aside (so that white space makes no other
// idempotency payload): json.Marshal would also escape <, > and & in their strings, and a
// worker would see other bytes than were sent. json.Marshal's own output is valid JSON (it
// checks what a MarshalJSON returns), but a MarshalJSON may return bytes that are not UTF-8,
// which it keeps.
func marshalArgs(args JobArgs) ([]byte, error) {
	raw, ok := args.(RawArgs)
	if !ok {
		b, err := json.Marshal(args)
		if err != nil {
			return nil, invalid("args", "cannot encode as JSON: %v", err)
		}
		if !utf8.Valid(b) {
			return nil, invalid("args", "not valid UTF-8 at byte %d", badText(string(b)))
		}
		return b, nil
	}
	if !utf8.Valid(raw.JSON) {
		return nil, invalid("args", "not valid UTF-8 at byte %d", badText(string(raw.JSON)))
	}
	var b bytes.Buffer
	b.Grow(len(raw.JSON))
	if err := json.Compact(&b, raw.JSON); err != nil {
		return nil, invalid("args", "not valid JSON")
	}
	return b.Bytes(), nil
}

// parentRefused turns the store's refusal of an unknown parent into a *ValidationError naming
// the field (jobs[i].after[k] in a batch of n > 1).
func parentRefused(err error, n int) error {
	var pe *store.ParentError
	if !errors.As(err, &pe) {
		return err
	}
	verr := invalid(pe.Field(), "%s", pe.Reason())
	if n > 1 {
		return inBatch(pe.Item, verr)
	}
	return verr
}
