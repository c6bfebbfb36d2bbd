package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
)

// DeadLetterStore keeps what the dead-letter queue needs beyond the jobs table: counts, and
// replays with their audit log (contract 11). A dead letter is a job in state failed; its
// listing is JobList with States = [failed] (and ExcludeReplayed for the ones not dealt with
// yet), marked with ReplaySummaries. Replays never change their source job: each
// creates a new job, with lineage (original_id, replay_count, replayed_by), and an audit row,
// in one transaction. Both stores implement it; implementations are safe for concurrent use.
// Expired jobs (see Sweeper) are neither counted nor replayed.
type DeadLetterStore interface {
	// DeadLetterStats counts the failed jobs not yet replayed (a replayed one has been dealt
	// with: it stays, for its audit trail, but no longer counts), finds the oldest one's finish
	// time, and counts the replayed ones apart, in one query: Count is the length of JobList
	// with States = [failed] and ExcludeReplayed, Count + Replayed its length without.
	DeadLetterStats(ctx context.Context) (*DeadLetterStats, error)
	// ReplaySummaries sums up the replays of each of ids that has been replayed (ids never
	// replayed, or unknown, are absent from the map), in one query.
	ReplaySummaries(ctx context.Context, ids []string) (map[string]*ReplaySummary, error)
	// JobReplay replays one failed job. ErrNotFound for an unknown or expired job,
	// ErrInvalidTransition for a job that is not failed, a *hoppertype.ReplayedError
	// (ErrAlreadyReplayed) for one replayed before unless p.Again. The check and the replay
	// are one transaction that holds the job's row: of two concurrent replays (or a replay and
	// a retry in place) of one dead letter, one is refused.
	JobReplay(ctx context.Context, p *ReplayParams) (*Replay, error)
	// JobReplayMany replays, oldest first, up to len(p.NewIDs) failed jobs matching the filter
	// that have never been replayed (no audit row with action replay names them as source),
	// all in one transaction, and counts the matching ones it skipped as replayed before.
	// Concurrent calls never replay one job twice.
	JobReplayMany(ctx context.Context, p *ReplayManyParams) (*ReplayManyResult, error)
	// ReplayList returns a page of the audit log, newest first.
	ReplayList(ctx context.Context, p *ReplayListParams) (*ReplayListResult, error)
}

// DeadLetterStats sums up the dead-letter queue.
type DeadLetterStats struct {
	// Count is the number of failed jobs not yet replayed.
	Count int64
	// Oldest is the earliest finish time of those; zero when there is none.
	Oldest time.Time
	// Replayed is the number of failed jobs that have been replayed.
	Replayed int64
}

// ReplaySummary sums up the replays of one dead letter.
type ReplaySummary struct {
	// Count is how often it was replayed.
	Count int
	// LastJobID is the job its newest replay created, LastAt when that was.
	LastJobID string
	LastAt    time.Time
}

// Actions of the dead-letter audit log: a replay made a new job, a retry resolved the dead
// letter in place (NewJobID is then the dead letter itself).
const (
	ActionReplay = "replay"
	ActionRetry  = "retry"
)

// DeadLetterFilter selects failed jobs; zero fields don't filter.
type DeadLetterFilter struct {
	Queues []string
	Kinds  []string
	// FinishedAfter (inclusive) and FinishedBefore (exclusive) bound when the jobs failed.
	FinishedAfter  time.Time
	FinishedBefore time.Time
}

// ReplayParams replays one job.
type ReplayParams struct {
	// Again replays a dead letter that was replayed before (recorded as forced).
	Again    bool
	SourceID string
	// NewID is the id of the job the replay creates (a UUIDv7).
	NewID string
	// By names who replayed (recorded as replayed_by); Actor and Reason go to the new job's
	// history and Reason to the audit row.
	By     string
	Actor  hoppertype.Actor
	Reason string
}

// ReplayManyParams replays the failed jobs matching a filter that were never replayed.
type ReplayManyParams struct {
	DeadLetterFilter
	// NewIDs are the ids of the jobs to create, in order; their number is the limit.
	NewIDs []string
	By     string
	Actor  hoppertype.Actor
	Reason string
}

// ReplayManyResult is what JobReplayMany did: the replays, and how many dead letters
// matching its filter it left because they were replayed before.
type ReplayManyResult struct {
	Replays []*Replay
	Skipped int
}

// Replay is one row of the audit log; Job is the new job (for a retry, the job retried) when
// the row was just made.
type Replay struct {
	ID          int64
	SourceJobID string
	NewJobID    string
	OriginalID  string
	ReplayedBy  string
	ReplayedAt  time.Time
	Reason      string
	// Action is ActionReplay or ActionRetry; Forced says the call overrode an earlier
	// replay (ReplayParams.Again, RetryParams.Again).
	Action string
	Forced bool
	Job    *hoppertype.JobRow
}

// ReplayListParams filters and pages ReplayList. Zero fields don't filter.
type ReplayListParams struct {
	SourceJobID string
	OriginalID  string
	ReplayedBy  string
	Since       time.Time // replayed at or after
	Until       time.Time // replayed before
	// Cursor is the NextCursor of the previous page.
	Cursor string
	// Limit is the page size (default 100, at most 1,000).
	Limit int
}

// ReplayListResult is one page of the audit log; NextCursor is empty on the last page.
type ReplayListResult struct {
	Replays    []*Replay
	NextCursor string
}

// ReplayLimit is ReplayListParams.Limit with its default and bound applied.
func (p *ReplayListParams) ReplayLimit() int {
	if p.Limit <= 0 {
		return 100
	}
	return min(p.Limit, 1000)
}

// EncodeReplayCursor is the cursor that continues the audit log after row id.
func EncodeReplayCursor(id int64) string { return EncodeCursor("replay:" + strconv.FormatInt(id, 10)) }

// DecodeReplayCursor returns the audit row id a cursor continues after, or an error wrapping
// ErrInvalidCursor.
func DecodeReplayCursor(c string) (int64, error) {
	s, err := DecodeCursor(c)
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(strings.TrimPrefix(s, "replay:"), 10, 64)
	if perr != nil || !strings.HasPrefix(s, "replay:") {
		return 0, fmt.Errorf("list replays: cursor %q is not one this store issued: %w", c, ErrInvalidCursor)
	}
	return n, nil
}

// NotFailed is the error of a replay whose source is not a dead letter.
func NotFailed(id string, state hoppertype.JobState) error {
	return fmt.Errorf("job %s is %s, and only failed jobs are replayed: %w", id, state, ErrInvalidTransition)
}

// Replayed is the refusal of a replay or retry of a dead letter whose newest replay is r.
func Replayed(r *Replay) error {
	return &hoppertype.ReplayedError{JobID: r.SourceJobID, ReplayJobID: r.NewJobID, ReplayedBy: r.ReplayedBy,
		ReplayedAt: r.ReplayedAt}
}
