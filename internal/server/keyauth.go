package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/store"
)

// KeyAuth authenticates requests by API key ("Authorization: Bearer hop_…" or
// "X-Api-Key: hop_…") against a store's keys. It records each key's last use at most once
// a minute.
type KeyAuth struct {
	Keys store.KeyStore
	Now  func() time.Time

	mu      sync.Mutex
	touched map[string]time.Time
}

// touchEvery bounds how often a key's last use is written.
const touchEvery = time.Minute

// Authenticate implements Authenticator.
func (a *KeyAuth) Authenticate(ctx context.Context, r *http.Request) (*Principal, error) {
	plaintext := r.Header.Get("X-Api-Key")
	if h := r.Header.Get("Authorization"); plaintext == "" && h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return nil, fmt.Errorf("%w: the Authorization header must be \"Bearer <API key>\"", ErrUnauthenticated)
		}
		plaintext = strings.TrimSpace(token)
	}
	if plaintext == "" {
		return nil, fmt.Errorf("%w: an API key is required (Authorization: Bearer <key>)", ErrUnauthenticated)
	}
	k, err := apikey.Authenticate(ctx, a.Keys, plaintext)
	switch {
	case errors.Is(err, apikey.ErrMalformed), errors.Is(err, apikey.ErrInvalid), errors.Is(err, apikey.ErrRevoked):
		return nil, fmt.Errorf("%w: invalid or revoked API key", ErrUnauthenticated)
	case err != nil:
		return nil, err
	}
	a.touch(ctx, k.ID)
	p := &Principal{KeyID: k.ID}
	for _, s := range k.Scopes {
		p.Scopes = append(p.Scopes, Scope(s))
	}
	return p, nil
}

func (a *KeyAuth) touch(ctx context.Context, id string) {
	now := time.Now()
	if a.Now != nil {
		now = a.Now()
	}
	a.mu.Lock()
	if a.touched == nil {
		a.touched = map[string]time.Time{}
	}
	last, ok := a.touched[id]
	if ok && now.Sub(last) < touchEvery {
		a.mu.Unlock()
		return
	}
	a.touched[id] = now
	a.mu.Unlock()
	_ = a.Keys.KeyTouch(context.WithoutCancel(ctx), id, now) // best effort: last use is informational
}
