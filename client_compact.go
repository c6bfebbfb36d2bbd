package hopper

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/internal/store"
)

// CompactOpts says which of a kind's groups CompactKind compacts, and how.
type CompactOpts struct {
	// GroupKey compacts only the group with this group key; empty compacts every group of
	// the kind.
	GroupKey string
	// Over compacts a group only when more than Over of its jobs wait. 0 (or 1) compacts
	// every group in which two or more wait; a group of one is never compacted.
	Over int
	// Merge is how the new job's args are made from the replaced jobs': MergeKeep (the
	// default) the oldest's, MergeReplace the newest's, MergeAppend the items of every job's
	// list, oldest first (every job of the group must have been enqueued with MergeAppend).
	Merge MergePolicy
}

// CompactResult says what CompactKind did.
type CompactResult struct {
	// Groups and Jobs count the groups compacted and the jobs they replaced.
	Groups, Jobs int
	// Compacted lists the groups compacted, by group key.
	Compacted []*CompactedGroup
	// Refused lists the groups left as they were because their args do not fit the merge
	// policy or Config.MaxArgsBytes, by group key.
	Refused []*RefusedGroup
}

// CompactedGroup is a group CompactKind compacted: NewJobID replaced Replaced (oldest first).
type CompactedGroup struct {
	GroupKey string
	NewJobID string
	Replaced []string
}

// RefusedGroup is a group CompactKind left as it was: JobID's args do not fit the policy
// (Reason says how).
type RefusedGroup struct {
	GroupKey string
	JobID    string
	Reason   string
}

// CompactKind replaces, in each group of kind in which more than opts.Over jobs wait, the
// waiting jobs by one new job (docs/flow-control.md, "Compaction"). A group is the jobs of
// one kind with one group key; jobs without a group key are in none. Only jobs queued and
// never claimed are replaced: a job claimed meanwhile, or back in its queue after an
// attempt, stays. The new job, queued now, copies the oldest replaced job's options, takes its
// args by opts.Merge, and has no merge key; each replaced job ends canceled with the reason
// "compacted into <new id>" (CompactedInto and CompactedFrom give the lineage), and its
// idempotency key, if any, names the new job. Each group is replaced in one transaction, the
// groups in batches of whole groups (at most 500 jobs a transaction, a larger group alone),
// so an error may leave the batches before it done. It returns a *ValidationError naming kind, group_key, over or merge for bad
// input. Recorded as done by the API; CompactKindBy records another actor.
func (c *Client) CompactKind(ctx context.Context, kind string, opts *CompactOpts) (*CompactResult, error) {
	return c.CompactKindBy(ctx, kind, opts, ActorAPI)
}

// CompactKindBy is CompactKind with the actor the jobs' history records (the CLI and the
// dashboard record an operator).
func (c *Client) CompactKindBy(ctx context.Context, kind string, opts *CompactOpts, actor Actor) (*CompactResult, error) {
	var o CompactOpts
	if opts != nil {
		o = *opts
	}
	if err := checkCompact(kind, &o); err != nil {
		return nil, err
	}
	if err := checkActor(actor); err != nil {
		return nil, err
	}
	if o.Merge == "" {
		o.Merge = MergeKeep
	}
	res, err := c.store.JobCompact(ctx, &store.CompactParams{
		Kind: kind, GroupKey: o.GroupKey, Over: o.Over, Policy: o.Merge,
		NewID: func() string { return uuid.Must(uuid.NewV7()).String() }, Actor: actor,
		Retention: c.engine.Retention(nil, nil, StateCanceled), MaxArgsBytes: c.cfg.MaxArgsBytes,
	})
	if err != nil {
		return nil, err
	}
	out := compactResult(res)
	if out.Groups > 0 {
		c.engine.Notify("") // the new jobs may be in any queue of the kind
	}
	return out, nil
}

// compactResult turns the store's answer into CompactKind's.
func compactResult(res *store.CompactResult) *CompactResult {
	out := &CompactResult{}
	out.Groups, out.Jobs = res.Compacted()
	for _, g := range res.Groups {
		var me *store.MergeError
		switch {
		case g.Refused == nil:
			out.Compacted = append(out.Compacted, &CompactedGroup{GroupKey: g.GroupKey, NewJobID: g.NewJobID, Replaced: g.Replaced})
		case errors.As(g.Refused, &me):
			out.Refused = append(out.Refused, &RefusedGroup{GroupKey: g.GroupKey, JobID: me.JobID, Reason: me.Detail})
		default:
			out.Refused = append(out.Refused, &RefusedGroup{GroupKey: g.GroupKey, Reason: g.Refused.Error()})
		}
	}
	return out
}

// checkCompact checks what CompactKind is asked to do.
func checkCompact(kind string, o *CompactOpts) error {
	if err := checkKind(kind); err != nil {
		return err
	}
	if err := checkLimited("group_key", o.GroupKey, maxKeyLen); err != nil {
		return err
	}
	if o.Over < 0 || o.Over > math.MaxInt32 {
		return invalid("over", "%d is not between 0 and %d", o.Over, math.MaxInt32)
	}
	if o.Merge != "" && !o.Merge.Valid() {
		return invalid("merge", "%q is not one of keep, replace, append", o.Merge)
	}
	return nil
}

// CompactedFrom returns the ids of the jobs that job id replaced when CompactKind made it,
// oldest first; none when it replaced none. They stay readable (canceled) for the result TTL.
func (c *Client) CompactedFrom(ctx context.Context, id string) ([]string, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	out, err := c.store.JobCompactedFrom(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("jobs compacted into %s: %w", id, err)
	}
	return out, nil
}

// CompactedInto returns the id of the job that replaced job id in a compaction, "" when none
// did.
func (c *Client) CompactedInto(ctx context.Context, id string) (string, error) {
	if err := checkID("id", id); err != nil {
		return "", err
	}
	into, err := c.store.JobCompactedInto(ctx, id)
	if err != nil {
		return "", fmt.Errorf("job compacted from %s: %w", id, err)
	}
	return into, nil
}
