package store

import (
	"context"
	"time"
)

// Notifier is implemented by stores that can push events to every process sharing them
// (PostgreSQL LISTEN/NOTIFY). The engine subscribes when the store has it and falls back to
// polling otherwise.
type Notifier interface {
	// Subscribe calls fn for each notification until ctx ends or the subscription fails; it
	// returns the reason it stopped. fn must not block for long.
	Subscribe(ctx context.Context, fn func(Notification)) error
}

// NotificationKind says what a notification is about.
type NotificationKind string

const (
	// JobsAvailable: jobs became claimable in Queue (an insert, a promotion, a rescue committed),
	// or in any queue when Queue is "" (a kind was enabled).
	JobsAvailable NotificationKind = "jobs_available"
	// JobCanceled: JobID was canceled; the process running it should cancel its context.
	JobCanceled NotificationKind = "job_canceled"
	// JobsScheduled: jobs became scheduled (an enqueue for later, a retry's backoff, a
	// snooze); At is the earliest run_at among them. The leader promotes them when it comes.
	JobsScheduled NotificationKind = "jobs_scheduled"
	// SchedulesChanged: a schedule was created, changed or deleted (its fire times may be
	// earlier than the leader planned for).
	SchedulesChanged NotificationKind = "schedules_changed"
	// Subscribed: the subscription is now listening. Notifications sent before were not
	// heard, so the subscriber should look for work it may have missed.
	Subscribed NotificationKind = "subscribed"
)

// Notification is one pushed event.
type Notification struct {
	Kind  NotificationKind
	Queue string
	JobID string
	At    time.Time // JobsScheduled only
}

// TxInserter inserts jobs inside a transaction the application owns, so a job exists if and
// only if that transaction commits. The PostgreSQL store hands one out per pgx.Tx or *sql.Tx.
type TxInserter interface {
	JobInsertMany(ctx context.Context, params []*InsertParams) ([]*InsertResult, error)
}
