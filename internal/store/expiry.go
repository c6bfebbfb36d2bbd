package store

import (
	"context"
	"time"
)

// Sweeper deletes finished jobs whose retention has passed (contract 12). Both stores
// implement it; the leader calls it periodically. Reads already hide such jobs: JobGet,
// JobList, JobEvents and JobAttempts treat a job whose expires_at is at or before the store's
// clock as gone (ErrNotFound, or left out of a list), so a sweep that runs late changes
// nothing a caller can see.
//
// A sweep walks the jobs in id order (their creation order) a window at a time, rather than
// looking expired jobs up in an index on expires_at: such an index would take an entry for
// every job that ends, on the hot path, to serve a background chore. Old jobs expire first, so
// the walk finds them at the front of the table.
type Sweeper interface {
	// JobSweepExpired looks at the (at most) p.Scan jobs that follow p.After in id order and
	// deletes those whose expires_at is at or before p.Now, with their history (events,
	// attempts) and idempotency keys, in one short transaction. Result.Next is where the walk
	// goes on, or "" when it reached the end of the table. Id order is the order of the ids'
	// bytes (both stores collate ids so), which the sweep compares positions of its walk by.
	JobSweepExpired(ctx context.Context, p *SweepParams) (*SweepResult, error)
	// SweepSettled returns the settled windows last saved by SweepSettle, in id order.
	SweepSettled(ctx context.Context) ([]SettledWindow, error)
	// SweepSettle replaces the saved settled windows with ws, in one transaction.
	SweepSettle(ctx context.Context, ws []SettledWindow) error
}

// SettledWindow is a window of the sweep's walk whose jobs had all ended and none expired
// when it was read: nothing in (After, Last] expires before Soonest, since an ended job's
// expiry never changes and new jobs take new ids, after it. The leader skips such a window
// until Soonest, and saves them so that the next leader does too (engine/expiry.go).
type SettledWindow struct {
	After, Last string
	Soonest     time.Time
}

// SweepParams is one window of a sweep.
type SweepParams struct {
	Now   time.Time
	After string // the walk goes on after this id; "" starts at the beginning
	Scan  int    // jobs to look at (default 5,000)
}

// SweepResult is what one window did.
type SweepResult struct {
	Deleted int
	// Expired counts the window's jobs whose expiry had passed by p.Now, deleted or not (a
	// live idempotency key keeps its job; another transaction may hold a row); Unended its
	// jobs that have not ended (no expiry).
	Expired, Unended int
	Next             string // "" when the walk reached the end
	// Soonest is the earliest expiry among the window's jobs that have not expired by
	// p.Now; zero when none of them has one (they are all live, or the window is empty).
	// The sweep's head walk uses it to tell the front of the expiring jobs from jobs kept
	// for long.
	Soonest time.Time
}
