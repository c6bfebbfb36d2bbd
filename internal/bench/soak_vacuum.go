package bench

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// vacuumer vacuums the soak's PostgreSQL tables every interval, as autovacuum would, for a
// server whose autovacuum is off (CI servers often turn it off): without it every update and
// delete leaves a dead row behind for good, and the soak measures the bloat.
type vacuumer struct {
	url, schema string
	every       time.Duration

	mu     sync.Mutex
	spent  time.Duration // vacuuming since the last take
	errors int64
}

// run vacuums every v.every until ctx ends, from a connection of its own.
func (v *vacuumer) run(ctx context.Context) {
	conn, err := pgx.Connect(ctx, v.url)
	if err != nil {
		v.note(0, err)
		return
	}
	defer conn.Close(context.WithoutCancel(ctx))
	tick := time.NewTicker(v.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		start := time.Now()
		err := v.pass(ctx, conn)
		if ctx.Err() != nil {
			return
		}
		v.note(time.Since(start), err)
	}
}

// pass vacuums and analyzes every table of the schema.
func (v *vacuumer) pass(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1`, v.schema)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) "+pgx.Identifier{v.schema, t}.Sanitize()); err != nil {
			return err
		}
	}
	return nil
}

func (v *vacuumer) note(d time.Duration, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.spent += d
	if err != nil {
		v.errors++
	}
}

// take returns the time spent vacuuming and the failed passes since the last take.
func (v *vacuumer) take() (time.Duration, int64) {
	if v == nil {
		return 0, 0
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	d, n := v.spent, v.errors
	v.spent, v.errors = 0, 0
	return d, n
}
