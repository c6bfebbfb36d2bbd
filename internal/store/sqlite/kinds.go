package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
)

// pruneKindSQL deletes the row of kind ? once it holds no setting.
const pruneKindSQL = `DELETE FROM kinds WHERE kind = ? AND disabled = 0 AND max_running IS NULL AND rate_limit IS NULL AND compact_over IS NULL
	AND cap_per_key IS NULL AND rate_per_key_limit IS NULL`

// KindSetDisabled disables or enables a kind. The claim reads the flag in its own transaction,
// so once this returns no claim takes the kind's jobs.
func (s *Store) KindSetDisabled(ctx context.Context, kind string, disabled bool) error {
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := micros(s.clock.Now())
		if disabled {
			_, err := tx.ExecContext(ctx, `INSERT INTO kinds (kind, disabled, updated_at) VALUES (?1, 1, ?2)
				ON CONFLICT (kind) DO UPDATE SET disabled = 1, updated_at = excluded.updated_at`, kind, now)
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE kinds SET disabled = 0, updated_at = ?2 WHERE kind = ?1 AND disabled = 1`, kind, now)
		if err == nil {
			_, err = tx.ExecContext(ctx, pruneKindSQL, kind)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("set kind %q disabled=%v: %w", kind, disabled, err)
	}
	return nil
}

// KindList returns the stored kind settings, by name.
func (s *Store) KindList(ctx context.Context) ([]*store.KindSettings, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT kind, disabled, max_running, coalesce(rate_limit, 0), coalesce(rate_period_us, 0),
		coalesce(compact_over, 0), coalesce(compact_policy, ''), coalesce(cap_per_key, 0), coalesce(rate_per_key_limit, 0),
		coalesce(rate_per_key_period_us, 0) FROM kinds ORDER BY kind`)
	if err != nil {
		return nil, wrap(err, "list kinds")
	}
	defer rows.Close()
	var out []*store.KindSettings
	for rows.Next() {
		k := &store.KindSettings{}
		var limit sql.NullInt64
		var period, keyPeriod int64
		var merge string
		if err := rows.Scan(&k.Name, &k.Disabled, &limit, &k.Rate.Limit, &period, &k.CompactOver, &merge,
			&k.CapPerKey, &k.RatePerKey.Limit, &keyPeriod); err != nil {
			return nil, wrap(err, "list kinds")
		}
		k.MaxRunning, k.Rate.Period = int(limit.Int64), time.Duration(period)*time.Microsecond
		k.CompactMerge = hoppertype.MergePolicy(merge)
		k.RatePerKey.Period = time.Duration(keyPeriod) * time.Microsecond
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "list kinds")
	}
	return out, nil
}

// KindSetCompaction stores or (over 0) removes a kind's compaction setting.
func (s *Store) KindSetCompaction(ctx context.Context, kind string, over int, merge hoppertype.MergePolicy) error {
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		now := micros(s.clock.Now())
		if over > 0 {
			_, err := tx.ExecContext(ctx, `INSERT INTO kinds (kind, compact_over, compact_policy, updated_at) VALUES (?1, ?2, ?3, ?4)
				ON CONFLICT (kind) DO UPDATE SET compact_over = excluded.compact_over, compact_policy = excluded.compact_policy,
				updated_at = excluded.updated_at`, kind, over, nullString(string(merge)), now)
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE kinds SET compact_over = NULL, compact_policy = NULL, updated_at = ?2 WHERE kind = ?1`, kind, now)
		if err == nil {
			_, err = tx.ExecContext(ctx, pruneKindSQL, kind)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("set kind %q compaction: %w", kind, err)
	}
	return nil
}
