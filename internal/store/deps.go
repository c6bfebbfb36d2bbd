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
	// Actor is its last actor: a canceled one's ending is its children's.
	Actor hoppertype.Actor
}

// ChildReleaser is the store's step of a release: record a round of endings' outcomes on their
// dependency rows and count them down on their waiting children, moving those it settles (all
// parents ended, or a failure their policy does not run through). One bounded set of
// statements per round, whatever its size. A child with several parents in the round counts
// them all at once: a failed one among them (the smallest id) names its cancel, else the
// largest id its release.
type ChildReleaser interface {
	ReleaseChildren(ctx context.Context, round []*Ending) ([]*Settled, error)
}

// ReleaseFunc adapts a function to ChildReleaser.
type ReleaseFunc func(ctx context.Context, round []*Ending) ([]*Settled, error)

// ReleaseChildren calls f.
func (f ReleaseFunc) ReleaseChildren(ctx context.Context, round []*Ending) ([]*Settled, error) {
	return f(ctx, round)
}

// ChildCount is what a round of endings does to one waiting child: N of its dependencies
// counted down, the failed parent of smallest id among them (nil when none failed), which
// names its cancel, and the parent of largest id, which names its release (ChildReleaser).
type ChildCount struct {
	ChildID      string
	N            int
	Failed, Last *Ending
}

// CountChildren groups the dependencies a round counted down, as (child id, parent id) pairs
// of the round's endings, by child, in the order the children first appear.
func CountChildren(round []*Ending, deps [][2]string) []*ChildCount {
	byID := make(map[string]*Ending, len(round))
	for _, e := range round {
		byID[e.ID] = e
	}
	var out []*ChildCount
	byChild := make(map[string]*ChildCount)
	for _, d := range deps {
		e := byID[d[1]]
		if e == nil {
			continue // not a parent of the round's: the store's statement names only those
		}
		c := byChild[d[0]]
		if c == nil {
			c = &ChildCount{ChildID: d[0]}
			byChild[d[0]] = c
			out = append(out, c)
		}
		c.N++
		if c.Last == nil || e.ID > c.Last.ID {
			c.Last = e
		}
		if e.Outcome.Failed() && (c.Failed == nil || e.ID < c.Failed.ID) {
			c.Failed = e
		}
	}
	return out
}

// Release releases the children of the ended jobs, and, for every child that ends canceled
// and has children of its own, theirs in turn (the cancel cascade): in rounds, the endings
// first, then the children the previous round canceled that have children, in a loop rather
// than by recursion, so a chain of any length costs rounds, not stack. It runs inside the
// transaction of the endings; it returns every child it moved.
func Release(ctx context.Context, r ChildReleaser, ended []*Ending) ([]*Settled, error) {
	var out []*Settled
	for len(ended) > 0 {
		moved, err := r.ReleaseChildren(ctx, ended)
		if err != nil {
			return nil, fmt.Errorf("release the children of %d jobs (job %s first): %w", len(ended), ended[0].ID, err)
		}
		var next []*Ending
		for _, c := range moved {
			out = append(out, c)
			if c.State == hoppertype.StateCanceled && c.HasChildren {
				next = append(next, &Ending{ID: c.ID, Outcome: OutcomeOf(c.State, c.Skipped),
					ExpiresAt: c.ExpiresAt, Actor: c.Actor})
			}
		}
		ended = next
	}
	return out, nil
}

// FlaggedParents are the parents an insert call has flagged (has_children) and read, by the
// name its items used: a parent that many children of the call name (a workflow's root, a
// fan-out's source) is flagged and read once per call, not once per child. Its state cannot
// change during the call.
type FlaggedParents map[string]*Parent

// Missing returns the names not flagged yet, in order.
func (f FlaggedParents) Missing(names []string) []string {
	var out []string
	for _, n := range names {
		if f[n] == nil {
			out = append(out, n)
		}
	}
	return out
}

