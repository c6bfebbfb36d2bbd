// Package sqlitestore opens Hopper's embedded store: one SQLite file (WAL mode, pure-Go driver,
// no cgo). Programs on PostgreSQL don't import it and don't link SQLite.
package sqlitestore

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
)

// Config configures Open. Only Path is required.
type Config struct {
	// Path of the database file, created when missing (e.g. "hopper.db").
	Path string
	// Synchronous is SQLite's synchronous setting. "FULL" (the default) makes every committed
	// job change survive a power loss. "NORMAL" is faster; in WAL mode it survives a process
	// crash but a power loss or OS crash may lose the changes committed since the last
	// checkpoint (at most about 1,000 pages of WAL).
	Synchronous string
	// BusyTimeout is how long to wait for a lock held by another process (default 5 s).
	BusyTimeout time.Duration
	// ReadConns is the size of the reader pool (default 4).
	ReadConns int
	// Clock is the time source (default the wall clock).
	Clock clock.Clock
}

// Store is an open SQLite store; pass it as hopper.Config.Store and Close it after the client stops.
// Store.Backup(ctx, to) writes a consistent copy of its database to the new file to while it
// is in use, as `hopper backup` does.
type Store = sqlite.Store

// Copy is what Store.Backup wrote: the copy's size and schema version.
type Copy = sqlite.Copy

// Open opens or creates the database and applies pending migrations.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	return sqlite.Open(ctx, sqlite.Config{
		Path: cfg.Path, Synchronous: cfg.Synchronous, BusyTimeout: cfg.BusyTimeout,
		ReadConns: cfg.ReadConns, Clock: cfg.Clock,
	})
}
