package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// DefaultSchema holds Hopper's tables when Config.Schema is empty.
const DefaultSchema = "hopper"

// maxSchemaLen keeps the notification channel "<schema>_jobs" within PostgreSQL's 63-byte
// identifier limit.
const maxSchemaLen = 63 - len("_jobs")

// Config configures Open. Only URL is required.
type Config struct {
	// URL is the connection string, e.g. "postgres://hopper@db:5432/app?sslmode=require". Pool
	// settings in it (pool_max_conns, …) are honoured; MaxConns overrides pool_max_conns.
	URL string
	// Schema holds Hopper's tables (default "hopper"); created when missing. At most 58 bytes.
	Schema string
	// MaxConns bounds the connection pool (default: pgxpool's, the larger of 4 and the CPU
	// count). Subscribe uses one more, dedicated connection.
	MaxConns int
	// PollOnly makes Subscribe wait for its context without listening, so workers find new
	// jobs by polling only. Set it when URL goes through a connection pooler in transaction
	// mode (PgBouncer's pool_mode=transaction), where LISTEN silently receives nothing.
	PollOnly bool
	// Clock, when set, is the source of every time the store writes and compares, passed to
	// the database as a parameter: tests use it with a fake clock. When nil (the default) the
	// database's now() is used everywhere, so leases, schedules and the leader lease are judged
	// on one clock for the whole cluster, never a node's.
	Clock clock.Clock
	// WakeInterval paces the notifications that tell other processes' workers of this store's
	// inserts: per queue, at most one notifying statement in flight, and one started per
	// interval once a burst of 10 is spent; an insert that finds the queue's turn taken leaves
	// its notification out, and the jobs so held are announced together when the turn is free
	// (wakes.go). 0 means DefaultWakeInterval (2 ms); negative notifies in every insert's
	// transaction. Inserts in the application's transactions (Tx, SQLTx) always notify at
	// their commit.
	WakeInterval time.Duration
}

func (c Config) withDefaults() Config {
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if c.WakeInterval == 0 {
		c.WakeInterval = DefaultWakeInterval
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.URL == "":
		return errors.New("postgres: URL is required")
	case len(c.Schema) > maxSchemaLen:
		return fmt.Errorf("postgres: Schema %q is longer than %d bytes", c.Schema, maxSchemaLen)
	case c.MaxConns < 0:
		return fmt.Errorf("postgres: MaxConns %d is negative", c.MaxConns)
	}
	return nil
}

// Store is the PostgreSQL implementation of store.Store and store.Notifier. It is safe for
// concurrent use.
type Store struct {
	cfg     Config
	pool    *pgxpool.Pool
	schema  string // quoted identifier
	channel string // notification channel name, unquoted
	clock   clock.Clock
	// offset is the database clock minus the local one, measured at Open (database clock only).
	offset time.Duration
	closed atomic.Bool

	queries sync.Map // SQL template → text with the schema filled in
	cursors claimCursors
	fair    fairQueues
	wakes   *wakeLimiter // nil when every insert notifies

	// pingEvery is how long a subscription waits for a notification before it pings.
	pingEvery time.Duration
	// listening, when set, is called once a subscription's LISTEN is in place (tests).
	listening func()
}

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)

// Open connects to the database, creates the schema when missing and applies pending
// migrations (serialized by an advisory lock, so nodes starting together don't race). When
// the database cannot be reached the error wraps store.ErrUnavailable.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pcfg, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse URL: %w", err)
	}
	if cfg.MaxConns > 0 {
		pcfg.MaxConns = int32(cfg.MaxConns)
	}
	setDefaultParams(pcfg.ConnConfig.RuntimeParams)
	pcfg.ShouldPing = shouldPing
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s := &Store{
		cfg: cfg, pool: pool, clock: cfg.Clock,
		schema: pgx.Identifier{cfg.Schema}.Sanitize(), channel: cfg.Schema + "_jobs",
		pingEvery: defaultPingEvery,
	}
	if cfg.WakeInterval > 0 {
		// The real clock even when Config.Clock is fake: the interval spaces real commits.
		s.wakes = newWakeLimiter(cfg.WakeInterval, clock.Real{}, s.sendWakes)
	}
	if err := s.Migrate(ctx); err != nil {
		pool.Close()
		return nil, unavailable(err)
	}
	if s.clock == nil {
		if err := s.measureOffset(ctx); err != nil {
			pool.Close()
			return nil, unavailable(err)
		}
	}
	return s, nil
}

