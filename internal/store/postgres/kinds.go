package postgres

import (
	"context"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

// Disabling a kind stores the flag, which every claim reads in its own statement. Enabling one
// clears it and, when the kind was disabled, wakes the workers of every queue on every node:
// its jobs may be in any of them.
const (
	kindDisableSQL = `INSERT INTO {schema}.kinds (kind, disabled, updated_at) VALUES ($2, true, coalesce($1::timestamptz, now()))
	ON CONFLICT (kind) DO UPDATE SET disabled = true, updated_at = excluded.updated_at`
	kindEnableSQL = `WITH enabled AS (
		UPDATE {schema}.kinds SET disabled = false, updated_at = coalesce($1::timestamptz, now())
		WHERE kind = $2 AND disabled RETURNING kind
	)
	SELECT count(pg_notify($3, '` + payloadQueue + `')) FROM enabled`
)

// pruneKindSQL deletes the row of kind $1 once it holds no setting. A change that clears a
// setting runs it after, in the same transaction: the delete waits for the row lock of any
// other change under way, then sees that change, so two changes that clear the last two
// settings at once leave no row behind, and neither leaves a setting it did not clear.
const pruneKindSQL = `DELETE FROM {schema}.kinds WHERE kind = $1 AND NOT disabled AND max_running IS NULL AND rate_limit IS NULL AND compact_over IS NULL
	AND cap_per_key IS NULL AND rate_per_key_limit IS NULL`

// clearKindSetting runs update (which clears a setting of kind $2; $1 is the time) and then
// pruneKindSQL, in one transaction.
func (s *Store) clearKindSetting(ctx context.Context, update string, args ...any) error {
	b := &pgx.Batch{}
	b.Queue(s.sql(update), args...)
	b.Queue(s.sql(pruneKindSQL), args[1])
	return s.pool.SendBatch(ctx, b).Close()
}

// KindSetDisabled disables or enables a kind.
func (s *Store) KindSetDisabled(ctx context.Context, kind string, disabled bool) error {
	var err error
	if disabled {
		_, err = s.pool.Exec(ctx, s.sql(kindDisableSQL), s.nowArg(), kind)
	} else {
		err = s.clearKindSetting(ctx, kindEnableSQL, s.nowArg(), kind, s.channel)
	}
	if err != nil {
		return s.wrap(err, "set kind %q disabled=%v", kind, disabled)
	}
	return nil
}

// KindList returns the stored kind settings, by name.
func (s *Store) KindList(ctx context.Context) ([]*store.KindSettings, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT kind, disabled, coalesce(max_running, 0), coalesce(rate_limit, 0),
		coalesce(rate_period_us, 0), coalesce(compact_over, 0), coalesce(compact_policy, ''), coalesce(cap_per_key, 0),
		coalesce(rate_per_key_limit, 0), coalesce(rate_per_key_period_us, 0)
		FROM {schema}.kinds ORDER BY kind COLLATE "C"`))
	if err != nil {
		return nil, s.wrap(err, "list kinds")
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (*store.KindSettings, error) {
		k := &store.KindSettings{}
		var period, keyPeriod int64
		var merge string
		err := r.Scan(&k.Name, &k.Disabled, &k.MaxRunning, &k.Rate.Limit, &period, &k.CompactOver, &merge,
			&k.CapPerKey, &k.RatePerKey.Limit, &keyPeriod)
		k.RatePerKey.Period = time.Duration(keyPeriod) * time.Microsecond
		k.Rate.Period = time.Duration(period) * time.Microsecond
		k.CompactMerge = hoppertype.MergePolicy(merge)
		return k, err
	})
	if err != nil {
		return nil, s.wrap(err, "list kinds")
	}
	return out, nil
}

// kindCompactSQL stores kind $2's compaction setting.
const kindCompactSQL = `INSERT INTO {schema}.kinds (kind, compact_over, compact_policy, updated_at)
	VALUES ($2, $3, $4, coalesce($1::timestamptz, now()))
	ON CONFLICT (kind) DO UPDATE SET compact_over = excluded.compact_over, compact_policy = excluded.compact_policy,
	updated_at = excluded.updated_at`

// kindUncompactSQL removes kind $2's compaction setting.
const kindUncompactSQL = `UPDATE {schema}.kinds SET compact_over = NULL, compact_policy = NULL,
	updated_at = coalesce($1::timestamptz, now()) WHERE kind = $2`

// KindSetCompaction stores or (over 0) removes a kind's compaction setting.
func (s *Store) KindSetCompaction(ctx context.Context, kind string, over int, merge hoppertype.MergePolicy) error {
	var err error
	if over > 0 {
		_, err = s.pool.Exec(ctx, s.sql(kindCompactSQL), s.nowArg(), kind, over, nullStr(string(merge)))
	} else {
		err = s.clearKindSetting(ctx, kindUncompactSQL, s.nowArg(), kind)
	}
	if err != nil {
		return s.wrap(err, "set kind %q compaction", kind)
	}
	return nil
}
