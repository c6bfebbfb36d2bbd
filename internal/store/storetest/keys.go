package storetest

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testKeys(t *testing.T, opener Opener) {
	parallel(t, opener, "CreateLookup", keysCreateLookup)
	parallel(t, opener, "DuplicateName", keysDuplicateName)
	parallel(t, opener, "Revoke", keysRevoke)
	parallel(t, opener, "RevokeByName", keysRevokeByName)
	parallel(t, opener, "RevokeUnknown", keysRevokeUnknown)
	parallel(t, opener, "List", keysList)
	parallel(t, opener, "Touch", keysTouch)
}

// keyStore is the bundle's store as a KeyStore: every store keeps keys.
func (b *bundle) keyStore(t *testing.T) store.KeyStore {
	t.Helper()
	return b.store
}

// newKey returns a key as package apikey would make it (the store does not care how).
func newKey(id, name string, scopes ...string) *store.APIKey {
	return &store.APIKey{ID: id, Name: name, Hash: []byte("hash-of-" + id), Scopes: scopes}
}

// createKey stores a new key and requires success.
func (b *bundle) createKey(t *testing.T, k *store.APIKey) *store.APIKey {
	t.Helper()
	require.NoError(t, b.keyStore(t).KeyCreate(t.Context(), k))
	return k
}

// A created key is found by id with every field as stored, including its scopes in order.
func keysCreateLookup(t *testing.T, b *bundle) {
	ks := b.keyStore(t)
	k := b.createKey(t, newKey("k1", "billing", "enqueue", "read"))
	sameTime(t, Start, k.CreatedAt, "KeyCreate sets CreatedAt from the store's clock")

	got, err := ks.KeyLookup(t.Context(), "k1")
	require.NoError(t, err)
	require.Equal(t, "k1", got.ID)
	require.Equal(t, "billing", got.Name)
	require.Equal(t, []byte("hash-of-k1"), got.Hash)
	require.Equal(t, []string{"enqueue", "read"}, got.Scopes)
	sameTime(t, Start, got.CreatedAt, "created_at")
	require.True(t, got.LastUsedAt.IsZero(), "never used")
	require.False(t, got.Revoked())

	b.createKey(t, newKey("k2", "admin", "admin"))
	got, err = ks.KeyLookup(t.Context(), "k2")
	require.NoError(t, err)
	require.Equal(t, []string{"admin"}, got.Scopes)

	_, err = ks.KeyLookup(t.Context(), "no-such-key")
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = ks.KeyLookup(t.Context(), "billing")
	require.ErrorIs(t, err, store.ErrNotFound, "lookup is by id, not name")
}

// A live key's name, or any key's id, cannot be taken again; a revoked key's name can.
func keysDuplicateName(t *testing.T, b *bundle) {
	ks := b.keyStore(t)
	b.createKey(t, newKey("k1", "ci", "work"))

	err := ks.KeyCreate(t.Context(), newKey("k2", "ci", "read"))
	require.ErrorIs(t, err, store.ErrDuplicate)
	require.ErrorIs(t, err, store.ErrKeyExists)
	_, err = ks.KeyLookup(t.Context(), "k2")
	require.ErrorIs(t, err, store.ErrNotFound, "the refused key was not stored")

	err = ks.KeyCreate(t.Context(), newKey("k1", "other", "read"))
	require.ErrorIs(t, err, store.ErrDuplicate, "same id")

	_, err = ks.KeyRevoke(t.Context(), "k1")
	require.NoError(t, err)
	b.createKey(t, newKey("k3", "ci", "work"))
}

