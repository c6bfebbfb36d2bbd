package postgres

import (
	"context"
	"database/sql"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// Tx returns an inserter whose JobInsertMany runs inside tx, a transaction the application
// owns: the jobs exist if and only if tx commits, and their wake-up notifications are sent at
// that commit. tx must be on the store's database. A batch with idempotency keys runs in a
// savepoint, so its ErrDuplicate leaves tx usable; any other error from the database aborts tx
// as a failed statement does. The inserter is valid while tx is; it is as safe for concurrent
// use as tx (pgx.Tx is not).
func (s *Store) Tx(tx pgx.Tx) store.TxInserter {
	return &txInserter{s: s, db: pgxDB{tx}}
}

// SQLTx is Tx for database/sql. The *sql.Tx must come from the pgx driver
// (github.com/jackc/pgx/v5/stdlib, driver name "pgx"), which accepts the arrays the store
// binds; other drivers refuse them.
func (s *Store) SQLTx(tx *sql.Tx) store.TxInserter {
	return &txInserter{s: s, db: sqlDB{tx}}
}

type txInserter struct {
	s  *Store
	db db
}

// JobInsertMany inserts the jobs in the application's transaction.
func (t *txInserter) JobInsertMany(ctx context.Context, params []*store.InsertParams) ([]*store.InsertResult, error) {
	return t.s.insertMany(ctx, t.db, params, nil)
}
