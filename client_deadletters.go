package hopper

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/internal/store"
)

// The dead-letter queue (contract 11): jobs in state failed, kept for
// Config.DeadLetterRetention. They can be listed, counted and replayed; a replay creates a new
// job with the failed one's work and lineage, records who did it in an audit log, and leaves
// the dead letter as it was. A replayed dead letter has been dealt with, as one retried from
// Sidekiq's dead set or Oban's discarded jobs: DeadLetters leaves it out unless asked
// (IncludeReplayed), and DeadLetterStats counts it apart (Replayed), so that the count is
// always the number of dead letters listed.

// Limits of ReplayMany.
const (
	DefaultReplayLimit = 100
	MaxReplayLimit     = 1000
	maxReplayedBy      = 255
)

// DeadLetterFilter selects dead letters. Zero fields don't filter.
type DeadLetterFilter struct {
	Queues []string
	Kinds  []string
	// Since (inclusive) and Until (exclusive) bound when the jobs failed.
	Since time.Time
	Until time.Time
}

// DeadLetterParams filters and pages DeadLetters.
type DeadLetterParams struct {
	DeadLetterFilter
	// IncludeReplayed lists the dead letters that were replayed too (marked: their
	// DeadLetter.Replays is more than 0). By default they are left out, as dealt with.
	IncludeReplayed bool
	// ErrorCodes keeps the dead letters that failed with one of these business error codes
	// (see BusinessError).
	ErrorCodes []string
	// Cursor continues from a previous page's NextCursor.
	Cursor string
	// Limit is the page size (default 100, at most 10,000).
	Limit int
}

// DeadLetter is a failed job as the dead-letter queue lists it: the job, and its replays.
type DeadLetter struct {
	*JobRow
	// Replays is how often this dead letter was replayed; 0 when never. (The job's own
	// ReplayCount says instead which replay of its OriginalID the job is.)
	Replays int
	// LastReplayID is the job the newest replay created and LastReplayedAt when; empty when
	// never replayed.
	LastReplayID   string
	LastReplayedAt time.Time
}

// DeadLetterPage is one page of dead letters; NextCursor is empty on the last page.
type DeadLetterPage struct {
	DeadLetters []*DeadLetter
	NextCursor  string
}

// Jobs returns the page's jobs, in order.
func (p *DeadLetterPage) Jobs() []*JobRow {
	out := make([]*JobRow, len(p.DeadLetters))
	for i, d := range p.DeadLetters {
		out[i] = d.JobRow
	}
	return out
}

// DeadLetterStats sums up the dead-letter queue. Count is the number of dead letters
// DeadLetters lists, Count + Replayed the number it lists with IncludeReplayed.
type DeadLetterStats struct {
	// Count is the number of failed jobs neither expired nor replayed.
	Count int64
	// Oldest is when the oldest of them failed; zero when there is none.
	Oldest time.Time
	// Replayed is the number of failed jobs not yet expired that were replayed.
	Replayed int64
}

// OldestAge is how long the oldest dead letter has waited at now; 0 when there is none.
func (s *DeadLetterStats) OldestAge(now time.Time) time.Duration {
	if s.Oldest.IsZero() {
		return 0
	}
	return max(now.Sub(s.Oldest), 0)
}

// Audit-log actions (Replay.Action).
const (
	// ActionReplay: a new job made from the dead letter.
	ActionReplay = store.ActionReplay
	// ActionRetry: the dead letter retried in place (RetryJob); NewJobID is SourceJobID.
	ActionRetry = store.ActionRetry
)

// Replay is one entry of the dead-letter audit log: a replay or a retry in place.
type Replay struct {
	ID          int64
	SourceJobID string // the dead letter replayed or retried
	NewJobID    string // the job the replay created; for a retry, the dead letter itself
	OriginalID  string // the first job of the lineage
	ReplayedBy  string
	ReplayedAt  time.Time
	Reason      string
	// Action is ActionReplay or ActionRetry.
	Action string
	// Forced says the call overrode an earlier replay (ReplayOpts.Again, RetryOpts.Again).
	Forced bool
}

// ReplayListParams filters and pages Replays. Zero fields don't filter.
type ReplayListParams struct {
	SourceJobID string
	// OriginalID selects a whole lineage: every replay descending from one job.
	OriginalID string
	ReplayedBy string
	Since      time.Time // replayed at or after
	Until      time.Time // replayed before
	// Cursor continues from a previous page's NextCursor.
	Cursor string
	// Limit is the page size (default 100, at most 1,000).
	Limit int
}

// ReplayListResult is one page of the audit log, newest first; NextCursor is empty on the
// last page.
type ReplayListResult struct {
	Replays    []*Replay
	NextCursor string
}

