// Package pgstore opens Hopper's PostgreSQL store, for several processes (or machines)
// sharing one database. Programs on SQLite don't import it and don't link pgx.
//
// Jobs can also be enqueued inside the application's own transaction, so they exist if and
// only if it commits: Store.Tx takes a pgx.Tx and Store.SQLTx a *sql.Tx opened with the pgx
// driver (github.com/jackc/pgx/v5/stdlib).
package pgstore

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store/postgres"
)

// Config configures Open. Only URL is required.
type Config struct {
	// URL is the connection string, e.g. "postgres://hopper@db:5432/app?sslmode=require".
	// pgx's settings in it apply (pool_max_conns, default_query_exec_mode, …).
	URL string
	// Schema holds Hopper's tables (default "hopper"), so they don't mix with the
	// application's. It is created when missing; at most 58 bytes.
	Schema string
	// MaxConns bounds the connection pool (default: the larger of 4 and the CPU count).
	// Notifications use one more connection per subscription.
	MaxConns int
	// PollOnly turns off LISTEN: workers find new jobs by polling only. Set it when URL goes
	// through a connection pooler in transaction mode (PgBouncer's pool_mode=transaction),
	// where LISTEN silently receives nothing.
	PollOnly bool
	// Clock replaces the database clock (for tests with a fake clock). Leave it nil in
	// production: every node then judges leases, schedules and leadership by the database's
	// now(), one clock for the whole cluster.
	Clock clock.Clock
	// WakeInterval spaces the notifications that tell other processes of this store's
	// enqueues, because PostgreSQL commits notifying transactions one at a time: per queue, at
	// most one notifying statement in flight, and one started per interval once a burst of 10
	// is spent. An enqueue that finds the queue's turn taken leaves its notification out, and
	// the jobs so held are announced together as soon as the turn is free. 0 means 2 ms;
	// negative notifies with every enqueue. This process's own workers are woken at once either way, and enqueues in
	// the application's transaction (Tx, SQLTx) always notify at their commit.
	WakeInterval time.Duration
}

// Store is an open PostgreSQL store; pass it as hopper.Config.Store and Close it after the
// client stops. It is safe for concurrent use.
type Store = postgres.Store

// Open connects, creates the schema when missing and applies pending migrations. Nodes that
// start together are serialized by an advisory lock; the later ones find nothing to do.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	return postgres.Open(ctx, postgres.Config{
		URL: cfg.URL, Schema: cfg.Schema, MaxConns: cfg.MaxConns, PollOnly: cfg.PollOnly, Clock: cfg.Clock,
		WakeInterval: cfg.WakeInterval,
	})
}
