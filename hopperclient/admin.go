package hopperclient

import (
	"context"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/apispec"
)

// WorkerInfo is a remote worker as the server saw it (Workers).
type WorkerInfo = hoppertype.WorkerInfo

// StreamInfo is a job stream open on the server (Streams).
type StreamInfo = hoppertype.StreamInfo

// APIKey describes one of the server's API keys, never its secret (CreateKey, ImportKey,
// Keys, RevokeKey).
type APIKey = hoppertype.APIKey

// Workers returns the remote workers the server has seen lately (a stream open, a poll
// waiting, a recent activation), by name and queue. It needs the read scope.
func (c *Client) Workers(ctx context.Context) ([]*WorkerInfo, error) {
	res, err := c.admin.ListWorkers(ctx, &hopperv1.ListWorkersRequest{})
	if err != nil {
		return nil, callErr("list workers", err)
	}
	out := make([]*WorkerInfo, len(res.GetWorkers()))
	for i, w := range res.GetWorkers() {
		out[i] = apispec.FromWorker(w)
	}
	return out, nil
}

// Streams returns the job streams open on the server, oldest first, with their counters. It
// needs the read scope.
func (c *Client) Streams(ctx context.Context) ([]*StreamInfo, error) {
	res, err := c.admin.ListStreams(ctx, &hopperv1.ListStreamsRequest{})
	if err != nil {
		return nil, callErr("list streams", err)
	}
	out := make([]*StreamInfo, len(res.GetStreams()))
	for i, s := range res.GetStreams() {
		out[i] = apispec.FromStream(s)
	}
	return out, nil
}

// CreateKey creates an API key named name (1 to 64 letters, digits, '.', '_' or '-'; unique
// among keys not revoked) with scopes ("enqueue", "work", "read", "admin"; at least one), and
// returns the key to give its user, which cannot be shown again, and its description. A
// name in use is an error wrapping hopper.ErrDuplicate; a bad name or scope a
// *hopper.ValidationError. It needs the admin scope, and a server that manages keys.
func (c *Client) CreateKey(ctx context.Context, name string, scopes ...string) (plaintext string, key *APIKey, err error) {
	res, err := c.admin.CreateKey(ctx, &hopperv1.CreateKeyRequest{Name: name, Scopes: scopes})
	if err != nil {
		return "", nil, callErr("create API key "+name, err)
	}
	return res.GetPlaintext(), apispec.FromAPIKey(res.GetKey()), nil
}

// ImportKey stores plaintext, a key made elsewhere (`hopper keys generate`, or any tool
// following the format of docs/security.md), under name with scopes, as CreateKey would
// store a key it made: the server keeps only its hash. Importing a key that is stored already
// under that name with those scopes changes nothing and returns it with created false. A
// malformed key, a bad name or scope is a *hopper.ValidationError naming the field ("key",
// "name", "scopes"); a key whose id is another key's, that is stored under another name or
// with other scopes, or was revoked (never imported again), or a name a live key of another
// id has, is an error wrapping hopper.ErrDuplicate. It needs the admin scope, and a server
// that manages keys. The error never holds the key's secret.
func (c *Client) ImportKey(ctx context.Context, plaintext, name string, scopes ...string) (key *APIKey, created bool, err error) {
	res, err := c.admin.ImportKey(ctx, &hopperv1.ImportKeyRequest{Key: plaintext, Name: name, Scopes: scopes})
	if err != nil {
		return nil, false, callErr("import API key "+name, err)
	}
	return apispec.FromAPIKey(res.GetKey()), res.GetCreated(), nil
}

// Keys returns every API key, revoked ones included, by name; never their secrets. It needs
// the admin scope.
func (c *Client) Keys(ctx context.Context) ([]*APIKey, error) {
	res, err := c.admin.ListKeys(ctx, &hopperv1.ListKeysRequest{})
	if err != nil {
		return nil, callErr("list API keys", err)
	}
	out := make([]*APIKey, len(res.GetKeys()))
	for i, k := range res.GetKeys() {
		out[i] = apispec.FromAPIKey(k)
	}
	return out, nil
}

// RevokeKey revokes the API key with id idOrName or, when no key has that id, the live key
// of that name, and returns it: the server refuses it from then on (its open streams end
// within a third of their lease). Revoking a revoked key changes nothing. An unknown key is
// an error wrapping hopper.ErrNotFound. It needs the admin scope.
func (c *Client) RevokeKey(ctx context.Context, idOrName string) (*APIKey, error) {
	res, err := c.admin.RevokeKey(ctx, &hopperv1.RevokeKeyRequest{IdOrName: idOrName})
	if err != nil {
		return nil, callErr("revoke API key "+idOrName, err)
	}
	return apispec.FromAPIKey(res.GetKey()), nil
}