// setDefaultParams sets session defaults the URL doesn't: an application_name that shows in
// pg_stat_activity, and no JIT compilation. Hopper's statements are short; JIT, triggered by
// a cost estimate (a small never-analyzed table is estimated at 1,130 rows), can make one of
// them take 100 times longer.
func setDefaultParams(params map[string]string) {
	for k, v := range map[string]string{"application_name": "hopper", "jit": "off"} {
		if _, ok := params[k]; !ok {
			params[k] = v
		}
	}
}

// shouldPing checks a pooled connection before use only after 10 s idle (pgxpool's default
// is 1 s). An idle node polls about once a second, so the default would add a ping to most of
// its queries; a connection that died meanwhile fails its next statement instead, and the pool
// drops it.
func shouldPing(_ context.Context, p pgxpool.ShouldPingParams) bool {
	return p.IdleDuration > 10*time.Second
}

// measureOffset estimates how far the database clock is from the local one, for Now.
func (s *Store) measureOffset(ctx context.Context) error {
	var db time.Time
	before := time.Now()
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&db); err != nil {
		return fmt.Errorf("postgres: read the database clock: %w", err)
	}
	after := time.Now()
	s.offset = db.Sub(before.Add(after.Sub(before) / 2))
	return nil
}

// Now returns the store's clock: Config.Clock when set, otherwise the local clock corrected by
// the offset to the database clock measured at Open. Stored times always come from the
// database clock itself.
func (s *Store) Now() time.Time {
	if s.clock != nil {
		return s.clock.Now()
	}
	return time.Now().Add(s.offset)
}

// Schema returns the schema that holds the store's tables (unquoted).
func (s *Store) Schema() string { return s.cfg.Schema }

// Close closes the connection pool. Calls after Close fail with store.ErrClosed.
func (s *Store) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		s.wakes.close() // sends the wake-ups it holds, before the pool goes
		s.pool.Close()
	}
	return nil
}

// sql returns the statement with the schema filled in for {schema}.
func (s *Store) sql(template string) string {
	if q, ok := s.queries.Load(template); ok {
		return q.(string)
	}
	q := strings.ReplaceAll(template, "{schema}", s.schema)
	s.queries.Store(template, q)
	return q
}

// nowArg is the value of the $1 parameter every time-dependent statement starts with: the
// configured clock's time, or NULL for the database's now() (coalesce($1::timestamptz, now())).
func (s *Store) nowArg() any {
	if s.clock == nil {
		return nil
	}
	return s.clock.Now()
}

// wrap says what was being done, and that the store was closed, or the database unavailable
// (store.ErrUnavailable), when it was. A value the database refused (a NUL byte in text…)
// matches store.ErrInvalid.
func (s *Store) wrap(err error, format string, args ...any) error {
	err = invalidInput(err)
	if s.closed.Load() && !errors.Is(err, store.ErrClosed) {
		err = fmt.Errorf("%w: %v", store.ErrClosed, err)
	}
	return fmt.Errorf(format+": %w", append(args, unavailable(err))...)
}

// micros converts a duration to whole microseconds, PostgreSQL's resolution.
func micros(d time.Duration) int64 { return d.Microseconds() }

func limitOr(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// pingTimeout bounds Ping when its context has no earlier deadline.
const pingTimeout = 2 * time.Second

// Ping checks that the database answers: one round trip on a pooled connection (a new one if
// none is idle), within 2 s. Its error wraps store.ErrUnavailable when the database cannot be
// reached.
func (s *Store) Ping(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := s.pool.Ping(pingCtx); err != nil {
		if ctx.Err() == nil && pingCtx.Err() != nil {
			// Our own bound, not the caller's: the database did not answer in time.
			err = fmt.Errorf("%w: no answer within %s: %w", store.ErrUnavailable, pingTimeout, err)
		}
		return s.wrap(err, "ping")
	}
	return nil
}

// PollOnly reports whether the store was opened with Config.PollOnly; the engine then polls
// at the shorter interval of a store that does not push.
func (s *Store) PollOnly() bool { return s.cfg.PollOnly }
