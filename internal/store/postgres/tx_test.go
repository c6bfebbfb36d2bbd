package postgres_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/internal/store"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/stretchr/testify/require"
)

func newID() string { return uuid.Must(uuid.NewV7()).String() }

// Contract 17 with pgx: a job enqueued in the application's transaction exists if and only if
// it commits. The transaction's search_path doesn't matter: every statement names the schema.
func TestTxPgx(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	conn := connect(t)
	for _, commit := range []bool{true, false} {
		tx, err := conn.Begin(t.Context())
		require.NoError(t, err)
		_, err = tx.Exec(t.Context(), `SET LOCAL search_path TO pg_catalog`)
		require.NoError(t, err)
		ps := insertParams("tx", 2)
		res, err := s.Tx(tx).JobInsertMany(t.Context(), ps)
		require.NoError(t, err)
		require.Len(t, res, 2)
		_, err = s.JobGet(t.Context(), ps[0].ID)
		require.ErrorIs(t, err, store.ErrNotFound, "invisible before the commit")
		if commit {
			require.NoError(t, tx.Commit(t.Context()))
		} else {
			require.NoError(t, tx.Rollback(t.Context()))
		}
		requireExists(t, s, ps[0].ID, commit)
		requireExists(t, s, ps[1].ID, commit)
	}
}

// The same with database/sql and the pgx driver.
func TestTxDatabaseSQL(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	db, err := sql.Open("pgx", databaseURL())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	for _, commit := range []bool{true, false} {
		tx, err := db.BeginTx(t.Context(), nil)
		require.NoError(t, err)
		ps := insertParams("sqltx", 2)
		ps[0].Headers = map[string]string{"traceparent": "00-abc-def-01"}
		ps[1].IdempotencyKey, ps[1].IdempotencyTTL = "sql-key-"+newID(), time.Hour
		res, err := s.SQLTx(tx).JobInsertMany(t.Context(), ps)
		require.NoError(t, err)
		require.Equal(t, ps[0].Headers, res[0].Job.Headers)
		if commit {
			require.NoError(t, tx.Commit())
		} else {
			require.NoError(t, tx.Rollback())
		}
		requireExists(t, s, ps[0].ID, commit)
		requireExists(t, s, ps[1].ID, commit)
		if commit {
			got, err := s.JobGet(t.Context(), ps[0].ID)
			require.NoError(t, err)
			require.Equal(t, res[0].Job, got, "the row read in the transaction is the stored one")
		}
	}
}

// An idempotency conflict inside the application's transaction is undone by its savepoint:
// the transaction goes on and commits what else it did.
func TestTxDuplicateKeepsTransactionUsable(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	for _, kind := range []string{"pgx", "database/sql"} {
		key := "dup-" + newID()
		first := insertParams("dup", 1)
		first[0].IdempotencyKey, first[0].IdempotencyTTL = key, time.Hour
		_, err := s.JobInsertMany(t.Context(), first)
		require.NoError(t, err)

		conflict := insertParams("dup", 1)
		conflict[0].IdempotencyKey, conflict[0].IdempotencyTTL = key, time.Hour
		conflict[0].Args = []byte(`{"other":true}`)
		after := insertParams("dup", 1)
		var inserter store.TxInserter
		var commit func() error
		if kind == "pgx" {
			tx, err := connect(t).Begin(t.Context())
			require.NoError(t, err)
			inserter, commit = s.Tx(tx), func() error { return tx.Commit(t.Context()) }
		} else {
			db, err := sql.Open("pgx", databaseURL())
			require.NoError(t, err)
			t.Cleanup(func() { db.Close() })
			tx, err := db.BeginTx(t.Context(), nil)
			require.NoError(t, err)
			inserter, commit = s.SQLTx(tx), tx.Commit
		}
		_, err = inserter.JobInsertMany(t.Context(), conflict)
		require.ErrorIs(t, err, store.ErrDuplicate, kind)
		_, err = inserter.JobInsertMany(t.Context(), after)
		require.NoError(t, err, kind)
		require.NoError(t, commit(), kind)
		requireExists(t, s, after[0].ID, true)
		requireExists(t, s, conflict[0].ID, false)
	}
}

func requireExists(t *testing.T, s store.Store, id string, want bool) {
	t.Helper()
	_, err := s.JobGet(t.Context(), id)
	if want {
		require.NoError(t, err, "job %s should exist", id)
	} else {
		require.ErrorIs(t, err, store.ErrNotFound, "job %s should not exist", id)
	}
}
