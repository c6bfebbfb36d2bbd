package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/jackc/pgx/v5"
)

var _ store.KeyStore = (*Store)(nil)

const keyColumns = `id, name, hash, scopes, created_at, last_used_at, revoked_at`

// keyCreateSQL inserts a key; DO NOTHING covers both the primary key and the unique index on
// live names, so a taken id or name returns no row.
const keyCreateSQL = `INSERT INTO {schema}.api_keys (id, name, hash, scopes, created_at)
VALUES ($2, $3, $4, $5, coalesce($1::timestamptz, now()))
ON CONFLICT DO NOTHING
RETURNING created_at`

// KeyCreate stores a new API key; ErrKeyExists when its id or live name is taken.
func (s *Store) KeyCreate(ctx context.Context, k *store.APIKey) error {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{} // NOT NULL: no scopes is '{}'
	}
	var created time.Time
	err := s.pool.QueryRow(ctx, s.sql(keyCreateSQL), s.nowArg(), k.ID, k.Name, k.Hash, scopes).Scan(&created)
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrKeyExists
	}
	if err != nil {
		return s.wrap(err, "create api key %q", k.Name)
	}
	k.CreatedAt = created.UTC()
	return nil
}

// KeyImport stores k unless its id is stored; else it returns the stored key, untouched.
// The insert's DO NOTHING covers the id and the live name alike, and waits for a concurrent
// insert of either to commit or abort, so two imports of one key store it once and neither
// fails. Which one refused is read after, in a statement of its own: in READ COMMITTED it sees
// the row that the insert found, which a CTE beside the insert (the insert's snapshot) would not.
func (s *Store) KeyImport(ctx context.Context, k *store.APIKey) (*store.APIKey, bool, error) {
	scopes := k.Scopes
	if scopes == nil {
		scopes = []string{} // NOT NULL: no scopes is '{}'
	}
	var created time.Time
	err := s.pool.QueryRow(ctx, s.sql(keyCreateSQL), s.nowArg(), k.ID, k.Name, k.Hash, scopes).Scan(&created)
	if err == nil {
		k.CreatedAt = created.UTC()
		return k, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, false, s.wrap(err, "import api key %s (%q)", k.ID, k.Name)
	}
	stored, err := s.KeyLookup(ctx, k.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, s.wrap(store.ErrKeyExists, "import api key %s (%q)", k.ID, k.Name) // the name of a live key
	}
	if err != nil {
		return nil, false, fmt.Errorf("import api key %s (%q): %w", k.ID, k.Name, err)
	}
	return stored, false, nil
}

// KeyList returns every API key by name, then newest first.
func (s *Store) KeyList(ctx context.Context) ([]*store.APIKey, error) {
	rs, err := s.pool.Query(ctx, s.sql(`SELECT `+keyColumns+` FROM {schema}.api_keys
		ORDER BY name COLLATE "C", created_at DESC, id`))
	if err != nil {
		return nil, s.wrap(err, "list api keys")
	}
	out, err := pgx.CollectRows(rs, func(r pgx.CollectableRow) (*store.APIKey, error) { return scanKey(r) })
	if err != nil {
		return nil, s.wrap(err, "list api keys")
	}
	return out, nil
}

// keyRevokeSQL picks the key with id $2, else the live key named $2, else the newest revoked
// one, and revokes it unless it already is.
const keyRevokeSQL = `WITH target AS (
	SELECT id FROM {schema}.api_keys WHERE id = $2 OR name = $2
	ORDER BY id = $2 DESC, revoked_at IS NOT NULL, created_at DESC, id DESC LIMIT 1
)
UPDATE {schema}.api_keys k SET revoked_at = coalesce(k.revoked_at, $1::timestamptz, now())
FROM target WHERE k.id = target.id
RETURNING k.id, k.name, k.hash, k.scopes, k.created_at, k.last_used_at, k.revoked_at`

// KeyRevoke revokes the key with that id, else the one with that name, and returns it.
func (s *Store) KeyRevoke(ctx context.Context, idOrName string) (*store.APIKey, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, s.sql(keyRevokeSQL), s.nowArg(), idOrName))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, s.wrap(err, "revoke api key %q", idOrName)
	}
	return k, nil
}

// KeyLookup returns the API key with that id, revoked or not.
func (s *Store) KeyLookup(ctx context.Context, id string) (*store.APIKey, error) {
	k, err := scanKey(s.pool.QueryRow(ctx, s.sql(`SELECT `+keyColumns+` FROM {schema}.api_keys WHERE id = $1`), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, s.wrap(store.ErrNotFound, "api key %s", id)
	}
	if err != nil {
		return nil, s.wrap(err, "look up api key %s", id)
	}
	return k, nil
}

// KeyTouch moves the key's last use forward to at.
func (s *Store) KeyTouch(ctx context.Context, id string, at time.Time) error {
	_, err := s.pool.Exec(ctx, s.sql(`UPDATE {schema}.api_keys SET last_used_at = $2
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)`), id, at)
	if err != nil {
		return s.wrap(err, "touch api key %s", id)
	}
	return nil
}

func scanKey(sc scanner) (*store.APIKey, error) {
	var (
		k             store.APIKey
		created       time.Time
		used, revoked *time.Time
	)
	if err := sc.Scan(&k.ID, &k.Name, &k.Hash, &k.Scopes, &created, &used, &revoked); err != nil {
		return nil, err
	}
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = created.UTC(), utc(used), utc(revoked)
	return &k, nil
}
