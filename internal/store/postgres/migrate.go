package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/hopperjobs/hopper/internal/migrate"
	"github.com/jackc/pgx/v5"
)

// Migrate creates the schema when missing and applies the embedded migrations not yet recorded
// in <schema>.schema_migrations, all in one transaction. A transaction-scoped advisory lock
// keyed by the schema name serializes concurrent callers: the second waits, then finds
// nothing left to do.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return err
	}
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
