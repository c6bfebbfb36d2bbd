package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// postgresFiller fills a PostgreSQL store's schema on a connection of its own.
type postgresFiller struct {
	conn   *pgx.Conn
	schema string // unquoted
	stmts  []fillStmt
}

var pgRetained = retainedSQL{
	param:  func(n int) string { return fmt.Sprintf("$%d::bigint", n) },
	series: `(SELECT generate_series($1::bigint, $2::bigint - 1) AS i)`,
	time:   func(us string) string { return `(timestamptz 'epoch' + (` + us + `) * interval '1 microsecond')` },
	id: func(c, i string) string {
		ms := `((` + c + `) / 1000)`
		return `lpad(to_hex(` + ms + ` >> 16), 8, '0') || '-' || lpad(to_hex(` + ms + ` & 65535), 4, '0') ||
			'-7000-8000-' || lpad(to_hex(` + i + `), 12, '0')`
	},
	blob: func(text string) string { return `convert_to(` + text + `, 'UTF8')` },
}

// pgStatsSQL counts a chunk in the minute stats, in shard 0 (the store's own rows are in
// shards named by backend pids).
var pgStatsSQL = `INSERT INTO {schema}.job_stats AS s (minute, queue, kind, shard, enqueued, completed, failed,
		retried, w0)
	SELECT ` + pgRetained.time(`c / 60000000 * 60000000`) + `, queue, kind, 0, ` + statsColumns + `
	FROM ` + pgRetained.jobs() + ` GROUP BY 1, 2, 3
	ON CONFLICT (minute, queue, kind, shard) ` + statsUpsert

func newPostgresFiller(ctx context.Context, t *target) (filler, error) {
	cfg, err := pgx.ParseConfig(t.url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["jit"] = "off"
	cfg.RuntimeParams["application_name"] = "hopper-bench-fill"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	quoted := pgx.Identifier{t.schema}.Sanitize()
	d := pgRetained
	d.table = func(name string) string { return quoted + "." + name }
	f := &postgresFiller{conn: conn, schema: t.schema}
	for _, st := range d.statements(pgStatsSQL) {
		f.stmts = append(f.stmts, fillStmt{strings.ReplaceAll(st.query, "{schema}", quoted), st.nargs})
	}
	return f, nil
}

// fill writes the chunk with the insert trigger off: it would record each job's creation in
// its final state, and the fill writes the history itself. The trigger is off inside the
// transaction only: if the fill fails, it was never off.
func (f *postgresFiller) fill(ctx context.Context, p fillPlan, lo, hi int) error {
	jobs := pgx.Identifier{f.schema, "jobs"}.Sanitize()
	return pgx.BeginFunc(ctx, f.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `ALTER TABLE `+jobs+` DISABLE TRIGGER jobs_event_insert`); err != nil {
			return err
		}
		args := p.args(lo, hi)
		for _, st := range f.stmts {
			if _, err := tx.Exec(ctx, st.query, args[:st.nargs]...); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `ALTER TABLE `+jobs+` ENABLE TRIGGER jobs_event_insert`)
		return err
	})
}

// settle vacuums and analyzes the filled tables, then writes the fill's pages out with a
// CHECKPOINT, so that the benchmark does not share the disk with the checkpoint of gigabytes
// of fill (a server that has run for a day has no such backlog). CHECKPOINT needs the
// pg_checkpoint role or a superuser: without them the fill goes on, its pages written out as
// the server's own checkpoints come.
func (f *postgresFiller) settle(ctx context.Context) error {
	var tables []string
	for _, t := range []string{"jobs", "job_events", "job_attempts", "job_stats"} {
		tables = append(tables, pgx.Identifier{f.schema, t}.Sanitize())
	}
	if _, err := f.conn.Exec(ctx, `VACUUM (ANALYZE) `+strings.Join(tables, ", ")); err != nil {
		return err
	}
	var pgErr *pgconn.PgError
	if _, err := f.conn.Exec(ctx, `CHECKPOINT`); err != nil && !(errors.As(err, &pgErr) && pgErr.Code == "42501") {
		return err
	}
	return nil
}

// size is the size of the schema's tables with their indexes and TOAST.
func (f *postgresFiller) size(ctx context.Context) (int64, error) {
	var n int64
	err := f.conn.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
		FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = $1 AND c.relkind = 'r'`, f.schema).Scan(&n)
	return n, err
}

func (f *postgresFiller) close() { f.conn.Close(context.Background()) }
