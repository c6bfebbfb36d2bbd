package postgres_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/stretchr/testify/require"
)

// A merge inside the application's transaction holds the key's lock until that transaction
// ends: a concurrent enqueue with the key waits for it, then sees what it committed, or, after
// a rollback, nothing of it. With pgx and with database/sql.
func TestTxMergeHoldsTheKeyUntilTheEnd(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	s := openStore(t, freshSchema(t), nil)
	item := func(args string) []*store.InsertParams {
		ps := insertParams("merge", 1)
		ps[0].Args, ps[0].MergeKey, ps[0].Merge = []byte(args), "m", hoppertype.MergeAppend
		return ps
	}
	first, err := s.JobInsertMany(t.Context(), item(`[1]`))
	require.NoError(t, err)
	id := first[0].Job.ID
	classid, objid := postgres.MergeLock(s, "noop", "m")
	locks := connect(t)
	waiting := func() bool { // runs in Eventually's goroutine: no require
		var n int
		err := locks.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
			AND NOT granted AND classid = $1 AND objid = $2 AND objsubid = 1`, classid, objid).Scan(&n)
		return err == nil && n > 0
	}
	db, err := sql.Open("pgx", databaseURL())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })

	want := `[1]`
	for _, c := range []struct {
		driver string
		commit bool
	}{{"pgx", false}, {"database/sql", false}, {"pgx", true}, {"database/sql", true}} {
		var inserter store.TxInserter
		var end func(commit bool) error
		if c.driver == "pgx" {
			tx, err := connect(t).Begin(t.Context())
			require.NoError(t, err)
			inserter = s.Tx(tx)
			end = func(commit bool) error {
				if commit {
					return tx.Commit(t.Context())
				}
				return tx.Rollback(t.Context())
			}
		} else {
			tx, err := db.BeginTx(t.Context(), nil)
			require.NoError(t, err)
			inserter = s.SQLTx(tx)
			end = func(commit bool) error {
				if commit {
					return tx.Commit()
				}
				return tx.Rollback()
			}
		}
		res, err := inserter.JobInsertMany(t.Context(), item(`["tx"]`))
		require.NoError(t, err, c.driver)
		require.True(t, res[0].Merged, c.driver)
		require.Equal(t, id, res[0].Job.ID, c.driver)

		done := make(chan error, 1)
		go func() {
			_, err := s.JobInsertMany(t.Context(), item(`["after"]`))
			done <- err
		}()
		require.Eventually(t, waiting, 10*time.Second, 5*time.Millisecond, "%s: the other enqueue waits for the key", c.driver)
		require.NoError(t, end(c.commit), c.driver)
		require.NoError(t, <-done, c.driver)
		if c.commit {
			want = want[:len(want)-1] + `,"tx","after"]`
		} else {
			want = want[:len(want)-1] + `,"after"]`
		}
		got, err := s.JobGet(t.Context(), id)
		require.NoError(t, err)
		require.JSONEq(t, want, string(got.Args), "%s, commit %t", c.driver, c.commit)
	}
}
