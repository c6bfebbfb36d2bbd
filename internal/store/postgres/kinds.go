package postgres

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// Disabling a kind stores the flag, which every claim reads in its own statement. Enabling one
// clears it (deleting the row when the kind has no cap or rate limit left) and, when the kind was disabled,
// wakes the workers of every queue on every node: its jobs may be in any of them.
const (
	kindDisableSQL = `INSERT INTO {schema}.kinds (kind, disabled, updated_at) VALUES ($2, true, coalesce($1::timestamptz, now()))
	ON CONFLICT (kind) DO UPDATE SET disabled = true, updated_at = excluded.updated_at`
	kindEnableSQL = `WITH gone AS (
		DELETE FROM {schema}.kinds WHERE kind = $2 AND disabled AND max_running IS NULL AND rate_limit IS NULL RETURNING kind
	), kept AS (
		UPDATE {schema}.kinds SET disabled = false, updated_at = coalesce($1::timestamptz, now())
		WHERE kind = $2 AND disabled AND (max_running IS NOT NULL OR rate_limit IS NOT NULL) RETURNING kind
	)
	SELECT count(pg_notify($3, '` + payloadQueue + `')) FROM (SELECT kind FROM gone UNION ALL SELECT kind FROM kept) e`
)

// KindSetDisabled disables or enables a kind.
func (s *Store) KindSetDisabled(ctx context.Context, kind string, disabled bool) error {
	var err error
	if disabled {
		_, err = s.pool.Exec(ctx, s.sql(kindDisableSQL), s.nowArg(), kind)
	} else {
		_, err = s.pool.Exec(ctx, s.sql(kindEnableSQL), s.nowArg(), kind, s.channel)
	}
	if err != nil {
		return s.wrap(err, "set kind %q disabled=%v", kind, disabled)
	}
	return nil
}

// KindList returns the stored kind settings, by name.
func (s *Store) KindList(ctx context.Context) ([]*store.KindSettings, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT kind, disabled, coalesce(max_running, 0), coalesce(rate_limit, 0),
		coalesce(rate_period_us, 0) FROM {schema}.kinds ORDER BY kind COLLATE "C"`))
	if err != nil {
		return nil, s.wrap(err, "list kinds")
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (*store.KindSettings, error) {
		k := &store.KindSettings{}
		var period int64
		err := r.Scan(&k.Name, &k.Disabled, &k.MaxRunning, &k.Rate.Limit, &period)
		k.Rate.Period = time.Duration(period) * time.Microsecond
		return k, err
	})
	if err != nil {
		return nil, s.wrap(err, "list kinds")
	}
	return out, nil
}
