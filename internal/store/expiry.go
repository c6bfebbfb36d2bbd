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
type Sweeper interface {
	// JobSweepExpired deletes at most limit jobs whose expires_at is at or before now, oldest
	// expiry first, in one short transaction, with their history (events, attempts) and
	// idempotency keys, and returns how many it deleted. Callers repeat it until it returns
	// fewer than limit, so no sweep holds a long lock.
	JobSweepExpired(ctx context.Context, now time.Time, limit int) (int, error)
}