// DeadLetters returns one page of failed jobs, newest first, filtered: those never replayed,
// or with p.IncludeReplayed all of them, each with a summary of its replays. An error wraps
// ErrInvalid for a bad limit or cursor.
func (c *Client) DeadLetters(ctx context.Context, p *DeadLetterParams) (*DeadLetterPage, error) {
	if p == nil {
		p = &DeadLetterParams{}
	}
	if err := checkPageLimit(p.Limit); err != nil {
		return nil, err
	}
	if err := checkFilter(p.Queues, p.Kinds, p.Cursor); err != nil {
		return nil, err
	}
	if err := checkErrorCodes(p.ErrorCodes); err != nil {
		return nil, err
	}
	res, err := c.store.JobList(ctx, &store.ListParams{States: []JobState{StateFailed}, Queues: p.Queues,
		Kinds: p.Kinds, FinishedAfter: p.Since, FinishedBefore: p.Until, ExcludeReplayed: !p.IncludeReplayed,
		ErrorCodes: p.ErrorCodes, Cursor: p.Cursor, Limit: p.Limit})
	if errors.Is(err, store.ErrInvalidCursor) {
		return nil, invalid("cursor", "%q is not a cursor a DeadLetters call returned", p.Cursor)
	}
	if err != nil {
		return nil, err
	}
	page := &DeadLetterPage{NextCursor: res.NextCursor, DeadLetters: make([]*DeadLetter, len(res.Jobs))}
	ids := make([]string, len(res.Jobs))
	for i, j := range res.Jobs {
		page.DeadLetters[i], ids[i] = &DeadLetter{JobRow: j}, j.ID
	}
	// Even without IncludeReplayed: a dead letter replayed since the listing's read shows so.
	replays, err := c.store.ReplaySummaries(ctx, ids)
	if err != nil {
		return nil, err
	}
	for _, d := range page.DeadLetters {
		if r := replays[d.ID]; r != nil {
			d.Replays, d.LastReplayID, d.LastReplayedAt = r.Count, r.LastJobID, r.LastAt
		}
	}
	return page, nil
}

// DeadLetterStats counts the dead letters, finds when the oldest failed, and counts the
// replayed ones apart, in one query.
func (c *Client) DeadLetterStats(ctx context.Context) (*DeadLetterStats, error) {
	st, err := c.store.DeadLetterStats(ctx)
	if err != nil {
		return nil, err
	}
	return &DeadLetterStats{Count: st.Count, Oldest: st.Oldest, Replayed: st.Replayed}, nil
}

// ReplayOpts says how ReplayWith replays a dead letter.
type ReplayOpts struct {
	// By names who replayed, in the audit log and as the new job's ReplayedBy (default "api").
	By string
	// Reason is recorded in the audit log and the new job's history (default "replay").
	Reason string
	// Again replays a dead letter that was replayed before, making one more job. Without it
	// such a replay is refused with a *ReplayedError naming the earlier replay (one failure,
	// one new job: a second replay of a charge-card job is a second charge). The audit row
	// records that it was forced.
	Again bool
}

// Replay is ReplayWith(ctx, id, ReplayOpts{By: by}).
func (c *Client) Replay(ctx context.Context, id, by string) (*JobRow, error) {
	return c.ReplayWith(ctx, id, ReplayOpts{By: by})
}

// ReplayWith enqueues a new job that does a failed job's work again: same kind, queue, args,
// headers, priority, attempt budget, timeout, retry policy, group and result TTL, with
// OriginalID set to the first job of its lineage, ReplayCount one more than the source's and
// ReplayedBy = opts.By. The failed job stays as it was; the replay is recorded in the audit
// log (Replays) in the same transaction, which holds the dead letter so that of two
// concurrent replays one is refused. A dead letter is replayed once unless opts.Again.
// Errors wrap ErrNotFound (no such job, or expired), ErrInvalidTransition (not failed: a job
// retried in place is no longer failed) or ErrAlreadyReplayed (a *ReplayedError).
func (c *Client) ReplayWith(ctx context.Context, id string, opts ReplayOpts) (*JobRow, error) {
	if err := checkID("id", id); err != nil {
		return nil, err
	}
	by, err := replayedBy(opts.By)
	if err != nil {
		return nil, err
	}
	if opts.Reason == "" {
		opts.Reason = "replay"
	}
	if err := checkLimited("reason", opts.Reason, MaxReasonBytes); err != nil {
		return nil, err
	}
	r, err := c.store.JobReplay(ctx, &store.ReplayParams{SourceID: id, NewID: uuid.Must(uuid.NewV7()).String(),
		By: by, Actor: ActorAPI, Reason: opts.Reason, Again: opts.Again})
	if err != nil {
		return nil, err
	}
	c.obs.inserted(ctx, r.Job)
	c.engine.Notify(r.Job.Queue)
	return r.Job, nil
}

