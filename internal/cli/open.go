package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/bench"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/hopperjobs/hopper/pgstore"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
)

const (
	flagDatabase = "database"
	flagSchema   = "schema"
	flagJSON     = "json"
)

// store is what the CLI needs of either store.
type store interface {
	hopper.Store
	SchemaVersion(ctx context.Context) (int, error)
}

// databasePath returns the --database value.
func databasePath(cmd *cobra.Command) (string, error) {
	path, err := cmd.Flags().GetString(flagDatabase)
	if err != nil {
		return "", err
	}
	if path == "" {
		return "", usageErrorf("--database is empty")
	}
	return path, nil
}

// describe names the database for messages without printing a URL's password.
func describe(cmd *cobra.Command, path string) string {
	if !bench.IsPostgres(path) {
		return path
	}
	schema, _ := cmd.Flags().GetString(flagSchema)
	return "postgres schema " + schema
}

// pgPool says how a command uses PostgreSQL: a short command needs two connections and no
// LISTEN; a server (hopper serve) needs a pool and LISTEN, so a job committed by any node
// wakes its workers and streams at once.
type pgPool struct {
	maxConns int
	listen   bool
}

var commandPool = pgPool{maxConns: 2}

// openStore opens the database named by --database (a SQLite file or a postgres:// URL),
// applying pending migrations. With mustExist, a missing SQLite file is an error rather than a
// new empty database: reading commands should not create one because of a typo.
func openStore(cmd *cobra.Command, mustExist bool) (store, error) {
	return openStoreWith(cmd, mustExist, commandPool)
}

func openStoreWith(cmd *cobra.Command, mustExist bool, pool pgPool) (store, error) {
	path, err := databasePath(cmd)
	if err != nil {
		return nil, err
	}
	if bench.IsPostgres(path) {
		schema, _ := cmd.Flags().GetString(flagSchema)
		if mustExist {
			if err := requireSchema(cmd.Context(), path, schema); err != nil {
				return nil, err
			}
		}
		st, err := pgstore.Open(cmd.Context(), pgstore.Config{URL: path, Schema: schema, MaxConns: pool.maxConns,
			PollOnly: !pool.listen})
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", describe(cmd, path), err)
		}
		return st, nil
	}
	if mustExist {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, usageErrorf("database %s does not exist (create it with 'hopper migrate')", path)
		}
	}
	st, err := sqlitestore.Open(cmd.Context(), sqlitestore.Config{Path: path})
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return st, nil
}

// withStore runs fn with the database named by --database open, and closes it.
func withStore(cmd *cobra.Command, mustExist bool, fn func(store) error) error {
	return withStoreAs(cmd, mustExist, commandPool, fn)
}

// withStoreAs is withStore with PostgreSQL's pool and LISTEN set by pool.
func withStoreAs(cmd *cobra.Command, mustExist bool, pool pgPool, fn func(store) error) (err error) {
	st, err := openStoreWith(cmd, mustExist, pool)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close database: %w", cerr)
		}
	}()
	return fn(st)
}

// withClient runs fn with an enqueue-only client on the database. The client runs no
// maintenance: the CLI is short-lived and must not promote or rescue jobs behind the workers.
func withClient(cmd *cobra.Command, mustExist bool, fn func(*hopper.Client) error) error {
	return withStore(cmd, mustExist, func(st store) error {
		client, err := hopper.NewClient(hopper.Config{Store: st, DisableMaintenance: true})
		if err != nil {
			return err
		}
		return fn(client)
	})
}

func addJSONFlag(cmd *cobra.Command) {
	cmd.Flags().Bool(flagJSON, false, "print JSON instead of text")
}

func wantJSON(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool(flagJSON)
	return v
}

// requireSchema refuses a PostgreSQL schema that does not exist yet: reading commands should
// not create one because of a typo.
func requireSchema(ctx context.Context, url, schema string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", postgres.Unavailable(err))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, schema).Scan(&exists); err != nil {
		return fmt.Errorf("look up schema %q: %w", schema, postgres.Unavailable(err))
	}
	if !exists {
		return usageErrorf("postgres schema %q does not exist (create it with 'hopper migrate')", schema)
	}
	return nil
}
