package server_test

import (
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// A key imported through the server (its secret given, not generated) works at once, and
// closes a server that was open for want of keys at once, as a created key does; importing it
// again changes nothing and leaves the server as it is. Conflicts are ALREADY_EXISTS, bad
// input INVALID_ARGUMENT naming the field.
func TestImportKeyThroughTheServer(t *testing.T) {
	t.Parallel()
	authClock := clock.NewFake(time.Now()) // never advanced: the server learns of the key from the call itself
	s := serve(t, nil, nil, func(c *server.Config, st *sqlitestore.Store) {
		c.Auth, c.Keys = &server.KeyAuth{Keys: st, OpenWithoutKeys: true, Now: authClock.Now}, st
	})
	listKeys := func(key string) error {
		_, err := adminClient(s, key).ListKeys(t.Context(), &hopperv1.ListKeysRequest{})
		return err
	}
	require.NoError(t, listKeys(""), "open while no key exists")

	plain, err := apikey.Generate()
	require.NoError(t, err)
	id, _, err := apikey.Parse(plain)
	require.NoError(t, err)
	req := &hopperv1.ImportKeyRequest{Key: plain, Name: "ops", Scopes: []string{"admin"}}
	res, err := adminClient(s, "").ImportKey(t.Context(), req)
	require.NoError(t, err)
	require.True(t, res.GetCreated())
	require.Equal(t, id, res.GetKey().GetId())
	require.Equal(t, []string{"admin"}, res.GetKey().GetScopes())

	require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(listKeys("")), "closed at once")
	require.NoError(t, listKeys(plain), "the imported key works")
	res, err = adminClient(s, plain).ImportKey(t.Context(), req)
	require.NoError(t, err)
	require.False(t, res.GetCreated(), "imported again: nothing changes")

	for _, c := range []struct {
		req  *hopperv1.ImportKeyRequest
		code connect.Code
		msg  string
	}{
		{&hopperv1.ImportKeyRequest{Key: plain, Name: "ops", Scopes: []string{"read"}}, connect.CodeAlreadyExists,
			"conflicting scopes: key " + id + " is stored with scopes admin"},
		{&hopperv1.ImportKeyRequest{Key: plain, Name: "ops", Scopes: []string{"root"}}, connect.CodeInvalidArgument, "invalid scopes: "},
		{&hopperv1.ImportKeyRequest{Key: "hop_" + id, Name: "ops", Scopes: []string{"admin"}}, connect.CodeInvalidArgument, "invalid key: malformed API key"},
		{&hopperv1.ImportKeyRequest{Key: plain, Name: "o\x00ps", Scopes: []string{"admin"}}, connect.CodeInvalidArgument, "invalid name: "},
	} {
		_, err := adminClient(s, plain).ImportKey(t.Context(), c.req)
		require.Equal(t, c.code, connect.CodeOf(err), "%v", err)
		require.ErrorContains(t, err, c.msg)
	}
}
