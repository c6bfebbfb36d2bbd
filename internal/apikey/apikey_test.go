package apikey_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func newKey(t *testing.T, scopes ...apikey.Scope) (string, *store.APIKey) {
	t.Helper()
	plaintext, key, err := apikey.New("billing-workers", scopes)
	require.NoError(t, err)
	return plaintext, key
}

func TestNewParseVerify(t *testing.T) {
	t.Parallel()
	plaintext, key := newKey(t, apikey.ScopeWork, apikey.ScopeEnqueue)
	require.True(t, strings.HasPrefix(plaintext, "hop_"), plaintext)
	require.Len(t, plaintext, len("hop_")+12+1+52)
	require.Equal(t, "billing-workers", key.Name)
	require.Equal(t, []string{"work", "enqueue"}, key.Scopes)

	id, secret, err := apikey.Parse(plaintext)
	require.NoError(t, err)
	require.Equal(t, key.ID, id)
	require.Len(t, key.Hash, 32)
	require.NotContains(t, string(key.Hash), secret, "only a hash of the secret is kept")
	require.True(t, apikey.Verify(key, secret))

	wrong := "2" + secret[1:]
	if wrong == secret {
		wrong = "3" + secret[1:]
	}
	require.False(t, apikey.Verify(key, wrong))
	require.False(t, apikey.Verify(key, ""))
	require.False(t, apikey.Verify(&store.APIKey{}, secret), "a key without a hash matches nothing")
}

func TestNewKeysDiffer(t *testing.T) {
	t.Parallel()
	a, ka := newKey(t, apikey.ScopeRead)
	b, kb := newKey(t, apikey.ScopeRead)
	require.NotEqual(t, a, b)
	require.NotEqual(t, ka.ID, kb.ID)
	require.NotEqual(t, ka.Hash, kb.Hash)
}

func TestParseMalformed(t *testing.T) {
	t.Parallel()
	plaintext, _ := newKey(t, apikey.ScopeRead)
	_, secret, err := apikey.Parse(plaintext)
	require.NoError(t, err)
	for _, bad := range []string{
		"",
		"hop_",
		strings.TrimPrefix(plaintext, "hop_"), // no prefix
		"HOP_" + strings.TrimPrefix(plaintext, "hop_"), // prefix is case-sensitive
		strings.Replace(plaintext, "_", "-", 2),        // no separators
		plaintext[:len(plaintext)-1],                   // short secret
		plaintext + "a",                                // long secret
		strings.ToUpper(plaintext),                     // outside the alphabet
		"hop_abcdefghijkl_" + strings.Repeat("1", 52),  // '1' is not base32
		"hop_abc_" + secret,                            // short id
		plaintext + "\n",
	} {
		_, _, err := apikey.Parse(bad)
		require.ErrorIs(t, err, apikey.ErrMalformed, "%q", bad)
		require.NotContains(t, err.Error(), secret, "an error never shows the secret")
	}
}

func TestNewRefusesBadInput(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "has space", "semi;colon", "tab\t", "ünïcode", strings.Repeat("a", 65)} {
		_, _, err := apikey.New(name, []apikey.Scope{apikey.ScopeRead})
		require.ErrorIs(t, err, apikey.ErrInvalidName, "%q", name)
	}
	_, _, err := apikey.New(strings.Repeat("a", 64), []apikey.Scope{apikey.ScopeRead})
	require.NoError(t, err)

	_, _, err = apikey.New("ci", nil)
	require.ErrorIs(t, err, apikey.ErrInvalidScope)
	_, _, err = apikey.New("ci", []apikey.Scope{"superuser"})
	require.ErrorIs(t, err, apikey.ErrInvalidScope)
}