// A revoked key is still found, with RevokedAt set, so the server can say "revoked". Revoking
// again changes nothing.
func keysRevoke(t *testing.T, b *bundle) {
	ks := b.keyStore(t)
	b.createKey(t, newKey("k1", "ci", "work"))
	b.clock.Advance(time.Minute)

	k, err := ks.KeyRevoke(t.Context(), "k1")
	require.NoError(t, err)
	require.Equal(t, "k1", k.ID)
	require.Equal(t, []string{"work"}, k.Scopes)
	sameTime(t, Start.Add(time.Minute), k.RevokedAt, "revoked_at")

	got, err := ks.KeyLookup(t.Context(), "k1")
	require.NoError(t, err)
	require.True(t, got.Revoked())
	sameTime(t, Start.Add(time.Minute), got.RevokedAt, "revoked_at after lookup")

	b.clock.Advance(time.Minute)
	k, err = ks.KeyRevoke(t.Context(), "k1")
	require.NoError(t, err, "revoking twice is fine")
	sameTime(t, Start.Add(time.Minute), k.RevokedAt, "the first revocation's time is kept")
}

// Revoking by name takes the live key of that name; an id match comes first.
func keysRevokeByName(t *testing.T, b *bundle) {
	ks := b.keyStore(t)
	b.createKey(t, newKey("old", "ci", "work"))
	_, err := ks.KeyRevoke(t.Context(), "old")
	require.NoError(t, err)
	b.clock.Advance(time.Minute)
	b.createKey(t, newKey("new", "ci", "work"))
	b.createKey(t, newKey("ci2", "new", "read")) // named like another key's id

	b.clock.Advance(time.Minute)
	k, err := ks.KeyRevoke(t.Context(), "ci")
	require.NoError(t, err)
	require.Equal(t, "new", k.ID, "the live key of that name")
	sameTime(t, Start.Add(2*time.Minute), k.RevokedAt, "revoked_at")

	k, err = ks.KeyRevoke(t.Context(), "ci")
	require.NoError(t, err, "all keys of that name revoked: idempotent")
	require.Equal(t, "new", k.ID, "the newest revoked key of that name")

	k, err = ks.KeyRevoke(t.Context(), "new")
	require.NoError(t, err)
	require.Equal(t, "new", k.ID, "an id match wins over a name")
	got, err := ks.KeyLookup(t.Context(), "ci2")
	require.NoError(t, err)
	require.False(t, got.Revoked())
}

func keysRevokeUnknown(t *testing.T, b *bundle) {
	_, err := b.keyStore(t).KeyRevoke(t.Context(), "no-such-key")
	require.ErrorIs(t, err, store.ErrNotFound)
}

// The list holds every key, revoked ones included, by name, then newest first.
func keysList(t *testing.T, b *bundle) {
	ks := b.keyStore(t)
	keys, err := ks.KeyList(t.Context())
	require.NoError(t, err)
	require.Empty(t, keys)

	b.createKey(t, newKey("k1", "web", "enqueue"))
	b.clock.Advance(time.Second)
	b.createKey(t, newKey("k2", "ci", "work", "read"))
	_, err = ks.KeyRevoke(t.Context(), "k2")
	require.NoError(t, err)
	b.clock.Advance(time.Second)
	b.createKey(t, newKey("k3", "ci", "work"))

	keys, err = ks.KeyList(t.Context())
	require.NoError(t, err)
	got := make([]string, len(keys))
	for i, k := range keys {
		got[i] = k.ID
	}
	require.Equal(t, []string{"k3", "k2", "k1"}, got)
	require.False(t, keys[0].Revoked())
	require.True(t, keys[1].Revoked())
	sameTime(t, Start.Add(time.Second), keys[1].RevokedAt, "revoked_at in the list")
	require.Equal(t, []string{"work", "read"}, keys[1].Scopes)
	require.Equal(t, []byte("hash-of-k1"), keys[2].Hash)
}

// KeyTouch moves LastUsedAt forward only; unknown ids are ignored.
func keysTouch(t *testing.T, b *bundle) {
	ks := b.keyStore(t)
	b.createKey(t, newKey("k1", "web", "enqueue"))
	later := Start.Add(time.Hour)
	require.NoError(t, ks.KeyTouch(t.Context(), "k1", later))
	require.NoError(t, ks.KeyTouch(t.Context(), "k1", Start.Add(time.Minute)))
	require.NoError(t, ks.KeyTouch(t.Context(), "no-such-key", later))

	got, err := ks.KeyLookup(t.Context(), "k1")
	require.NoError(t, err)
	sameTime(t, later, got.LastUsedAt, "last_used_at")
}
