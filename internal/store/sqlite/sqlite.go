// Package sqlite is Hopper's embedded store: one SQLite file in WAL mode, one writer connection
// and a pool of readers. It uses the pure-Go modernc.org/sqlite driver so the binary stays static.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/migrate"
	"github.com/hopperjobs/hopper/internal/store"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Config configures Open. The zero value (with a Path) works.
type Config struct {
	// Path of the database file; created when missing.
	Path string
	// Synchronous is SQLite's synchronous pragma: "FULL" (default) makes every committed
	// transaction survive power loss; "NORMAL" is faster but, in WAL mode, a power loss (not a
	// process crash) may lose the transactions committed since the last checkpoint.
	Synchronous string
	// BusyTimeout is how long a connection waits for a lock held by another process (default 5 s).
	BusyTimeout time.Duration
	// ReadConns is the size of the reader pool (default 4).
	ReadConns int
	// Clock is the time source (default the wall clock).
	Clock clock.Clock
}

func (c Config) withDefaults() Config {
	if c.Synchronous == "" {
		c.Synchronous = "FULL"
	}
	if c.BusyTimeout == 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.ReadConns == 0 {
		c.ReadConns = 4
	}
	c.Clock = clock.OrReal(c.Clock)
	return c
}

func (c Config) validate() error {
	if c.Path == "" {
		return errors.New("sqlite: Path is required")
	}
	switch strings.ToUpper(c.Synchronous) {
	case "FULL", "NORMAL", "EXTRA":
	default:
		return fmt.Errorf("sqlite: Synchronous %q: want FULL, EXTRA or NORMAL", c.Synchronous)
	}
	return nil
}

// Store is the SQLite implementation of store.Store.
type Store struct {
	cfg    Config
	clock  clock.Clock
	writer *sql.DB
	reader *sql.DB

	// stmts holds the statements prepared on the writer connection, by query (prepared): a
	// write transaction reads it without a lock (cachedTx), since a caller preparing a
	// statement holds stmtMu while it waits for the writer's connection, the one the
	// transaction holds.
	stmtMu sync.Mutex // serializes preparing
	stmts  sync.Map   // string → *sql.Stmt

	writes chan *writeReq // to the group-commit loop (writer.go)
	// writeFault is the last write's error when it meant the database cannot take writes
	// (disk full, read-only, I/O error), nil once a write succeeds: Ping reports it.
	writeFault atomic.Pointer[error]
	quit       chan struct{}
	loopDone   chan struct{}
	closeOnce  sync.Once
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at cfg.Path and applies pending migrations.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	writer, err := sql.Open("sqlite", dsn(cfg, false))
	if err != nil {
		return nil, fmt.Errorf("open sqlite writer: %w", err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	s := &Store{cfg: cfg, clock: cfg.Clock, writer: writer}
	if err := s.Migrate(ctx); err != nil {
		writer.Close()
		return nil, unavailable(err)
	}
	for _, q := range cachedQueries {
		if _, err := s.prepared(ctx, q); err != nil {
			writer.Close()
			return nil, unavailable(err)
		}
	}
	reader, err := sql.Open("sqlite", dsn(cfg, true))
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("open sqlite readers: %w", err)
	}
	reader.SetMaxOpenConns(cfg.ReadConns)
	reader.SetMaxIdleConns(cfg.ReadConns)
	s.reader = reader
	s.writes, s.quit, s.loopDone = make(chan *writeReq, 256), make(chan struct{}), make(chan struct{})
	go s.writeLoop()
	return s, nil
}

func dsn(cfg Config, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+strings.ToUpper(cfg.Synchronous)+")")
	q.Add("_pragma", "foreign_keys(1)")
	// Savepoint journals (writer.go) stay in memory instead of temporary files.
	q.Add("_pragma", "temp_store(MEMORY)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		q.Set("_txlock", "immediate")
	}
	return "file:" + cfg.Path + "?" + q.Encode()
}

// Migrate applies the embedded migrations not yet recorded in schema_migrations.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return err
	}
	if _, err := s.writer.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for _, m := range ms {
		if err := s.apply(ctx, m); err != nil {
			return err
		}
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if v > len(ms) {
		return fmt.Errorf("database %s has schema version %d, newer than this binary's %d: use a newer hopper", s.cfg.Path, v, len(ms))
	}
	return nil
}

func (s *Store) apply(ctx context.Context, m migrate.Migration) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE version = ?`, m.Version).Scan(&n); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, micros(s.clock.Now())); err != nil {
		return fmt.Errorf("record migration %s: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: commit: %w", m.Name, err)
	}
	return nil
}

// LatestVersion is the version of the newest migration embedded in this binary.
func LatestVersion() int {
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return 0
	}
	return len(ms)
}

// Name is the kind of database the store keeps jobs in: "sqlite".
func (s *Store) Name() string { return "sqlite" }

// SchemaVersion returns the highest applied migration version.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.writer.QueryRowContext(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&v)
	return int(v.Int64), err
}

// pingTimeout bounds Ping when its context has no earlier deadline.
const pingTimeout = 2 * time.Second

// Ping checks that the database answers: a read of one row through the reader pool, within
// 2 s, and that the last write did not fail for want of disk space or access. Its error wraps
// store.ErrUnavailable when the file cannot be read or written.
func (s *Store) Ping(ctx context.Context) error {
	select {
	case <-s.quit:
		return store.ErrClosed
	default:
	}
	pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	var one int
	err := s.reader.QueryRowContext(pingCtx, `SELECT 1 FROM schema_migrations LIMIT 1`).Scan(&one)
	switch {
	case err != nil && ctx.Err() == nil && pingCtx.Err() != nil:
		return fmt.Errorf("ping: %w: no answer within %s: %w", store.ErrUnavailable, pingTimeout, err)
	case err != nil:
		return wrap(err, "ping")
	}
	if fault := s.writeFault.Load(); fault != nil {
		return fmt.Errorf("ping: the last write failed: %w", *fault)
	}
	return nil
}

// Now returns the store's clock time.
func (s *Store) Now() time.Time { return s.clock.Now() }

// Close stops the writer loop and closes both connection pools. Writes after Close return
// ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.quit) })
	<-s.loopDone
	s.stmtMu.Lock()
	s.stmts.Range(func(q, st any) bool {
		st.(*sql.Stmt).Close()
		s.stmts.Delete(q)
		return true
	})
	s.stmtMu.Unlock()
	var errs []error
	if s.reader != nil {
		errs = append(errs, s.reader.Close())
	}
	errs = append(errs, s.writer.Close())
	return errors.Join(errs...)
}

// prepared returns a statement prepared once on the writer connection. It must be called
// outside a write transaction: the writer pool has one connection, which the transaction holds.
func (s *Store) prepared(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := s.preparedStmt(query); st != nil {
		return st, nil
	}
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	if st := s.preparedStmt(query); st != nil {
		return st, nil
	}
	st, err := s.writer.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	s.stmts.Store(query, st)
	return st, nil
}

// preparedStmt is query's statement if prepared already, else nil; it takes no lock, so a
// write transaction may call it.
func (s *Store) preparedStmt(query string) *sql.Stmt {
	if st, ok := s.stmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	return nil
}
