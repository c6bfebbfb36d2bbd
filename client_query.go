package hopper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// ListParams filters and pages List. Zero fields don't filter.
type ListParams struct {
	States        []JobState
	Queues        []string
	Kinds         []string
	CreatedAfter  time.Time // inclusive
	CreatedBefore time.Time // exclusive
	// ArgsContains keeps the jobs whose args, as JSON text, contain it (case sensitive; at
	// most 255 bytes). No index serves it: on a large store a rare match takes a scan.
	ArgsContains string
	// ErrorCodes keeps the jobs whose last attempt ended with one of these business error
	// codes (JobRow.LastErrorCode; see BusinessError).
	ErrorCodes []string
	// FairnessKeys keeps the jobs of these fairness keys (JobRow.FairnessKey; at most 100).
	// No index serves it: on a large store a rare key takes a scan.
	FairnessKeys []string
	// Cursor continues from a previous page's NextCursor.
	Cursor string
	// Limit is the page size (default 100, at most 10,000).
	Limit int
	// Ascending lists oldest first; the default is newest first.
	Ascending bool
}

// ListResult is one page; NextCursor is empty on the last page.
type ListResult struct {
	Jobs       []*JobRow
	NextCursor string
}

// Get returns a job, or an error wrapping ErrNotFound. An empty id, or one that is not text
// (valid UTF-8 without NUL bytes), is a *ValidationError for the field "id".
func (c *Client) Get(ctx context.Context, id string) (*JobRow, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	return c.store.JobGet(ctx, id)
}

// List returns one page of jobs in creation order (newest first unless Ascending). Paging
// with NextCursor visits every matching job once, even while jobs are added.
func (c *Client) List(ctx context.Context, p *ListParams) (*ListResult, error) {
	if p == nil {
		p = &ListParams{}
	}
	if err := checkPageLimit(p.Limit); err != nil {
		return nil, err
	}
	for _, s := range p.States {
		if !s.Valid() {
			return nil, invalid("states", "unknown state %q", s)
		}
	}
	if err := checkFilter(p.Queues, p.Kinds, p.Cursor); err != nil {
		return nil, err
	}
	if err := checkLimited("args_contains", p.ArgsContains, maxNameLen); err != nil {
		return nil, err
	}
	if err := checkErrorCodes(p.ErrorCodes); err != nil {
		return nil, err
	}
	if err := checkFairnessKeys(p.FairnessKeys); err != nil {
		return nil, err
	}
	res, err := c.store.JobList(ctx, &store.ListParams{
		States: p.States, Queues: p.Queues, Kinds: p.Kinds, CreatedAfter: p.CreatedAfter,
		CreatedBefore: p.CreatedBefore, ArgsContains: p.ArgsContains, Cursor: p.Cursor, Limit: p.Limit,
		Ascending: p.Ascending, ErrorCodes: p.ErrorCodes, FairnessKeys: p.FairnessKeys,
	})
	if errors.Is(err, store.ErrInvalidCursor) {
		return nil, invalid("cursor", "%q is not a cursor a List call returned", p.Cursor)
	}
	if err != nil {
		return nil, err
	}
	return &ListResult{Jobs: res.Jobs, NextCursor: res.NextCursor}, nil
}

// Cancel cancels a job that has not ended, recorded as done by the API. A running job's
// context is canceled at once when it runs in this process, and pushed to the process running
// it where the store can push (PostgreSQL); otherwise that process learns it at its next lease
// renewal. A terminal job returns an error wrapping ErrInvalidTransition.
func (c *Client) Cancel(ctx context.Context, id string) (*JobRow, error) {
	return c.CancelBy(ctx, id, hoppertype.ActorAPI, "canceled by API")
}