func TestParseScopes(t *testing.T) {
	t.Parallel()
	got, err := apikey.ParseScopes([]string{"admin", "read", "enqueue", "read"})
	require.NoError(t, err)
	require.Equal(t, []apikey.Scope{apikey.ScopeEnqueue, apikey.ScopeRead, apikey.ScopeAdmin}, got,
		"canonical order, repeats dropped")

	_, err = apikey.ParseScopes([]string{"work", "Write"})
	require.ErrorIs(t, err, apikey.ErrInvalidScope)
	require.EqualError(t, err, `invalid scope "Write" (want enqueue, work, read or admin)`)

	_, err = apikey.ParseScopes(nil)
	require.ErrorIs(t, err, apikey.ErrInvalidScope)
	require.ErrorContains(t, err, "none given")
}

func TestAllows(t *testing.T) {
	t.Parallel()
	all := []apikey.Scope{apikey.ScopeEnqueue, apikey.ScopeWork, apikey.ScopeRead, apikey.ScopeAdmin}
	cases := []struct {
		held []string
		want []apikey.Scope
	}{
		{[]string{"enqueue"}, []apikey.Scope{apikey.ScopeEnqueue}},
		{[]string{"work", "read"}, []apikey.Scope{apikey.ScopeWork, apikey.ScopeRead}},
		{[]string{"admin"}, all},
		{[]string{"someday"}, nil}, // unknown stored scopes grant nothing
		{nil, nil},
	}
	for _, c := range cases {
		k := &store.APIKey{Scopes: c.held}
		for _, s := range all {
			require.Equal(t, slices.Contains(c.want, s), apikey.Allows(k, s), "%v allows %s", c.held, s)
		}
	}
	revoked := &store.APIKey{Scopes: []string{"admin"}, RevokedAt: time.Unix(1, 0)}
	for _, s := range all {
		require.False(t, apikey.Allows(revoked, s), "a revoked key allows nothing")
	}
	require.False(t, apikey.Allows(nil, apikey.ScopeRead))
}

// lookupOnly is a KeyStore that only looks keys up (Authenticate needs nothing else).
type lookupOnly struct {
	store.KeyStore
	keys map[string]*store.APIKey
	err  error
}

func (l *lookupOnly) KeyLookup(_ context.Context, id string) (*store.APIKey, error) {
	if l.err != nil {
		return nil, l.err
	}
	if k, ok := l.keys[id]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("api key %s: %w", id, store.ErrNotFound)
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	good, goodKey := newKey(t, apikey.ScopeWork)
	revoked, revokedKey := newKey(t, apikey.ScopeAdmin)
	revokedKey.RevokedAt = time.Unix(1, 0)
	unknown, _ := newKey(t, apikey.ScopeWork)
	ks := &lookupOnly{keys: map[string]*store.APIKey{goodKey.ID: goodKey, revokedKey.ID: revokedKey}}

	k, err := apikey.Authenticate(ctx, ks, good)
	require.NoError(t, err)
	require.Same(t, goodKey, k)

	_, err = apikey.Authenticate(ctx, ks, unknown)
	require.ErrorIs(t, err, apikey.ErrInvalid)

	id, _, err := apikey.Parse(good)
	require.NoError(t, err)
	_, otherSecret, err := apikey.Parse(unknown)
	require.NoError(t, err)
	_, err = apikey.Authenticate(ctx, ks, "hop_"+id+"_"+otherSecret)
	require.ErrorIs(t, err, apikey.ErrInvalid, "right id, wrong secret")
	require.NotContains(t, err.Error(), otherSecret)

	_, err = apikey.Authenticate(ctx, ks, revoked)
	require.ErrorIs(t, err, apikey.ErrRevoked)

	_, err = apikey.Authenticate(ctx, ks, "Bearer "+good)
	require.ErrorIs(t, err, apikey.ErrMalformed)

	down := errors.New("database down")
	_, err = apikey.Authenticate(ctx, &lookupOnly{err: down}, good)
	require.ErrorIs(t, err, down)
	require.NotErrorIs(t, err, apikey.ErrInvalid, "a store failure is not a bad key")
}
