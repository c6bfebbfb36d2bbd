package apikey_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

// memKeys is a KeyStore in memory that imports keys as the stores do (the conformance suite
// holds the stores to it): a stored id is returned untouched, a live name of another id is
// refused.
type memKeys struct {
	store.KeyStore
	byID map[string]*store.APIKey
	err  error
}

func newMemKeys() *memKeys { return &memKeys{byID: map[string]*store.APIKey{}} }

func (m *memKeys) KeyImport(_ context.Context, k *store.APIKey) (*store.APIKey, bool, error) {
	if m.err != nil {
		return nil, false, m.err
	}
	if stored, ok := m.byID[k.ID]; ok {
		return stored, false, nil
	}
	for _, other := range m.byID {
		if other.Name == k.Name && !other.Revoked() {
			return nil, false, fmt.Errorf("import api key %s: %w", k.ID, store.ErrKeyExists)
		}
	}
	k.CreatedAt = time.Unix(100, 0)
	m.byID[k.ID] = k
	return k, true, nil
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	a, err := apikey.Generate()
	require.NoError(t, err)
	b, err := apikey.Generate()
	require.NoError(t, err)
	require.NotEqual(t, a, b)
	for _, k := range []string{a, b} {
		_, _, err := apikey.Parse(k)
		require.NoError(t, err, k)
	}
}

func TestImport(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	keys := newMemKeys()
	plaintext, err := apikey.Generate()
	require.NoError(t, err)
	id, secret, err := apikey.Parse(plaintext)
	require.NoError(t, err)

	k, created, err := apikey.Import(ctx, keys, plaintext, "ops", []apikey.Scope{apikey.ScopeAdmin, apikey.ScopeRead})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, id, k.ID)
	require.Equal(t, "ops", k.Name)
	require.Equal(t, []string{"read", "admin"}, k.Scopes, "stored in canonical order")
	require.True(t, apikey.Verify(k, secret), "the key's own secret, hashed")
	require.NotContains(t, string(k.Hash), secret)

	authed, err := apikey.Authenticate(ctx, &lookupOnly{keys: keys.byID}, plaintext)
	require.NoError(t, err, "the imported key authenticates")
	require.Equal(t, id, authed.ID)

	// The same key again, scopes in any order and repeated: nothing changes.
	again, created, err := apikey.Import(ctx, keys, plaintext, "ops", []apikey.Scope{apikey.ScopeRead, apikey.ScopeAdmin, apikey.ScopeRead})
	require.NoError(t, err)
	require.False(t, created)
	require.Same(t, k, again)
}

func TestImportConflicts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	keys := newMemKeys()
	plaintext, err := apikey.Generate()
	require.NoError(t, err)
	id, secret, err := apikey.Parse(plaintext)
	require.NoError(t, err)
	_, _, err = apikey.Import(ctx, keys, plaintext, "ci", []apikey.Scope{apikey.ScopeWork})
	require.NoError(t, err)
	other, err := apikey.Generate()
	require.NoError(t, err)
	_, otherSecret, err := apikey.Parse(other)
	require.NoError(t, err)

	conflict := func(plaintext, name string, scopes []apikey.Scope, field string, reason ...string) error {
		t.Helper()
		_, created, err := apikey.Import(ctx, keys, plaintext, name, scopes)
		require.False(t, created)
		ce, ok := errors.AsType[*apikey.ConflictError](err)
		require.True(t, ok, "%v", err)
		require.Equal(t, field, ce.Field, err.Error())
		require.ErrorIs(t, err, store.ErrDuplicate)
		for _, r := range reason {
			require.Contains(t, err.Error(), r)
		}
		require.NotContains(t, err.Error(), secret, "a conflict never shows a secret")
		require.NotContains(t, err.Error(), otherSecret)
		return err
	}
	work := []apikey.Scope{apikey.ScopeWork}
	conflict(plaintext, "ci", []apikey.Scope{apikey.ScopeAdmin}, "scopes", "stored with scopes work", id)
	conflict(plaintext, "ci-2", work, "name", `stored as "ci"`)
	conflict("hop_"+id+"_"+otherSecret, "ci", work, "key", "another key's", id)
	err = conflict(other, "ci", work, "name", `a live key of another id is named "ci"`)
	require.NotErrorIs(t, err, apikey.ErrRevoked)

	keys.byID[id].RevokedAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	err = conflict(plaintext, "ci", work, "key", "revoked at 2026-03-01T12:00:00Z", "never imported again")
	require.ErrorIs(t, err, apikey.ErrRevoked)
	require.True(t, keys.byID[id].Revoked(), "not brought back")
	conflict("hop_"+id+"_"+otherSecret, "ci", work, "key", "another key's") // the secret is checked first
	_, created, err := apikey.Import(ctx, keys, other, "ci", work)
	require.NoError(t, err, "a revoked key's name is free")
	require.True(t, created)
}

func TestImportRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	keys := newMemKeys()
	plaintext, err := apikey.Generate()
	require.NoError(t, err)
	read := []apikey.Scope{apikey.ScopeRead}

	for _, bad := range []string{"", "secret", strings.ToUpper(plaintext), plaintext + "\n", "Bearer " + plaintext} {
		_, _, err := apikey.Import(ctx, keys, bad, "ci", read)
		require.ErrorIs(t, err, apikey.ErrMalformed, "%q", bad)
	}
	_, _, err = apikey.Import(ctx, keys, plaintext, "has space", read)
	require.ErrorIs(t, err, apikey.ErrInvalidName)
	_, _, err = apikey.Import(ctx, keys, plaintext, "ci", nil)
	require.ErrorIs(t, err, apikey.ErrInvalidScope)
	_, _, err = apikey.Import(ctx, keys, plaintext, "ci", []apikey.Scope{"root"})
	require.ErrorIs(t, err, apikey.ErrInvalidScope)
	require.Empty(t, keys.byID, "nothing stored")

	down := errors.New("database down")
	keys.err = down
	_, _, err = apikey.Import(ctx, keys, plaintext, "ci", read)
	require.ErrorIs(t, err, down)
	require.NotErrorIs(t, err, store.ErrDuplicate)
}
