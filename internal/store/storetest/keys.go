package storetest

import (
	"errors"
	"fmt"
	"sync"
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
	parallel(t, opener, "Import", keysImport)
	parallel(t, opener, "ImportStoredID", keysImportStoredID)
	parallel(t, opener, "ImportNameTaken", keysImportNameTaken)
	parallel(t, opener, "ImportConcurrent", keysImportConcurrent)
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

// An imported key is stored as given, with its hash, and found by id.
func keysImport(t *testing.T, b *bundle) {
	ks := b.keyStore(t)
	k := newKey("k1", "bootstrap", "admin")
	got, created, err := ks.KeyImport(t.Context(), k)
	require.NoError(t, err)
	require.True(t, created)
	require.Same(t, k, got)
	sameTime(t, Start, got.CreatedAt, "KeyImport sets CreatedAt from the store's clock")

	stored, err := ks.KeyLookup(t.Context(), "k1")
	require.NoError(t, err)
	require.Equal(t, "bootstrap", stored.Name)
	require.Equal(t, []byte("hash-of-k1"), stored.Hash)
	require.Equal(t, []string{"admin"}, stored.Scopes)
	sameTime(t, Start, stored.CreatedAt, "created_at")
}

// Importing an id that is stored changes nothing and returns the stored key as it is, revoked
// or not, whatever the import says of its name, hash and scopes: the caller compares.
func keysImportStoredID(t *testing.T, b *bundle) {
	ks := b.keyStore(t)
	b.createKey(t, newKey("k1", "ci", "work"))
	b.clock.Advance(time.Minute)

	again := &store.APIKey{ID: "k1", Name: "other", Hash: []byte("another-hash"), Scopes: []string{"admin"}}
	got, created, err := ks.KeyImport(t.Context(), again)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, "ci", got.Name)
	require.Equal(t, []byte("hash-of-k1"), got.Hash)
	require.Equal(t, []string{"work"}, got.Scopes)
	sameTime(t, Start, got.CreatedAt, "the stored key's created_at")
	require.False(t, got.Revoked())

	_, err = ks.KeyRevoke(t.Context(), "k1")
	require.NoError(t, err)
	b.clock.Advance(time.Minute)
	got, created, err = ks.KeyImport(t.Context(), newKey("k1", "ci", "work"))
	require.NoError(t, err)
	require.False(t, created, "a revoked key is not imported again")
	require.True(t, got.Revoked())
	sameTime(t, Start.Add(time.Minute), got.RevokedAt, "revoked_at kept")

	stored, err := ks.KeyLookup(t.Context(), "k1")
	require.NoError(t, err)
	require.True(t, stored.Revoked(), "still revoked")
	require.Equal(t, "ci", stored.Name)
	keys, err := ks.KeyList(t.Context())
	require.NoError(t, err)
	require.Len(t, keys, 1)
}

// A new id under the name of a live key is refused; under a revoked key's name it is stored.
func keysImportNameTaken(t *testing.T, b *bundle) {
	ks := b.keyStore(t)
	b.createKey(t, newKey("k1", "ci", "work"))
	_, _, err := ks.KeyImport(t.Context(), newKey("k2", "ci", "work"))
	require.ErrorIs(t, err, store.ErrKeyExists)
	require.ErrorIs(t, err, store.ErrDuplicate)
	_, err = ks.KeyLookup(t.Context(), "k2")
	require.ErrorIs(t, err, store.ErrNotFound, "the refused key was not stored")

	_, err = ks.KeyRevoke(t.Context(), "ci")
	require.NoError(t, err)
	_, created, err := ks.KeyImport(t.Context(), newKey("k2", "ci", "work"))
	require.NoError(t, err)
	require.True(t, created)
}

// Imports of one key through several handles at once (servers starting together on one
// database) store it once, without error: one import creates it, the others find it. Of two
// keys with one name imported at once, one is stored and the other refused.
func keysImportConcurrent(t *testing.T, b *bundle) {
	handles := []store.KeyStore{b.keyStore(t)}
	for range 3 {
		h := b.open()
		t.Cleanup(func() { h.Close() })
		handles = append(handles, h)
	}
	const rounds, perHandle = 8, 2
	for r := range rounds {
		id := fmt.Sprintf("k%d", r)
		n := len(handles) * perHandle
		created, errs := make([]bool, n), make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				var got *store.APIKey
				got, created[i], errs[i] = handles[i%len(handles)].KeyImport(t.Context(), newKey(id, "bootstrap-"+id, "admin"))
				if errs[i] == nil && got.ID != id {
					errs[i] = fmt.Errorf("import %s returned key %s", id, got.ID)
				}
			})
		}
		close(start)
		wg.Wait()
		made := 0
		for i := range n {
			require.NoError(t, errs[i], "round %d, import %d", r, i)
			if created[i] {
				made++
			}
		}
		require.Equal(t, 1, made, "round %d: exactly one import stores the key", r)
	}
	keys, err := b.keyStore(t).KeyList(t.Context())
	require.NoError(t, err)
	require.Len(t, keys, rounds, "one row per key")

	// Two ids, one name, at once: one stored, one refused.
	results := make([]error, 2)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			<-start
			_, _, results[i] = handles[i].KeyImport(t.Context(), newKey(fmt.Sprintf("same-name-%d", i), "shared", "read"))
		})
	}
	close(start)
	wg.Wait()
	var stored, refused int
	for _, err := range results {
		switch {
		case err == nil:
			stored++
		case errors.Is(err, store.ErrKeyExists):
			refused++
		default:
			require.NoError(t, err)
		}
	}
	require.Equal(t, [2]int{1, 1}, [2]int{stored, refused}, "stored, refused")
}
