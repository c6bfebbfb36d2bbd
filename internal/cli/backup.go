package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/hopperjobs/hopper/internal/bench"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/spf13/cobra"
)

func newBackupCmd() *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "backup --to FILE",
		Short: "Copy a SQLite database to a new file while it is in use (PostgreSQL: pg_dump)",
		Long: `backup writes a consistent copy of the SQLite database named by --database to the new
file --to, while servers and workers go on using the database: SQLite's VACUUM INTO, as one
read transaction sees the file, so it holds every job committed before the backup began and
none of a transaction half done. The copy is written under a temporary name, synced and
renamed, so FILE holds a whole copy or does not exist; an existing FILE is refused. Nothing is
migrated: the copy has the database's schema version. Run it on the machine that holds the
file; restore by stopping the processes that use the database and putting the copy in its
place (remove the old file's -wal and -shm files with it).

A PostgreSQL database is backed up with PostgreSQL's tools (pg_dump, or a base backup with WAL
archiving for point-in-time recovery): see docs/deploy.md#backups.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBackup(cmd, to) },
	}
	cmd.Flags().StringVar(&to, "to", "", "the new file to write the copy to (required; must not exist)")
	addJSONFlag(cmd)
	return cmd
}

// backupJSON is what `hopper backup --json` prints.
type backupJSON struct {
	Database      string  `json:"database"`
	To            string  `json:"to"`
	Bytes         int64   `json:"bytes"`
	SchemaVersion int     `json:"schema_version"`
	Seconds       float64 `json:"seconds"`
}

func runBackup(cmd *cobra.Command, to string) error {
	if serverURL(cmd) != "" {
		return usageErrorf("backup copies a SQLite file: run it with --database on the machine that holds the file, not --server")
	}
	path, err := databasePath(cmd)
	if err != nil {
		return err
	}
	if bench.IsPostgres(path) {
		return usageErrorf("backup copies a SQLite file; back up PostgreSQL with pg_dump or a base backup " +
			"with WAL archiving (docs/deploy.md#backups)")
	}
	if to == "" {
		return usageErrorf("--to is required: the new file to write the copy to")
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return usageErrorf("database %s does not exist", path)
	}
	start := time.Now()
	c, err := sqlite.Backup(cmd.Context(), path, to, 0)
	if errors.Is(err, fs.ErrExist) {
		return usageErrorf("--to %s exists: backup never overwrites a file, give a new name", to)
	}
	if err != nil {
		return err
	}
	took := time.Since(start)
	if wantJSON(cmd) {
		return printJSON(cmd.OutOrStdout(), backupJSON{Database: path, To: to, Bytes: c.Bytes,
			SchemaVersion: c.SchemaVersion, Seconds: took.Seconds()})
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s: copied to %s (%.1f MiB, schema version %d) in %s\n",
		path, to, float64(c.Bytes)/(1<<20), c.SchemaVersion, took.Round(time.Millisecond))
	return err
}
