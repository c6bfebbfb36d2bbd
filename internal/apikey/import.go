package apikey

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
)

// ConflictError is Import's refusal of a key that clashes with a stored one. errors.Is(err,
// store.ErrDuplicate) holds for it, and errors.Is(err, ErrRevoked) when the key was revoked.
// Its message names keys by id and name, never by secret.
type ConflictError struct {
	// Field is what of the import clashes: "key" (its id is another key's, or the key was
	// revoked), "name" or "scopes".
	Field string
	// Reason says how.
	Reason string
	// Hint says what to do at an import.
	Hint string
	// Revoked: the key was imported or created before, then revoked.
	Revoked bool
}

func (e *ConflictError) Error() string {
	return "conflicting " + e.Field + ": " + e.Reason + ": " + e.Hint
}

// Is makes errors.Is(err, store.ErrDuplicate) true, and errors.Is(err, ErrRevoked) for a
// revoked key.
func (e *ConflictError) Is(target error) bool {
	return target == store.ErrDuplicate || e.Revoked && target == ErrRevoked
}

// Import stores the key plaintext under name with scopes, keeping only a hash of its secret,
// as New does. The key is one Generate made (`hopper keys generate`), or any tool following
// the format: Prefix, an id of 12 characters, "_", a secret of 52, both of a–z and 2–7, from
// a cryptographic random source (the secret is the key's strength: see hash).
//
// Import is idempotent: a key stored already under that name with those scopes is left as it
// is and returned with created false, so servers starting together with one key, or a
// deployment applied twice, store it once. A stored key is never changed: a revoked key is
// not brought back.
//
// Errors wrap ErrMalformed (the key), ErrInvalidName or ErrInvalidScope for bad input; a
// *ConflictError when the key's id is another key's (another secret), the key is stored under
// another name or with other scopes, or was revoked, or when a live key of another id has the
// name; or the store's error.
func Import(ctx context.Context, keys store.KeyStore, plaintext, name string,
	scopes []Scope) (k *store.APIKey, created bool, err error) {
	id, secret, err := Parse(plaintext)
	if err != nil {
		return nil, false, err
	}
	if err := ValidateName(name); err != nil {
		return nil, false, err
	}
	canonical, err := ParseScopes(ScopeNames(scopes))
	if err != nil {
		return nil, false, err
	}
	want := &store.APIKey{ID: id, Name: name, Hash: hash(secret), Scopes: ScopeNames(canonical)}
	stored, created, err := keys.KeyImport(ctx, want)
	if errors.Is(err, store.ErrKeyExists) {
		return nil, false, &ConflictError{Field: "name", Reason: fmt.Sprintf("a live key of another id is named %q", name),
			Hint: "revoke it first, or choose another name"}
	}
	if err != nil {
		return nil, false, fmt.Errorf("import API key %s: %w", id, err)
	}
	if created {
		return stored, true, nil
	}
	if err := sameKey(stored, want, secret); err != nil {
		return nil, false, err
	}
	return stored, false, nil
}

// sameKey returns nil when stored, the key found under want's id, is want: the same secret,
// live, the same name and scopes. Else a *ConflictError says what differs, the secret first:
// only the key's holder learns more about it.
func sameKey(stored, want *store.APIKey, secret string) error {
	id := want.ID
	storedScopes, err := ParseScopes(stored.Scopes)
	switch {
	case !Verify(stored, secret):
		return &ConflictError{Field: "key", Reason: fmt.Sprintf("id %s is another key's (named %q)", id, stored.Name),
			Hint: "ids are unique; generate a new key"}
	case stored.Revoked():
		return &ConflictError{Field: "key", Revoked: true,
			Reason: fmt.Sprintf("key %s (named %q) was revoked at %s, and a revoked key is never imported again",
				id, stored.Name, stored.RevokedAt.UTC().Format(time.RFC3339)),
			Hint: "generate a new key"}
	case stored.Name != want.Name:
		return &ConflictError{Field: "name", Reason: fmt.Sprintf("key %s is stored as %q", id, stored.Name),
			Hint: "import it under that name, or revoke it and import a new key"}
	case err != nil || !slices.Equal(ScopeNames(storedScopes), want.Scopes):
		return &ConflictError{Field: "scopes",
			Reason: fmt.Sprintf("key %s is stored with scopes %s", id, strings.Join(stored.Scopes, ", ")),
			Hint:   "import it with those, or revoke it and import a new key"}
	}
	return nil
}
