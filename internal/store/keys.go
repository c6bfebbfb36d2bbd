package store

import (
	"context"
	"time"
)

// KeyStore keeps API keys: their public ids, names, scopes and the hashes of their secrets,
// never the secrets themselves (package apikey makes and checks keys). It is separate from
// Store because only the server and the CLI need it. Both stores implement it; implementations
// are safe for concurrent use and take times from the store's clock.
type KeyStore interface {
	// KeyCreate stores a new key and sets k.CreatedAt to the store's clock. It returns
	// ErrKeyExists (which matches ErrDuplicate) when a key has the same id or a key that is not
	// revoked has the same name: a revoked key's name may be reused.
	KeyCreate(ctx context.Context, k *APIKey) error
	// KeyImport stores k unless a key with k.ID is stored already, revoked or not: it never
	// changes a stored key. When it stores k it sets k.CreatedAt to the store's clock and
	// returns k and created true; else it returns the stored key with that id, as it is, and
	// created false, for the caller to compare (package apikey's Import). Concurrent imports of
	// one id, from any number of processes on one database, store it once: one of them gets
	// created true, the others the stored key. ErrKeyExists (which matches ErrDuplicate) when no
	// key has k.ID but a key that is not revoked has k.Name.
	KeyImport(ctx context.Context, k *APIKey) (stored *APIKey, created bool, err error)
	// KeyList returns every key, revoked ones included, by name, then newest first.
	KeyList(ctx context.Context) ([]*APIKey, error)
	// KeyRevoke revokes the key with id idOrName or, when no key has that id, the key with that
	// name (the live one, else the newest revoked one), and returns it with RevokedAt set. It
	// is idempotent: revoking a revoked key keeps its first RevokedAt. ErrNotFound when no key
	// matches.
	KeyRevoke(ctx context.Context, idOrName string) (*APIKey, error)
	// KeyLookup returns the key with that id, revoked or not (the caller tells a revoked key
	// from an unknown one), or ErrNotFound.
	KeyLookup(ctx context.Context, id string) (*APIKey, error)
	// KeyTouch records that the key was used at at; it never moves LastUsedAt back. Unknown ids
	// are ignored. On SQLite every call is a write, so callers should not touch a key on every
	// request (once a minute per key is plenty).
	KeyTouch(ctx context.Context, id string, at time.Time) error
}

// APIKey is a stored API key. The plaintext key is never stored: Hash is a hash of its secret
// part, made and checked by package apikey.
type APIKey struct {
	// ID is the key's public part, used to look it up; unique.
	ID string
	// Name says what the key is for (e.g. "billing-workers"); unique among keys not revoked.
	Name string
	// Hash is the hash of the key's secret part.
	Hash []byte
	// Scopes are what the key may do ("enqueue", "work", "read", "admin").
	Scopes []string
	// CreatedAt is set by KeyCreate.
	CreatedAt time.Time
	// LastUsedAt is the latest time given to KeyTouch; zero when never used.
	LastUsedAt time.Time
	// RevokedAt is when the key was revoked; zero for a live key.
	RevokedAt time.Time
}

// Revoked reports whether the key was revoked.
func (k *APIKey) Revoked() bool { return !k.RevokedAt.IsZero() }

// ErrKeyExists is KeyCreate's error for a taken id or name, and KeyImport's for a taken name. errors.Is(err, ErrDuplicate) holds
// for it too, so callers that map ErrDuplicate to a conflict need nothing more.
var ErrKeyExists error = &duplicateError{"an API key with that id, or a live API key with that name, exists"}

// duplicateError is an ErrDuplicate with its own message: ErrDuplicate's speaks of
// idempotency keys.
type duplicateError struct{ msg string }

func (e *duplicateError) Error() string        { return e.msg }
func (e *duplicateError) Is(target error) bool { return target == ErrDuplicate }
