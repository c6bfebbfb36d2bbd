package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/pgstore"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/jackc/pgx/v5"
)

// IsPostgres reports whether a --database value names a PostgreSQL server.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// target is the store a run measures, with what a scenario needs to reach its database
// directly: the SQLite file, or the PostgreSQL URL and schema.
type target struct {
	store   hopper.Store
	name    string // "sqlite" or "postgres"
	path    string // the SQLite file
	url     string // the PostgreSQL server
	schema  string // the PostgreSQL schema, unquoted
	cleanup func()
}

// openStore opens the store the run measures and returns a cleanup that closes it and removes
// what the run created (a temporary SQLite file, a PostgreSQL schema).
func openStore(ctx context.Context, cfg Config) (hopper.Store, string, func(), error) {
	t, err := openTarget(ctx, cfg)
	if err != nil {
		return nil, "", nil, err
	}
	return t.store, t.name, t.cleanup, nil
}

// FreshSQLite, when set, writes the fresh SQLite file of a run (one in a temporary directory,
// not --bench-db) at path before the store opens it. The package's and the CLI's tests set it to
// copy a migrated template (sqlitetest.Write): a run's store opened on an empty file runs every
// migration, seconds of CPU under the race detector. Nil leaves the file to the migrations.
var FreshSQLite func(path string) error

// openTarget is openStore's work.
func openTarget(ctx context.Context, cfg Config) (*target, error) {
	if IsPostgres(cfg.Database) {
		return openPostgres(ctx, cfg)
	}
	path, dir := cfg.Database, ""
	if path == "" {
		var err error
		if dir, err = os.MkdirTemp("", "hopper-bench-"); err != nil {
			return nil, err
		}
		path = filepath.Join(dir, "bench.db")
		if FreshSQLite != nil {
			if err := FreshSQLite(path); err != nil {
				os.RemoveAll(dir)
				return nil, err
			}
		}
	}
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: path, Synchronous: cfg.Synchronous})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &target{store: st, name: "sqlite", path: path, cleanup: func() {
		st.Close()
		if dir != "" {
			os.RemoveAll(dir)
		}
	}}, nil
}

func openPostgres(ctx context.Context, cfg Config) (*target, error) {
	return openFreshSchema(ctx, cfg.Database, "hopper_bench_", cfg.Conns)
}

// openFreshSchema opens a store on a fresh schema, prefix then random, of the server url,
// with a pool of conns; its cleanup drops the schema.
func openFreshSchema(ctx context.Context, url, prefix string, conns int) (*target, error) {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	schema := prefix + hex.EncodeToString(b)
	st, err := pgstore.Open(ctx, pgstore.Config{URL: url, Schema: schema, MaxConns: conns})
	if err != nil {
		return nil, errors.Join(err, dropSchema(url, schema))
	}
	return &target{store: st, name: "postgres", url: url, schema: schema, cleanup: func() {
		st.Close()
		_ = dropSchema(url, schema)
	}}, nil
}

// postgresDurability reads the server's commit durability setting, for the report.
func postgresDurability(ctx context.Context, url string) string {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return "unknown"
	}
	defer conn.Close(ctx)
	var sync, fsync string
	if err := conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit'), current_setting('fsync')`).Scan(&sync, &fsync); err != nil {
		return "unknown"
	}
	return "synchronous_commit=" + sync + " fsync=" + fsync
}

func dropSchema(url, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	return err
}
