package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"

	_ "modernc.org/sqlite" // the "sqlite" driver, as the store uses it
)

// sqliteFiller fills a SQLite store's file on a connection of its own, beside the store's
// (which waits: the store is idle while the fill runs).
type sqliteFiller struct {
	db    *sql.DB
	path  string
	stmts []fillStmt
}

var sqliteRetained = retainedSQL{
	table:  func(name string) string { return name },
	param:  func(n int) string { return fmt.Sprintf("?%d", n) },
	series: `(WITH RECURSIVE n(i) AS (SELECT ?1 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?2) SELECT i FROM n)`,
	time:   func(us string) string { return "(" + us + ")" },
	id: func(c, i string) string {
		ms := `((` + c + `) / 1000)`
		return `printf('%08x-%04x-7000-8000-%012x', ` + ms + ` >> 16, ` + ms + ` & 65535, ` + i + `)`
	},
	blob: func(text string) string { return `CAST(` + text + ` AS BLOB)` },
}

// sqliteStatsSQL counts a chunk in the minute stats. ("WHERE true": SQLite's parser needs a
// WHERE before an upsert's ON CONFLICT in an INSERT … SELECT.)
var sqliteStatsSQL = `INSERT INTO job_stats AS s (minute, queue, kind, enqueued, completed, failed, retried, w0)
	SELECT c / 60000000 * 60000000, queue, kind, ` + statsColumns + `
	FROM ` + sqliteRetained.jobs() + ` WHERE true GROUP BY 1, 2, 3
	ON CONFLICT (minute, queue, kind) ` + statsUpsert

func newSQLiteFiller(t *target) (filler, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "synchronous(NORMAL)") // the fill's own commits: a crash fails the run anyway
	q.Add("_pragma", "cache_size(-131072)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+t.path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return &sqliteFiller{db: db, path: t.path, stmts: sqliteRetained.statements(sqliteStatsSQL)}, nil
}

// fill writes the chunk without the insert trigger, which would record each job's creation in
// its final state (the fill writes the history itself): SQLite cannot disable a trigger, so the
// transaction drops it and creates it again from its own text. If the fill fails, the
// transaction rolls back with the trigger in place.
func (f *sqliteFiller) fill(ctx context.Context, p fillPlan, lo, hi int) error {
	tx, err := f.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var trigger string
	if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'jobs_event_insert'`).Scan(&trigger); err != nil {
		return fmt.Errorf("read the insert trigger: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DROP TRIGGER jobs_event_insert`); err != nil {
		return err
	}
	args := p.args(lo, hi)
	for _, st := range f.stmts {
		if _, err := tx.ExecContext(ctx, st.query, args[:st.nargs]...); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, trigger); err != nil {
		return fmt.Errorf("restore the insert trigger: %w", err)
	}
	return tx.Commit()
}

// settle checkpoints the WAL into the file and truncates it: the store keeps a small WAL as
// it commits, not the fill's.
func (f *sqliteFiller) settle(ctx context.Context) error {
	_, err := f.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// size is the size of the database file and its WAL.
func (f *sqliteFiller) size(context.Context) (int64, error) {
	var n int64
	for _, p := range []string{f.path, f.path + "-wal"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		n += st.Size()
	}
	return n, nil
}

func (f *sqliteFiller) close() { f.db.Close() }
