package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/migrate"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Processes of the previous version go on using the tables while a new binary migrates them
// (a rolling upgrade, docs/deploy.md), so a migration must not deadlock with their
// transactions. Two rules see to it:
//
//   - Before the first pending migration, the transaction locks every table of the schema in
//     ACCESS EXCLUSIVE mode, jobs first: the strongest lock it will need, taken before any
//     other. A migration that first took a weaker lock on a table (CREATE INDEX, SHARE) and
//     then waited for a stronger one (ALTER TABLE) behind a transaction that had read the table
//     would block that transaction's next write to it (an enqueue reads, then inserts), a
//     deadlock that PostgreSQL resolves at once by failing the enqueue.
//   - Each wait for a lock is bounded by migrateLockTimeout, well under PostgreSQL's
//     deadlock_timeout (1 s by default): a migration that holds one table and waits for
//     another that a transaction holds, which then asks for the first, gives way before that
//     transaction is failed as a deadlock. The migration is rolled back and tried again after
//     a backoff, for up to migrateLockPatience.
const (
	migrateLockTimeout  = 200 * time.Millisecond
	migrateLockPatience = time.Minute
)

// migrateRetry spaces the migration's tries.
var migrateRetry = hoppertype.RetryPolicy{Base: 50 * time.Millisecond, Multiplier: 2, Cap: 2 * time.Second, Jitter: 0.2}

// Migrate creates the schema when missing and applies the embedded migrations not yet recorded
// in <schema>.schema_migrations, all in one transaction. A transaction-scoped advisory lock
// keyed by the schema name serializes concurrent callers: the second waits, then finds
// nothing left to do. A migration that cannot take a table lock within migrateLockTimeout
// (another transaction holds it) is rolled back and tried again after a backoff, for up to
// migrateLockPatience.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return err
	}
	// The wall clock even when Config.Clock is fake: the waits space real lock attempts.
	clk := clock.Real{}
	start := clk.Now()
	for try := 1; ; try++ {
		err := s.migrate(ctx, ms)
		if err == nil || !lockConflict(err) {
			return err
		}
		if clk.Now().Sub(start) >= migrateLockPatience {
			return fmt.Errorf("migrate schema %s: its tables stayed locked by other transactions for %s "+
				"(a long transaction may hold them; see pg_stat_activity): %w", s.schema, migrateLockPatience, err)
		}
		if !clock.Sleep(ctx, clk, backoff.Delay(migrateRetry, try, nil)) {
			return fmt.Errorf("migrate schema %s: %w", s.schema, ctx.Err())
		}
	}
}

// lockConflict reports whether err is a migration's lock wait running out (lock_not_available)
// or PostgreSQL choosing it to end a deadlock (deadlock_detected): worth another try.
func lockConflict(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "40P01")
}

// migrate is one try of Migrate.
func (s *Store) migrate(ctx context.Context, ms []migrate.Migration) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate schema %s: %w", s.schema, err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck // no-op after Commit
	if err := s.prepareSchema(ctx, tx); err != nil {
		return fmt.Errorf("migrate schema %s: %w", s.schema, err)
	}
	applied, err := s.appliedVersions(ctx, tx)
	if err != nil {
		return fmt.Errorf("migrate schema %s: %w", s.schema, err)
	}
	for v := range applied {
		if v > len(ms) {
			return fmt.Errorf("schema %s has schema version %d, newer than this binary's %d: use a newer hopper", s.schema, v, len(ms))
		}
	}
	if len(applied) < len(ms) {
		if err := s.lockTables(ctx, tx); err != nil {
			return fmt.Errorf("migrate schema %s: %w", s.schema, err)
		}
	}
	for _, m := range ms {
		if applied[m.Version] {
			continue
		}
		if _, err := tx.Exec(ctx, strings.ReplaceAll(m.SQL, "{schema}", s.schema)); err != nil {
			return fmt.Errorf("migration %s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx, s.sql(`INSERT INTO {schema}.schema_migrations (version, name, applied_at)
			VALUES ($2, $3, coalesce($1::timestamptz, now()))`), s.nowArg(), m.Version, m.Name); err != nil {
			return fmt.Errorf("record migration %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate schema %s: commit: %w", s.schema, err)
	}
	return nil
}

// lockTables bounds the transaction's lock waits by migrateLockTimeout and locks every table of
// the schema in ACCESS EXCLUSIVE mode, jobs first. The timeout is set after the advisory lock,
// which another node's migration may hold for longer.
func (s *Store) lockTables(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, migrateLockTimeout.Milliseconds())); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1
		ORDER BY tablename <> 'jobs', tablename`, s.cfg.Schema)
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("list tables: %w", err)
	}
	tables := make([]string, len(names))
	for i, n := range names {
		tables[i] = s.schema + "." + pgx.Identifier{n}.Sanitize()
	}
	if len(tables) == 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+strings.Join(tables, ", ")+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("lock tables: %w", err)
	}
	return nil
}

// prepareSchema takes the migration lock and creates the schema and the migrations table.
// CREATE SCHEMA runs only when the schema is missing, so a role without the CREATE privilege
// on the database can use a schema an administrator made for it.
func (s *Store) prepareSchema(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
		"hopper-migrate:"+s.cfg.Schema); err != nil {
		return fmt.Errorf("take migration lock: %w", err)
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`,
		s.cfg.Schema).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA `+s.schema); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	_, err := tx.Exec(ctx, s.sql(`CREATE TABLE IF NOT EXISTS {schema}.schema_migrations (
		version    integer PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL)`))
	return err
}

func (s *Store) appliedVersions(ctx context.Context, tx pgx.Tx) (map[int]bool, error) {
	rows, err := tx.Query(ctx, s.sql(`SELECT version FROM {schema}.schema_migrations`))
	if err != nil {
		return nil, err
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, err
	}
	out := make(map[int]bool, len(versions))
	for _, v := range versions {
		out[int(v)] = true
	}
	return out, nil
}

// Name is the kind of database the store keeps jobs in: "postgres".
func (s *Store) Name() string { return "postgres" }

// SchemaVersion returns the highest applied migration version (0 for none).
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.pool.QueryRow(ctx, s.sql(`SELECT coalesce(max(version), 0) FROM {schema}.schema_migrations`)).Scan(&v)
	if err != nil {
		return 0, s.wrap(err, "read schema version")
	}
	return v, nil
}

// LatestVersion is the version of the newest migration embedded in this binary. The stores
// number their migrations separately: a change one of them needs alone takes a version there.
func LatestVersion() int {
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return 0
	}
	return len(ms)
}