// ReplayManyResult is what ReplayMany did: the new jobs, in the order of their dead letters
// (oldest first), and how many dead letters matching the filter it skipped because they were
// replayed before.
type ReplayManyResult struct {
	Jobs    []*JobRow
	Skipped int
}

// ReplayMany replays, like Replay, the failed jobs matching f that have never been replayed,
// oldest first, at most limit of them (default 100, at most 1000), all in one transaction.
// Calling it again continues where it stopped: a job it replayed is not replayed again, and
// concurrent calls never replay one job twice. The replayed dead letters matching f are
// skipped and counted (Skipped).
func (c *Client) ReplayMany(ctx context.Context, f DeadLetterFilter, limit int, by string) (*ReplayManyResult, error) {
	limit, err := replayLimit(limit)
	if err != nil {
		return nil, err
	}
	by, err = replayedBy(by)
	if err != nil {
		return nil, err
	}
	if err := checkFilter(f.Queues, f.Kinds, ""); err != nil {
		return nil, err
	}
	p := &store.ReplayManyParams{DeadLetterFilter: storeFilter(f), NewIDs: make([]string, limit), By: by,
		Actor: ActorAPI, Reason: "bulk replay"}
	for i := range p.NewIDs {
		p.NewIDs[i] = uuid.Must(uuid.NewV7()).String()
	}
	res, err := c.store.JobReplayMany(ctx, p)
	if err != nil {
		return nil, err
	}
	out := &ReplayManyResult{Skipped: res.Skipped, Jobs: make([]*JobRow, len(res.Replays))}
	queues := map[string]bool{}
	for i, r := range res.Replays {
		out.Jobs[i] = r.Job
		queues[r.Job.Queue] = true
	}
	c.obs.inserted(ctx, out.Jobs...)
	for q := range queues {
		c.engine.Notify(q)
	}
	return out, nil
}

// replayLimit is the limit of a bulk replay or retry, defaulted and checked.
func replayLimit(limit int) (int, error) {
	if limit == 0 {
		return DefaultReplayLimit, nil
	}
	if limit < 0 || limit > MaxReplayLimit {
		return 0, invalid("limit", "%d is outside 1–%d", limit, MaxReplayLimit)
	}
	return limit, nil
}

func storeFilter(f DeadLetterFilter) store.DeadLetterFilter {
	return store.DeadLetterFilter{Queues: f.Queues, Kinds: f.Kinds, FinishedAfter: f.Since, FinishedBefore: f.Until}
}

// Replays returns one page of the replay audit log, newest first.
func (c *Client) Replays(ctx context.Context, p *ReplayListParams) (*ReplayListResult, error) {
	if p == nil {
		p = &ReplayListParams{}
	}
	if p.Limit < 0 || p.Limit > 1000 {
		return nil, invalid("limit", "%d is outside 0–1000", p.Limit)
	}
	for _, f := range []struct{ name, text string }{{"source_job_id", p.SourceJobID},
		{"original_id", p.OriginalID}, {"replayed_by", p.ReplayedBy}, {"cursor", p.Cursor}} {
		if err := checkLimited(f.name, f.text, maxNameLen); err != nil {
			return nil, err
		}
	}
	dl := c.store
	res, err := dl.ReplayList(ctx, &store.ReplayListParams{SourceJobID: p.SourceJobID, OriginalID: p.OriginalID,
		ReplayedBy: p.ReplayedBy, Since: p.Since, Until: p.Until, Cursor: p.Cursor, Limit: p.Limit})
	if errors.Is(err, store.ErrInvalidCursor) {
		return nil, invalid("cursor", "%q is not a cursor a Replays call returned", p.Cursor)
	}
	if err != nil {
		return nil, err
	}
	out := &ReplayListResult{NextCursor: res.NextCursor, Replays: make([]*Replay, len(res.Replays))}
	for i, r := range res.Replays {
		out.Replays[i] = &Replay{ID: r.ID, SourceJobID: r.SourceJobID, NewJobID: r.NewJobID,
			OriginalID: r.OriginalID, ReplayedBy: r.ReplayedBy, ReplayedAt: r.ReplayedAt, Reason: r.Reason,
			Action: r.Action, Forced: r.Forced}
	}
	return out, nil
}

func replayedBy(by string) (string, error) {
	switch {
	case by == "":
		return string(ActorAPI), nil
	case len(by) > maxReplayedBy:
		return "", invalid("replayed_by", "is %d bytes, more than %d", len(by), maxReplayedBy)
	}
	if err := checkText("replayed_by", by); err != nil {
		return "", err
	}
	return by, nil
}
