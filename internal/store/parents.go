package store

import (
	"context"

	"github.com/hopperjobs/hopper/hoppertype"
)

// Results passed along (docs/workflows.md): a child reads its parents' outcomes and results
// from the parents' own rows when it asks, through its job_deps rows (one look-up of the
// child's index, then each parent by primary key); nothing is copied into the child.

// ParentStore reads the parents of a job.
type ParentStore interface {
	// JobParents returns the parents of job p.ID with how each ended and what it left, in the
	// order the job named them (InsertParams.After, a parent named twice once). A job without
	// parents has none. A parent whose retention ran out (expired, swept or not: contract 12)
	// comes with Expired set and only its ID and Outcome, which the dependency row keeps.
	// Fenced (the default), NoSuchJob when no job has the id (or it expired) and ErrLeaseLost
	// when it is not running under p.Token; Unfenced, ErrNotFound when no job has the id.
	JobParents(ctx context.Context, p *ParentsParams) (*Parents, error)
	// JobChildren returns one page of the live jobs that wait or waited for job p.ID (its
	// children), in id order, and how many there are. A job without children, or no such
	// job, has none; a bad cursor is ErrInvalidCursor.
	JobChildren(ctx context.Context, p *ChildrenParams) (*Children, error)
}

// ChildrenParams asks for a page of a job's children.
type ChildrenParams struct {
	ID string
	// Cursor is the NextCursor of the previous page; empty for the first page.
	Cursor string
	// Limit is the page size (default 100, at most 10,000).
	Limit int
}

// Children is one page of a job's children (ParentStore.JobChildren); NextCursor is empty on
// the last page. Total counts them all.
type Children struct {
	Jobs       []*hoppertype.JobRow
	NextCursor string
	Total      int
}

// ParentsParams asks for the parents of one job.
type ParentsParams struct {
	ID string
	// Token fences the read: the job must be running under this lease token (a worker reads
	// the parents of the attempt it holds). No job runs under token 0.
	Token int64
	// Unfenced reads the parents of a job in any state, whatever Token.
	Unfenced bool
	// MaxResultBytes, when positive, bounds the results read: when the parents' results come
	// to more bytes together, none is read (Parents.ResultsOmitted) and the rest is.
	MaxResultBytes int
	// Limit, when positive, bounds the parents returned to the first Limit in order
	// (Parents.Total counts them all).
	Limit int
	// NoResults reads no result at all (every Result nil, ResultBytes 0): the parents are
	// counted from their dependency rows alone, and only the Limit returned are read, so a
	// look at a job's parents costs nothing for the parents it does not show.
	NoResults bool
}

// Parents are a job's parents (ParentStore.JobParents).
type Parents struct {
	Parents []*hoppertype.ParentResult
	// ResultsOmitted: the results together were larger than ParentsParams.MaxResultBytes, so
	// every Result was left out; read them again without the bound.
	ResultsOmitted bool
	// ResultBytes is the size of the results together (those left out included).
	ResultBytes int
	// Total is the number of parents, those beyond ParentsParams.Limit included.
	Total int
}
