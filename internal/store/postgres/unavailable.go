package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5/pgconn"
)

// unavailableStates are the SQLSTATEs (besides class 08, connection exception) that mean the
// server cannot serve us right now, whatever the statement: it is shutting down or starting
// (57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now), out of connections
// (53300 too_many_connections) or disk (53100 disk_full), or a standby after a failover
// (25006 read_only_sql_transaction).
var unavailableStates = map[string]bool{
	"57P01": true, "57P02": true, "57P03": true, "53300": true, "53100": true, "25006": true,
}

// unavailable wraps store.ErrUnavailable around err when it means the database cannot be
// reached or cannot take writes right now; other errors are returned as they are.
func unavailable(err error) error {
	if err == nil || errors.Is(err, store.ErrUnavailable) || !isUnavailable(err) {
		return err
	}
	return fmt.Errorf("%w: %w", store.ErrUnavailable, err)
}

// Unavailable classifies err as the store does (see unavailable), for code that talks to the
// database outside the store, such as the CLI's check that a schema exists.
func Unavailable(err error) error { return unavailable(err) }

func isUnavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller gave up: not the database's doing
	}
	if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok {
		return strings.HasPrefix(pgErr.Code, "08") || unavailableStates[pgErr.Code]
	}
	if _, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		return true // it could not connect (refused, unreachable, timed out, rejected at start-up)
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true // the connection failed: reset, broken pipe, network timeout
	}
	// pgconn.SafeToRetry: failed before anything was sent, such as on a closed connection.
	return pgconn.SafeToRetry(err) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