// Add records the parents found, by name.
func (f FlaggedParents) Add(found map[string]*Parent) {
	for n, p := range found {
		f[n] = p
	}
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

// Aliases maps the id an item of an insert was given to the job the store returned in its
// place, when the two differ: its idempotency key named a job already there (or an earlier item
// of the call), or its merge key merged it into a waiting job. A later item of the same call
// that names it in After waits for that job instead (docs/workflows.md).
type Aliases map[string]string

// Note records the result r of item p.
func (a Aliases) Note(p *InsertParams, r *InsertResult) {
	if r != nil && r.Job != nil && r.Job.ID != p.ID {
		a[p.ID] = r.Job.ID
	}
}

// Resolve returns after with each aliased id replaced by its job's, position for position (so
// that an error can still name after[i]); after itself when it names no alias.
func (a Aliases) Resolve(after []string) []string {
	if len(a) == 0 {
		return after
	}
	var out []string
	for i, id := range after {
		to, ok := a[id]
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(after)
		}
		out[i] = to
	}
	if out == nil {
		return after
	}
	return out
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

// Re-arming (docs/workflows.md#retrying-a-failed-parent). A child that a parent's failure
// canceled by its policy cancel records that parent (canceled_by), and so does each job a
// cascade canceled after it (its canceled parent). When the failed parent is retried in place,
// those children go back to waiting, in the retry's transaction, and the jobs they canceled
// after them: level by level, as Release goes down. A child is re-armed only when none of its
// other parents stands failed or canceled (ChildStart decides, from its parents as they stand);
// otherwise it stays canceled, now by that parent, whose own retry may re-arm it. A job a user
// canceled, or a skip policy canceled, records no parent and is never re-armed.

// Canceled is a job canceled by the failure of one of the jobs a re-arm starts from
// (CanceledBy), with its parents as they stand now.
type Canceled struct {
	ID, CanceledBy string
	Parents        []*Parent
}

// Rearmed is what a re-arm does to a Canceled job: back to waiting for Pending parents, with
// history reason Reason, or, when StaysFor is set, canceled still, by that failed parent.
type Rearmed struct {
	ID, Reason string
	Pending    int
	StaysFor   string
}

// ChildRearmer is the store's step of a re-arm: the jobs that the failures of ids canceled,
// with their parents as they stand (on PostgreSQL locked against their endings), and the
// write of what happens to them (each re-armed one's dependency rows on parents that have not
// ended counted as pending again), which returns the workflow ids of the jobs it moved back
// to waiting (a step's parent may be a job of another workflow, or of none).
type ChildRearmer interface {
	CanceledChildren(ctx context.Context, ids []string) ([]*Canceled, error)
	RearmChildren(ctx context.Context, rs []*Rearmed) ([]string, error)
}

// RearmReason is the history reason of a job re-armed because its parent was retried in place
// (retried) or re-armed itself.
func RearmReason(parentID string, retried bool) string {
	if retried {
		return "re-armed: parent " + parentID + " retried"
	}
	return "re-armed: parent " + parentID + " waits again"
}

// Rearm re-arms the children of the jobs retried (just retried in place) and, down the
// cascade, theirs; it runs in the retry's transaction and returns the ids of the workflows,
// once each, of the jobs that went back to waiting: the retry opens them again, as it opens
// the retried steps' own (a workflow marked ended has a step waiting again).
func Rearm(ctx context.Context, r ChildRearmer, retried []string) ([]string, error) {
	var workflows []string
	for level, first := retried, true; len(level) > 0; first = false {
		kids, err := r.CanceledChildren(ctx, level)
		if err != nil {
			return nil, fmt.Errorf("find the children to re-arm: %w", err)
		}
		out := make([]*Rearmed, 0, len(kids))
		var next []string
		for _, c := range kids {
			pending, failed := ChildStart(c.Parents)
			rs := &Rearmed{ID: c.ID, Reason: RearmReason(c.CanceledBy, first), Pending: pending}
			if failed != nil {
				rs.StaysFor = failed.ID
			} else {
				next = append(next, c.ID)
			}
			out = append(out, rs)
		}
		if len(out) > 0 {
			ws, err := r.RearmChildren(ctx, out)
			if err != nil {
				return nil, fmt.Errorf("re-arm children: %w", err)
			}
			for _, w := range ws {
				if w != "" && !slices.Contains(workflows, w) {
					workflows = append(workflows, w)
				}
			}
		}
		level = next
	}
	return workflows, nil
}
