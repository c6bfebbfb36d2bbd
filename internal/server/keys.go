package server

import (
	"context"
	"errors"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/apiview"
	"github.com/hopperjobs/hopper/internal/store"
)

func (a *adminService) keys() (store.KeyStore, error) {
	if a.s.cfg.Keys == nil {
		return nil, connect.NewError(connect.CodeUnimplemented, "this server manages no API keys")
	}
	return a.s.cfg.Keys, nil
}

// keysChanged applies a key created, imported or revoked through this server at once, before
// the call answers: the authenticator reads the keys again, and the job streams of keyID ("":
// those opened without a key, once a key exists) end with cause, pushed nothing more
// (contract 16: their unreported jobs go back to the queue at once, closeStream). Keys changed
// elsewhere (another node, `hopper keys` on the database) take effect within keyRecheck.
func (s *Server) keysChanged(keyID string, cause error) {
	if _, ok := s.cfg.Auth.(Revalidator); !ok {
		return // no keys are checked: nothing changes for the streams
	}
	if c, ok := s.cfg.Auth.(interface{ Changed() }); ok {
		c.Changed()
	}
	s.reg.endStreams(keyID, cause)
}

func toKey(k *store.APIKey) *hopperv1.APIKey {
	return &hopperv1.APIKey{Id: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: apiview.Time(k.CreatedAt),
		LastUsedAt: apiview.Time(k.LastUsedAt), RevokedAt: apiview.Time(k.RevokedAt)}
}

func (a *adminService) CreateKey(ctx context.Context, req *hopperv1.CreateKeyRequest) (*hopperv1.CreateKeyResponse, error) {
	keys, err := a.keys()
	if err != nil {
		return nil, err
	}
	scopes, err := apikey.ParseScopes(req.GetScopes())
	if err != nil {
		return nil, invalidArg("scopes", err.Error())
	}
	plaintext, k, err := apikey.New(req.GetName(), scopes)
	if err != nil {
		return nil, invalidArg("name", err.Error())
	}
	if err := keys.KeyCreate(ctx, k); err != nil {
		if errors.Is(err, store.ErrDuplicate) {
			return nil, connect.Errorf(connect.CodeAlreadyExists, "an API key named %q exists: revoke it first, or choose another name", req.GetName())
		}
		return nil, rpcError("create key", err)
	}
	a.s.keysChanged("", errKeyRequired) // a live key exists: keyless callers are refused from now on
	return &hopperv1.CreateKeyResponse{Key: toKey(k), Plaintext: plaintext}, nil
}

func (a *adminService) ListKeys(ctx context.Context, _ *hopperv1.ListKeysRequest) (*hopperv1.ListKeysResponse, error) {
	keys, err := a.keys()
	if err != nil {
		return nil, err
	}
	all, err := keys.KeyList(ctx)
	if err != nil {
		return nil, rpcError("list keys", err)
	}
	out := &hopperv1.ListKeysResponse{Keys: make([]*hopperv1.APIKey, len(all))}
	for i, k := range all {
		out.Keys[i] = toKey(k)
	}
	return out, nil
}

func (a *adminService) RevokeKey(ctx context.Context, req *hopperv1.RevokeKeyRequest) (*hopperv1.RevokeKeyResponse, error) {
	keys, err := a.keys()
	if err != nil {
		return nil, err
	}
	if err := checkKeyRef(req.GetIdOrName()); err != nil {
		return nil, rpcError("revoke key", err)
	}
	k, err := keys.KeyRevoke(ctx, req.GetIdOrName())
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, connect.Errorf(connect.CodeNotFound, "no API key has id or name %q", req.GetIdOrName())
		}
		return nil, rpcError("revoke key", err)
	}
	a.s.keysChanged(k.ID, errKeyRevoked)
	return &hopperv1.RevokeKeyResponse{Key: toKey(k)}, nil
}

func (a *adminService) ImportKey(ctx context.Context, req *hopperv1.ImportKeyRequest) (*hopperv1.ImportKeyResponse, error) {
	keys, err := a.keys()
	if err != nil {
		return nil, err
	}
	scopes, err := apikey.ParseScopes(req.GetScopes())
	if err != nil {
		return nil, invalidArg("scopes", err.Error())
	}
	k, created, err := apikey.Import(ctx, keys, req.GetKey(), req.GetName(), scopes)
	if ce, ok := errors.AsType[*apikey.ConflictError](err); ok {
		return nil, connect.NewError(connect.CodeAlreadyExists, ce.Error())
	}
	switch {
	case errors.Is(err, apikey.ErrMalformed):
		return nil, invalidArg("key", err.Error())
	case errors.Is(err, apikey.ErrInvalidName):
		return nil, invalidArg("name", err.Error())
	case err != nil:
		return nil, rpcError("import key", err)
	}
	if created {
		a.s.keysChanged("", errKeyRequired) // a live key exists: keyless callers are refused from now on
	}
	return &hopperv1.ImportKeyResponse{Key: toKey(k), Created: created}, nil
}

// checkKeyRef refuses, naming the field, an id_or_name that no key can have: an id is 12
// characters of the key alphabet and a name is what apikey.ValidateName takes, which covers
// ids too. Without it a NUL byte reaches PostgreSQL, which answers in SQL's words.
func checkKeyRef(idOrName string) error {
	switch {
	case idOrName == "":
		return &hopper.ValidationError{Field: "id_or_name", Reason: "is required"}
	case apikey.ValidateName(idOrName) != nil:
		return &hopper.ValidationError{Field: "id_or_name",
			Reason: "no key has such an id or name (1 to 64 letters, digits, '.', '_' or '-')"}
	}
	return nil
}
