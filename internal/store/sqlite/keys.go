package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

var _ store.KeyStore = (*Store)(nil)

const keyColumns = `id, name, hash, scopes, created_at, last_used_at, revoked_at`

// KeyCreate stores a new API key; ErrKeyExists when its id or live name is taken.
func (s *Store) KeyCreate(ctx context.Context, k *store.APIKey) error {
	scopes, err := json.Marshal(nonNil(k.Scopes))
	if err != nil {
		return fmt.Errorf("create api key %q: %w", k.Name, err)
	}
	var created time.Time
	err = s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		created = s.clock.Now()
		// DO NOTHING covers both the primary key and the unique index on live names.
		res, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, name, hash, scopes, created_at)
			VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING`,
			k.ID, k.Name, k.Hash, string(scopes), micros(created))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err == nil && n == 0 {
			err = store.ErrKeyExists
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("create api key %q: %w", k.Name, err)
	}
	k.CreatedAt = fromMicros(micros(created))
	return nil
}

// KeyImport stores k unless its id is stored; else it returns the stored key, untouched.
// The single writer serializes imports: the insert and the read that follows it see one
// state of the table.
func (s *Store) KeyImport(ctx context.Context, k *store.APIKey) (*store.APIKey, bool, error) {
	scopes, err := json.Marshal(nonNil(k.Scopes))
	if err != nil {
		return nil, false, fmt.Errorf("import api key %s: %w", k.ID, err)
	}
	var (
		stored  *store.APIKey
		created time.Time
	)
	err = s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		created = s.clock.Now()
		// DO NOTHING covers the id and the live name alike; which one refused is read below.
		res, err := tx.ExecContext(ctx, `INSERT INTO api_keys (id, name, hash, scopes, created_at)
			VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING`,
			k.ID, k.Name, k.Hash, string(scopes), micros(created))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		stored, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?`, k.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrKeyExists // not the id: the name of a live key
		}
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("import api key %s (%q): %w", k.ID, k.Name, err)
	}
	if stored != nil {
		return stored, false, nil
	}
	k.CreatedAt = fromMicros(micros(created))
	return k, true, nil
}

// KeyList returns every API key by name, then newest first.
func (s *Store) KeyList(ctx context.Context) ([]*store.APIKey, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+keyColumns+` FROM api_keys ORDER BY name, created_at DESC, id`)
	if err != nil {
		return nil, wrap(err, "list api keys")
	}
	defer rows.Close()
	var out []*store.APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, wrap(err, "list api keys")
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err, "list api keys")
	}
	return out, nil
}

// KeyRevoke revokes the key with that id, else the one with that name, and returns it.
func (s *Store) KeyRevoke(ctx context.Context, idOrName string) (*store.APIKey, error) {
	var k *store.APIKey
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		var id string
		// An id match first, then a live key by name, then the newest revoked one.
		err := tx.QueryRowContext(ctx, `SELECT id FROM api_keys WHERE id = ?1 OR name = ?1
			ORDER BY id = ?1 DESC, revoked_at IS NOT NULL, created_at DESC, id DESC LIMIT 1`, idOrName).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?2) WHERE id = ?1`,
			id, micros(s.clock.Now())); err != nil {
			return err
		}
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?`, id))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("revoke api key %q: %w", idOrName, err)
	}
	return k, nil
}

// KeyLookup returns the API key with that id, revoked or not.
func (s *Store) KeyLookup(ctx context.Context, id string) (*store.APIKey, error) {
	k, err := scanKey(s.reader.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("api key %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, wrap(err, "look up api key %s", id)
	}
	return k, nil
}

// KeyTouch moves the key's last use forward to at.
func (s *Store) KeyTouch(ctx context.Context, id string, at time.Time) error {
	err := s.write(ctx, nil, func(ctx context.Context, tx *sql.Tx, _ []*sql.Stmt) error {
		_, err := tx.ExecContext(ctx, `UPDATE api_keys SET last_used_at = ?2
			WHERE id = ?1 AND (last_used_at IS NULL OR last_used_at < ?2)`, id, micros(at))
		return err
	})
	if err != nil {
		return fmt.Errorf("touch api key %s: %w", id, err)
	}
	return nil
}

func scanKey(sc scanner) (*store.APIKey, error) {
	var (
		k             store.APIKey
		scopes        string
		created       int64
		used, revoked sql.NullInt64
	)
	if err := sc.Scan(&k.ID, &k.Name, &k.Hash, &scopes, &created, &used, &revoked); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return nil, fmt.Errorf("api key %s: scopes: %w", k.ID, err)
	}
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = fromMicros(created), nullTime(used), nullTime(revoked)
	return &k, nil
}

// nonNil stores no scopes as [] rather than null.
func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}
