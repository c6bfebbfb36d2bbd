package bench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the read connection that counts the rows
)

// soakDB is the soak's fresh store and what measures it from outside the store.
type soakDB struct {
	store  hopper.Store
	name   string
	schema string // PostgreSQL: the fresh schema
	probe  dbProbe
	close  func()
}

// dbProbe measures a store's database from its own connection.
type dbProbe interface {
	// size is the bytes the database takes on disk.
	size(ctx context.Context) (int64, error)
	// written is a counter of bytes written, whose difference over a row is the row's WAL
	// rate (see counter).
	written(ctx context.Context) (int64, error)
	// counter says what written counts.
	counter() string
	// rows is the number of rows in the jobs table, expired or not.
	rows(ctx context.Context) (int64, error)
	// autovacuum is the server's autovacuum setting, "" where there is none.
	autovacuum(ctx context.Context) string
	close()
}

// openSoakDB opens a fresh store of cfg's kind: a SQLite file in a temporary directory, or a
// fresh schema on the PostgreSQL server, dropped by close.
func openSoakDB(ctx context.Context, cfg SoakConfig) (*soakDB, error) {
	if IsPostgres(cfg.Database) {
		return openSoakPostgres(ctx, cfg)
	}
	dir, err := os.MkdirTemp("", "hopper-soak-")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "soak.db")
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: path, Synchronous: cfg.Synchronous})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// query_only: this connection only counts; the store's writer is the only writer.
	reader, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		st.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	reader.SetMaxOpenConns(1)
	p := &sqliteProbe{path: path, db: reader}
	return &soakDB{store: st, name: "sqlite", probe: p, close: func() {
		p.close()
		st.Close()
		os.RemoveAll(dir)
	}}, nil
}

func openSoakPostgres(ctx context.Context, cfg SoakConfig) (*soakDB, error) {
	t, err := openFreshSchema(ctx, cfg.Database, "hopper_soak_", cfg.Conns)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, cfg.Database)
	if err != nil {
		t.cleanup()
		return nil, err
	}
	p := &postgresProbe{conn: conn, schema: t.schema}
	return &soakDB{store: t.store, name: "postgres", schema: t.schema, probe: p, close: func() {
		p.close()
		t.cleanup()
	}}, nil
}

// sqliteProbe measures a SQLite store: the file and its WAL on disk, the bytes this process
// writes, and the jobs rows through a read-only connection of its own.
type sqliteProbe struct {
	path string
	db   *sql.DB
}

func (p *sqliteProbe) size(context.Context) (int64, error) {
	var total int64
	for _, f := range []string{p.path, p.path + "-wal"} {
		fi, err := os.Stat(f)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
		if err == nil {
			total += fi.Size()
		}
	}
	return total, nil
}

// written is the bytes this process has handed to write calls (Linux's /proc/self/io
// wchar): for the SQLite store, the frames appended to the WAL and the checkpoints' copies
// of them into the database file. SQLite keeps no count of WAL bytes, and the WAL file's
// size says nothing of the rate: it is reused from its start after each checkpoint.
func (p *sqliteProbe) written(context.Context) (int64, error) { return procWritten() }

func (p *sqliteProbe) counter() string {
	return "bytes this process wrote (/proc/self/io wchar): WAL frames plus checkpoints into the database file"
}

func (p *sqliteProbe) rows(ctx context.Context) (int64, error) {
	var n int64
	err := p.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs`).Scan(&n)
	return n, err
}

func (p *sqliteProbe) autovacuum(context.Context) string { return "" }

func (p *sqliteProbe) close() { p.db.Close() }

// postgresProbe measures a PostgreSQL store's schema from a connection of its own.
type postgresProbe struct {
	conn   *pgx.Conn
	schema string
}

// size sums pg_total_relation_size (table, indexes, TOAST) over the schema's tables.
func (p *postgresProbe) size(ctx context.Context) (int64, error) {
	var n int64
	err := p.conn.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'm')`, p.schema).Scan(&n)
	return n, err
}

// written is the server's WAL position: the whole server's WAL, so whatever else runs on the
// server is counted too.
func (p *postgresProbe) written(ctx context.Context) (int64, error) {
	var n int64
	err := p.conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint`).Scan(&n)
	return n, err
}

func (p *postgresProbe) counter() string {
	return "the server's WAL position (pg_current_wal_lsn), all databases of the server"
}

func (p *postgresProbe) rows(ctx context.Context) (int64, error) {
	var n int64
	err := p.conn.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s.jobs`, pgx.Identifier{p.schema}.Sanitize())).Scan(&n)
	return n, err
}

func (p *postgresProbe) autovacuum(ctx context.Context) string {
	var s string
	if err := p.conn.QueryRow(ctx, `SELECT current_setting('autovacuum')`).Scan(&s); err != nil {
		return "unknown"
	}
	return s
}

func (p *postgresProbe) close() { p.conn.Close(context.Background()) }
