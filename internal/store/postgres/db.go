package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// db is where an insert runs: the store's pool, an application's pgx.Tx or its *sql.Tx.
type db interface {
	query(ctx context.Context, sql string, args ...any) (rows, error)
	// begin starts an atomic unit: a transaction on the pool, a savepoint inside an
	// application's transaction (so an error undoes only the store's changes).
	begin(ctx context.Context) (dbTx, error)
}

type dbTx interface {
	db
	commit(ctx context.Context) error
	rollback(ctx context.Context) error
}

// pgxQuerier is what pgxpool.Pool, pgx.Conn and pgx.Tx have in common.
type pgxQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Begin(ctx context.Context) (pgx.Tx, error)
}

type pgxDB struct{ q pgxQuerier }

func (d pgxDB) query(ctx context.Context, sql string, args ...any) (rows, error) {
	return d.q.Query(ctx, sql, args...)
}

// begin starts a transaction, or a savepoint when d is already a pgx.Tx.
func (d pgxDB) begin(ctx context.Context) (dbTx, error) {
	tx, err := d.q.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return pgxTx{pgxDB{tx}, tx}, nil
}

type pgxTx struct {
	pgxDB
	tx pgx.Tx
}

func (t pgxTx) commit(ctx context.Context) error   { return t.tx.Commit(ctx) }
func (t pgxTx) rollback(ctx context.Context) error { return t.tx.Rollback(ctx) }

// sqlDB runs statements in a database/sql transaction. Its driver must accept pgx's argument
// types (slices for arrays): github.com/jackc/pgx/v5/stdlib does.
type sqlDB struct{ tx *sql.Tx }

func (d sqlDB) query(ctx context.Context, query string, args ...any) (rows, error) {
	rs, err := d.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rs}, nil
}

const savepoint = "hopper_insert"

func (d sqlDB) begin(ctx context.Context) (dbTx, error) {
	if _, err := d.tx.ExecContext(ctx, "SAVEPOINT "+savepoint); err != nil {
		return nil, err
	}
	return &sqlSavepoint{sqlDB: d}, nil
}

type sqlSavepoint struct {
	sqlDB
	done bool
}

func (s *sqlSavepoint) commit(ctx context.Context) error {
	s.done = true
	_, err := s.tx.ExecContext(ctx, "RELEASE SAVEPOINT "+savepoint)
	return err
}

// rollback undoes the savepoint's changes; after commit it does nothing, like pgx.Tx.Rollback.
func (s *sqlSavepoint) rollback(ctx context.Context) error {
	if s.done {
		return nil
	}
	s.done = true
	if _, err := s.tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT "+savepoint); err != nil {
		return fmt.Errorf("rollback to savepoint: %w", err)
	}
	_, err := s.tx.ExecContext(ctx, "RELEASE SAVEPOINT "+savepoint)
	return err
}

// sqlRows gives *sql.Rows the Close of pgx.Rows.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }
