package bench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// serverCost reads what a PostgreSQL server has done so far, so that two readings around a
// phase say what the phase cost: WAL bytes written and transaction ids assigned. A transaction
// gets an id when it first writes (a NOTIFY counts), so the ids are the write transactions,
// each of which waits for its commit record to be flushed. Both counters are the whole
// server's: another client's work counts too.
type serverCost struct {
	conn *pgx.Conn
}

type costReading struct {
	wal  int64 // pg_current_wal_lsn() in bytes
	xids int64 // the next transaction id to be assigned
}

func openServerCost(ctx context.Context, url string) (*serverCost, error) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("server cost: %w", err)
	}
	return &serverCost{conn: conn}, nil
}

// read takes a reading. pg_current_snapshot() assigns no transaction id of its own.
func (s *serverCost) read(ctx context.Context) (costReading, error) {
	var r costReading
	err := s.conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint,
		pg_snapshot_xmax(pg_current_snapshot())::text::bigint`).Scan(&r.wal, &r.xids)
	if err != nil {
		return r, fmt.Errorf("server cost: %w", err)
	}
	return r, nil
}

func (s *serverCost) close() { s.conn.Close(context.Background()) }

// perJob is the cost between two readings per job of n.
func (r costReading) perJob(after costReading, n int) (walBytes, writeXacts float64) {
	return float64(after.wal-r.wal) / float64(n), float64(after.xids-r.xids) / float64(n)
}
