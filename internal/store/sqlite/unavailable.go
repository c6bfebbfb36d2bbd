package sqlite

import (
	"errors"
	"fmt"

	"github.com/hopperjobs/hopper/internal/store"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// unavailable wraps store.ErrUnavailable around err when it means the database cannot take
// reads or writes right now: the disk is full (SQLITE_FULL), the file is locked past the busy
// timeout (SQLITE_BUSY, SQLITE_LOCKED), cannot be read or written (SQLITE_IOERR), opened
// (SQLITE_CANTOPEN) or written at all (SQLITE_READONLY). Other errors are returned as they
// are.
func unavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || !isUnavailable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

func isUnavailable(err error) bool {
	se, ok := errors.AsType[*sqlite.Error](err)
	if !ok {
		return false
	}
	switch se.Code() & 0xff { // the primary code of an extended one (SQLITE_IOERR_WRITE…)
	case sqlite3.SQLITE_FULL, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR,
		sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
		return true
	}
	return false
}

// wrap says what was being done, and that the database is unavailable when it is.
func wrap(err error, format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, unavailable(err))...)
}