// CancelBy is Cancel with the actor and reason recorded in the job's history (the CLI records
// an operator). The canceled job is kept for its result TTL (Config.ResultTTL).
func (c *Client) CancelBy(ctx context.Context, id string, actor Actor, reason string) (*JobRow, error) {
	if err := checkChange(id, actor, reason); err != nil {
		return nil, err
	}
	var expires time.Time
	if row, err := c.store.JobGet(ctx, id); err == nil { // its own result TTL, if it has one
		expires = c.engine.ExpiresAt(row, nil, StateCanceled)
	}
	job, err := c.store.JobCancel(ctx, &store.CancelParams{ID: id, Actor: actor, Reason: reason, ExpiresAt: expires})
	if err != nil {
		return nil, err
	}
	c.engine.CancelRunning(id)
	return job, nil
}

// Events returns a job's history: every transition with its time, actor and reason.
func (c *Client) Events(ctx context.Context, id string) ([]*Event, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	return c.store.JobEvents(ctx, id)
}

// Parents returns the jobs job id waits or waited for (InsertOpts.After, a workflow step's
// parents), in the order it named them, with how each ended for it (Outcome, "" while it has
// not) and its state, kind and step; nil for a job without parents. Unlike ParentResults in a
// handler it reads no results (Result is nil): it is for looking at a job, whatever its
// state. An error wraps ErrNotFound when no job has the id.
func (c *Client) Parents(ctx context.Context, id string) ([]ParentResult, error) {
	out, _, err := c.ParentsUpTo(ctx, id, 0)
	return out, err
}

// ParentsUpTo is Parents bounded: the first limit parents, in the order the job named them
// (all of them when limit is 0), and how many the job has. A negative limit is a
// *ValidationError for the field "limit".
func (c *Client) ParentsUpTo(ctx context.Context, id string, limit int) ([]ParentResult, int, error) {
	if err := checkID("id", id); err != nil {
		return nil, 0, err
	}
	if limit < 0 {
		return nil, 0, invalid("limit", "%d is negative", limit)
	}
	// No result is read, and only the parents returned: the rest are counted.
	got, err := c.store.JobParents(ctx, &store.ParentsParams{ID: id, Unfenced: true, NoResults: true, Limit: limit})
	if err != nil {
		return nil, 0, fmt.Errorf("parents of job %s: %w", id, err)
	}
	var out []ParentResult
	for _, p := range got.Parents {
		p.Result = nil
		out = append(out, *p)
	}
	return out, got.Total, nil
}

// ChildrenParams pages Children.
type ChildrenParams struct {
	// Cursor continues from a previous page's NextCursor.
	Cursor string
	// Limit is the page size (default 100, at most 10,000).
	Limit int
}

// ChildrenResult is one page of a job's children; NextCursor is empty on the last page.
// Total counts them all.
type ChildrenResult struct {
	Jobs       []*JobRow
	NextCursor string
	Total      int
}

// Children returns one page of the jobs that wait or waited for a job (enqueued with it in
// InsertOpts.After, or steps of a workflow after it), oldest first, and how many there are. A
// job without children, or no such job, has none. A bad id, cursor or limit is a
// *ValidationError naming the field.
func (c *Client) Children(ctx context.Context, id string, p *ChildrenParams) (*ChildrenResult, error) {
	if p == nil {
		p = &ChildrenParams{}
	}
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	if err := checkPageLimit(p.Limit); err != nil {
		return nil, err
	}
	if err := checkLimited("cursor", p.Cursor, maxNameLen); err != nil {
		return nil, err
	}
	res, err := c.store.JobChildren(ctx, &store.ChildrenParams{ID: id, Cursor: p.Cursor, Limit: p.Limit})
	if errors.Is(err, store.ErrInvalidCursor) {
		return nil, invalid("cursor", "%q is not a cursor a Children call returned", p.Cursor)
	}
	if err != nil {
		return nil, fmt.Errorf("children of job %s: %w", id, err)
	}
	return &ChildrenResult{Jobs: res.Jobs, NextCursor: res.NextCursor, Total: res.Total}, nil
}

// Attempts returns a job's ended attempts: worker, start, end, outcome and error of each.
func (c *Client) Attempts(ctx context.Context, id string) ([]*AttemptRecord, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	return c.store.JobAttempts(ctx, id)
}
