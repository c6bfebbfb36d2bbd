package hopper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/attempt"
	"github.com/hopperjobs/hopper/internal/field"
	"github.com/hopperjobs/hopper/internal/store"
)

// SpawnParams is one job of SpawnMany: its step name in the running job's workflow, its args
// and its options.
type SpawnParams struct {
	// Step names the job in the workflow (the characters of a queue's name, at most 128).
	// A spawn that names a step already in the workflow returns that job (InsertResult.Existing)
	// rather than adding one, so a retried attempt that spawns the same steps again adds
	// nothing. Empty: the step is named for the job (the spawner's step, '.', the job's id),
	// and a retried attempt spawns it again. Only for a job that is a step of a workflow.
	Step string
	Args JobArgs
	// Opts are the job's options as for Enqueue; not MergeKey. After may name jobs that exist:
	// the running job itself, its parents, the jobs an earlier spawn returned (spawn those
	// first, then the jobs that wait for them); never a job that waits for the running one (it
	// would wait for itself: a *ValidationError naming after[i]).
	Opts *InsertOpts
	// AfterSteps names, by their Step, jobs earlier in the same SpawnMany that this one runs
	// after, as a workflow's steps name each other (their ids are not known before the call):
	// parents after those of Opts.After. A name no earlier job of the call has is a
	// *ValidationError naming jobs[i].after_steps[k]; a job already in the workflow is named
	// by id, in Opts.After.
	AfterSteps []string
}

// Spawn adds a job while a handler runs (docs/workflows.md, "Fan-out at run time"): the job
// goes in the running job's workflow, as step (see SpawnParams.Step), and every job that
// waits for the running one waits for it too, so that a merge step after a split step runs
// only once the split and every chunk it spawned have ended. A spawned job that fails
// applies the waiting jobs' OnParentFailure, as any parent's failure does.
//
// It works in process and in a remote worker alike, fenced by the attempt's lease:
// ErrLeaseLost when the attempt no longer owns the job (nothing is spawned). Bad input is a
// *ValidationError naming the field; ErrNotInHandler, that ctx is not a handler's.
func Spawn(ctx context.Context, step string, args JobArgs, opts *InsertOpts) (*InsertResult, error) {
	res, err := spawn(ctx, []SpawnParams{{Step: step, Args: args, Opts: opts}})
	if err != nil {
		var ve *ValidationError
		if errors.As(err, &ve) {
			return nil, &ValidationError{Field: strings.TrimPrefix(ve.Field, "jobs[0]."), Reason: ve.Reason}
		}
		return nil, err
	}
	return res[0], nil
}

// SpawnMany adds jobs as Spawn does, all in one transaction: all of them or, on any error,
// none. At most MaxSpawn jobs; a *ValidationError names the job's field (jobs[2].step).
func SpawnMany(ctx context.Context, jobs []SpawnParams) ([]*InsertResult, error) {
	return spawn(ctx, jobs)
}

func spawn(ctx context.Context, jobs []SpawnParams) ([]*InsertResult, error) {
	ex, err := execution(ctx)
	if err != nil {
		return nil, err
	}
	if len(jobs) == 0 || len(jobs) > MaxSpawn {
		return nil, invalid("jobs", "%d jobs, want 1–%d", len(jobs), MaxSpawn)
	}
	in := make([]*attempt.SpawnJob, len(jobs))
	for i, j := range jobs {
		if j.Args == nil {
			return nil, invalid(fmt.Sprintf("jobs[%d].args", i), "is nil")
		}
		raw, err := marshalArgs(j.Args)
		if err != nil {
			return nil, inBatch(i, err)
		}
		in[i] = &attempt.SpawnJob{Step: j.Step, Kind: j.Args.Kind(), Args: raw, Opts: spawnOpts(InsertOptsFor(j.Args, j.Opts)),
			AfterSteps: j.AfterSteps}
	}
	got, err := ex.Spawn(ctx, in)
	if err != nil {
		return nil, err
	}
	out := make([]*InsertResult, len(got))
	for i, s := range got {
		out[i] = &InsertResult{Job: s.Job, Existing: s.Existing}
	}
	return out, nil
}

// spawnOpts are o as a spawn carries them; insertOpts reads them back.
func spawnOpts(o InsertOpts) attempt.SpawnOpts {
	return attempt.SpawnOpts{Queue: o.Queue, Priority: o.Priority, RunAt: o.RunAt, Delay: o.Delay,
		MaxAttempts: o.MaxAttempts, MaxRescues: o.MaxRescues, Timeout: o.Timeout, RetryPolicy: o.RetryPolicy,
		Headers: o.Headers, IdempotencyKey: o.IdempotencyKey, IdempotencyRetention: o.IdempotencyRetention,
		GroupKey: o.GroupKey, FairnessKey: o.FairnessKey, MergeKey: o.MergeKey, After: o.After,
		OnParentFailure: o.OnParentFailure, ResultTTL: o.ResultTTL}
}

