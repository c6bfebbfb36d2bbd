package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// Copy is a backup Backup wrote.
type Copy struct {
	Bytes         int64 // the file's size
	SchemaVersion int   // its schema version, the source's when it was copied
}

// Backup writes a consistent copy of the database file at path to the new file to while other
// connections and processes go on using the database (a running `hopper serve` included):
// SQLite's VACUUM INTO, on a read-only connection of its own, copies the database as one read
// transaction saw it. In WAL mode writers do not wait for it; the WAL is not checkpointed past
// that snapshot until the copy ends, so it may grow meanwhile. The copy is compacted (no free
// pages), in rollback-journal mode, and opens as any Hopper database: a Store opened on it
// sets WAL mode again.
//
// The copy is written beside to under a temporary name, synced to disk and renamed to to, so
// that to holds a whole copy or does not exist. An existing to is refused with an error
// wrapping fs.ErrExist. Nothing is migrated: the copy has the source's schema version.
// busyTimeout bounds waits for a lock another process holds (0: 5 s).
func Backup(ctx context.Context, path, to string, busyTimeout time.Duration) (Copy, error) {
	if err := backup(ctx, path, to, busyTimeout); err != nil {
		return Copy{}, err
	}
	return readCopy(ctx, to)
}

func backup(ctx context.Context, path, to string, busyTimeout time.Duration) error {
	if busyTimeout <= 0 {
		busyTimeout = 5 * time.Second
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("back up %s: %w", path, err)
	}
	if _, err := os.Lstat(to); err == nil {
		return fmt.Errorf("back up to %s: %w", to, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("back up to %s: %w", to, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()))
	q.Set("mode", "ro") // VACUUM INTO writes only to its output; query_only would refuse it
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return fmt.Errorf("back up %s: %w", path, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	// The temporary name must not exist: VACUUM INTO refuses an existing file.
	tmp, err := os.CreateTemp(filepath.Dir(to), "."+filepath.Base(to)+".tmp-*")
	if err != nil {
		return fmt.Errorf("back up to %s: %w", to, err)
	}
	tmpName := tmp.Name()
	if err := errors.Join(tmp.Close(), os.Remove(tmpName)); err != nil {
		return fmt.Errorf("back up to %s: %w", to, err)
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmpName) //nolint:errcheck // a partial copy, if VACUUM INTO began one
		}
	}()
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, tmpName); err != nil {
		return fmt.Errorf("back up %s: %w", path, unavailable(err))
	}
	// VACUUM INTO does not sync its output.
	if err := syncFile(tmpName); err != nil {
		return fmt.Errorf("back up to %s: %w", to, err)
	}
	if err := os.Rename(tmpName, to); err != nil {
		return fmt.Errorf("back up to %s: %w", to, err)
	}
	done = true
	// The new name: a directory is synced on Unix; Windows has no such call.
	if runtime.GOOS != "windows" {
		if err := syncFile(filepath.Dir(to)); err != nil {
			return fmt.Errorf("back up to %s: %w", to, err)
		}
	}
	return nil
}

// Backup writes a consistent copy of the store's database to the new file to, while the store
// goes on working: see the package function Backup.
func (s *Store) Backup(ctx context.Context, to string) (Copy, error) {
	return Backup(ctx, s.cfg.Path, to, s.cfg.BusyTimeout)
}

// readCopy reads the size and schema version of the copy at to, read-only.
func readCopy(ctx context.Context, to string) (Copy, error) {
	info, err := os.Stat(to)
	if err != nil {
		return Copy{}, fmt.Errorf("read the copy %s: %w", to, err)
	}
	db, err := sql.Open("sqlite", "file:"+to+"?mode=ro")
	if err != nil {
		return Copy{}, fmt.Errorf("read the copy %s: %w", to, err)
	}
	defer db.Close()
	c := Copy{Bytes: info.Size()}
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&c.SchemaVersion); err != nil {
		return Copy{}, fmt.Errorf("read the copy %s: %w", to, err)
	}
	return c, nil
}

// syncFile flushes the file or directory name to disk.
func syncFile(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
