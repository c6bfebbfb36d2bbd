package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/jobstate"
)

// Dependencies (InsertOpts.After, docs/workflows.md). A child names its parents when it is
// inserted; each store keeps one job_deps row per (parent, child), a count of unended parents
// on the child (parents_pending) and a flag on each parent that has children (has_children),
// set by the child's insert. A job's ending (completion, dead letter, cancel, a rescue or
// deadline that fails it, compaction) looks for children only when the flag is set, so a job
// without children pays nothing; a flagged one costs one index lookup per ending and one
// update of its children. The release happens in the transaction of the ending.

// ParentOutcome is how a parent ended, as its children see it; job_deps keeps it per row.
type ParentOutcome = hoppertype.ParentOutcome

// The parent outcomes (hoppertype.ParentCompleted…).
const (
	ParentCompleted = hoppertype.ParentCompleted
	ParentFailed    = hoppertype.ParentFailed
	ParentCanceled  = hoppertype.ParentCanceled
	ParentSkipped   = hoppertype.ParentSkipped
)

// OutcomeOf is the outcome of a parent in a terminal state; skipped tells a canceled job that
// its own ParentSkip policy canceled.
func OutcomeOf(state hoppertype.JobState, skipped bool) ParentOutcome {
	switch {
	case state == hoppertype.StateCanceled && skipped:
		return ParentSkipped
	case state == hoppertype.StateCanceled:
		return ParentCanceled
	case state == hoppertype.StateFailed:
		return ParentFailed
	}
	return ParentCompleted
}

// Ending is a job with children that just ended: what its children's release needs.
type Ending struct {
	ID      string
	Outcome ParentOutcome
	// ExpiresAt is the parent's own expiry: a child it cancels without a result TTL of its
	// own is kept as long (zero: no expiry).
	ExpiresAt time.Time
	Actor     hoppertype.Actor
}

// Reasons are the history reasons of what a parent's ending does to a child, by the child's
// next state (the skip policy's cancel apart).
func (e *Ending) Reasons() (released, canceled, skipped string) {
	released = fmt.Sprintf("%s (last: %s %s)", jobstate.ParentsEnded, e.ID, e.Outcome)
	canceled = fmt.Sprintf("parent %s %s", e.ID, e.Outcome)
	return released, canceled, "skipped: " + canceled
}

// Settled is a child that a parent's ending moved out of waiting.
type Settled struct {
	ID, Queue, Kind string
	State           hoppertype.JobState
	// Skipped: canceled by its ParentSkip policy (its children see it as succeeded).
	Skipped bool
	// HasChildren: jobs wait for it; a canceled one's ending is released in turn.
	HasChildren bool
	ExpiresAt   time.Time
}

// ChildReleaser is the store's step of a release: record e's outcome on its dependency rows
// and count it down on its waiting children, moving those it settles (all parents ended, or a
// failure their policy does not run through). One bounded set of statements per call.
type ChildReleaser interface {
	ReleaseChildren(ctx context.Context, e *Ending) ([]*Settled, error)
}

// ReleaseFunc adapts a function to ChildReleaser.
type ReleaseFunc func(ctx context.Context, e *Ending) ([]*Settled, error)

// ReleaseChildren calls f.
func (f ReleaseFunc) ReleaseChildren(ctx context.Context, e *Ending) ([]*Settled, error) {
	return f(ctx, e)
}

// Release releases the children of the ended jobs, and, for every child that ends canceled
// and has children of its own, theirs in turn (the cancel cascade): breadth first, in a loop
// rather than by recursion, so a chain of any length costs memory, not stack. It runs inside
// the transaction of the endings; it returns every child it moved.
func Release(ctx context.Context, r ChildReleaser, ended []*Ending) ([]*Settled, error) {
	ended = slices.Clone(ended) // the queue of the loop: the caller's slice stays as it was
	var out []*Settled
	for next := 0; next < len(ended); next++ {
		e := ended[next]
		moved, err := r.ReleaseChildren(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("release children of job %s: %w", e.ID, err)
		}
		for _, c := range moved {
			out = append(out, c)
			if c.State == hoppertype.StateCanceled && c.HasChildren {
				ended = append(ended, &Ending{ID: c.ID, Outcome: OutcomeOf(c.State, c.Skipped),
					ExpiresAt: c.ExpiresAt, Actor: e.Actor})
			}
		}
		ended[next] = nil // done: let a long cascade's endings go
	}
	return out, nil
}

// ParentError refuses an insert whose item Item names in after[Index] a job that does not
// exist (or comes later in the same call). errors.Is(err, ErrInvalid) holds; the client turns
// it into a *ValidationError naming the field.
type ParentError struct {
	Item, Index int
	ID          string
}

func (e *ParentError) Error() string {
	return fmt.Sprintf("item %d: invalid %s: %s", e.Item, e.Field(), e.Reason())
}

// Field is the field the error names: after[Index].
func (e *ParentError) Field() string { return fmt.Sprintf("after[%d]", e.Index) }

// Reason says what is wrong with the field.
func (e *ParentError) Reason() string {
	return fmt.Sprintf("no job %s (a parent must exist, or come earlier in the same call)", e.ID)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ParentError) Is(target error) bool { return target == ErrInvalid }

// UnknownParent is the error for item's after[index], a job that does not exist.
func UnknownParent(item, index int, id string) error {
	return &ParentError{Item: item, Index: index, ID: id}
}

// Parent is a parent as a child's insert found it (the insert flags it has_children).
type Parent struct {
	ID        string
	State     hoppertype.JobState
	Skipped   bool
	ExpiresAt time.Time
}

// ChildStart is what a child's insert decides from its parents: how many have not ended, and
// the first failed one's outcome (nil when none failed).
func ChildStart(parents []*Parent) (pending int, failed *Ending) {
	for _, p := range parents {
		if !p.State.Terminal() {
			pending++
			continue
		}
		if o := OutcomeOf(p.State, p.Skipped); o.Failed() && failed == nil {
			failed = &Ending{ID: p.ID, Outcome: o, ExpiresAt: p.ExpiresAt}
		}
	}
	return pending, failed
}

// UniqueParents is after without repeats, in order; a parent named twice counts once.
func UniqueParents(after []string) []string {
	seen := make(map[string]bool, len(after))
	out := make([]string, 0, len(after))
	for _, id := range after {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// CheckParentOrder refuses a batch in which an item names as parent itself or an item after
// it (UnknownParent): a parent in the same call must come first, so no cycle can be made.
func CheckParentOrder(params []*InsertParams) error {
	if !slices.ContainsFunc(params, func(p *InsertParams) bool { return len(p.After) > 0 }) {
		return nil // the common batch: nothing to check, nothing to allocate
	}
	at := make(map[string]int, len(params))
	for i, p := range params {
		at[p.ID] = i
	}
	for i, p := range params {
		for k, id := range p.After {
			if j, ok := at[id]; ok && j >= i {
				return UnknownParent(i, k, id)
			}
		}
	}
	return nil
}