func insertOpts(o attempt.SpawnOpts) *InsertOpts {
	return &InsertOpts{Queue: o.Queue, Priority: o.Priority, RunAt: o.RunAt, Delay: o.Delay,
		MaxAttempts: o.MaxAttempts, MaxRescues: o.MaxRescues, Timeout: o.Timeout, RetryPolicy: o.RetryPolicy,
		Headers: o.Headers, IdempotencyKey: o.IdempotencyKey, IdempotencyRetention: o.IdempotencyRetention,
		GroupKey: o.GroupKey, FairnessKey: o.FairnessKey, MergeKey: o.MergeKey, After: o.After,
		OnParentFailure: o.OnParentFailure, ResultTTL: o.ResultTTL}
}

// spawnJobs adds the jobs that the running job id (under lease token) spawns: the engine's
// Spawner for a handler in process, WorkerService.Spawn for a remote worker's.
func (c *Client) spawnJobs(ctx context.Context, id string, token int64, jobs []*attempt.SpawnJob) ([]*attempt.Spawned, error) {
	if len(jobs) == 0 || len(jobs) > MaxSpawn {
		return nil, invalid("jobs", "%d jobs, want 1–%d", len(jobs), MaxSpawn)
	}
	now := c.clock.Now()
	params := make([]*store.InsertParams, len(jobs))
	steps := map[string]string{} // step name → job id, of the jobs before
	for i, j := range jobs {
		p, err := c.spawnParams(ctx, id, j, steps, now)
		if err != nil {
			return nil, inBatch(i, err)
		}
		params[i] = p
		if j.Step != "" {
			steps[j.Step] = p.ID
		}
	}
	if first, second := store.RepeatedKey(params); first >= 0 {
		return nil, invalid(fmt.Sprintf("jobs[%d].idempotency_key", second),
			"%q is also the key of jobs[%d], with a different payload", params[second].IdempotencyKey, first)
	}
	res, err := c.store.JobSpawn(ctx, &store.SpawnParams{ID: id, Token: token, Jobs: params})
	if err != nil {
		return nil, spawnRefused(err)
	}
	out := make([]*attempt.Spawned, len(res))
	inserted := make([]*InsertResult, 0, len(res))
	for i, r := range res {
		out[i] = &attempt.Spawned{Job: r.Job, Existing: r.Existing}
		if !r.Existing {
			inserted = append(inserted, &InsertResult{Job: r.Job})
		}
	}
	c.wakeInserted(inserted)
	c.obs.enqueued(ctx, inserted)
	return out, nil
}

// spawnParams builds the insert of one spawned job, as Enqueue's, its AfterSteps found in
// steps (the jobs before it in the call, as a workflow's steps find their parents); its
// history says which job spawned it.
func (c *Client) spawnParams(ctx context.Context, spawner string, j *attempt.SpawnJob, steps map[string]string,
	now time.Time) (*store.InsertParams, error) {
	opts := insertOpts(j.Opts)
	if opts.MergeKey != "" {
		return nil, invalid("merge_key", "a spawned job is never merged")
	}
	if j.Step != "" {
		if err := field.Name("step", j.Step); err != nil {
			return nil, err
		}
	}
	after, err := stepIDs(steps, j.AfterSteps, "after_steps")
	if err != nil {
		return nil, err
	}
	opts.After = append(slices.Clip(opts.After), after...)
	p, err := c.insertParams(ctx, RawArgs{KindName: j.Kind, JSON: j.Args}, opts, now)
	if err != nil {
		return nil, err
	}
	p.Step, p.Actor, p.Reason = j.Step, hoppertype.ActorWorker, "spawned by job "+spawner
	return p, nil
}

// spawnRefused turns the store's refusal of a job of a spawn into a *ValidationError naming
// its field (jobs[i].after[k], jobs[i].step).
func spawnRefused(err error) error {
	var pe *store.ParentError
	if errors.As(err, &pe) {
		return invalid(fmt.Sprintf("jobs[%d].%s", pe.Item, pe.Field()), "%s", pe.Reason())
	}
	var se *store.SpawnError
	if errors.As(err, &se) {
		return invalid(fmt.Sprintf("jobs[%d].%s", se.Item, se.Field()), "%s", se.Reason())
	}
	return err
}
