package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
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
	// OpenWithoutKeys lets requests without a key through, with every scope, while no live
	// key exists (checked at most every few seconds): for a server on a loopback address,
	// which becomes closed as soon as the first key is created.
	OpenWithoutKeys bool

	mu      sync.Mutex
	touched map[string]time.Time
	checked time.Time // when anyLive was last read
	anyLive bool
	valid   map[string]validity // StillValid's answers, by key id
}

// validity is what StillValid last found of a key, and when.
type validity struct {
	at    time.Time
	valid bool
}

// liveCheckEvery bounds how often OpenWithoutKeys looks for live keys.
const liveCheckEvery = 2 * time.Second

// open reports whether no live key exists (so a keyless request passes).
func (a *KeyAuth) open(ctx context.Context) (bool, error) {
	now := a.now()
	a.mu.Lock()
	if !a.checked.IsZero() && now.Sub(a.checked) < liveCheckEvery {
		open := !a.anyLive
		a.mu.Unlock()
		return open, nil
	}
	a.mu.Unlock()
	keys, err := a.Keys.KeyList(ctx)
	if err != nil {
		return false, fmt.Errorf("read API keys: %w", err)
	}
	live := false
	for _, k := range keys {
		live = live || !k.Revoked()
	}
	a.mu.Lock()
	a.checked, a.anyLive = now, live
	a.mu.Unlock()
	return !live, nil
}

func (a *KeyAuth) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// keyless returns anonymous for a request made on this machine while no live key exists,
// nil when keys exist, and an error wrapping ErrUnauthenticated for a request from elsewhere
// (another host, a web page of another site) while none does.
func (a *KeyAuth) keyless(ctx context.Context, r *http.Request) (*Principal, error) {
	open, err := a.open(ctx)
	if err != nil || !open {
		return nil, err
	}
	if why := notLocal(r); why != "" {
		return nil, fmt.Errorf("%w: without API keys this server answers only requests made on this machine, "+
			"not from web pages (%s)", ErrUnauthenticated, why)
	}
	return anonymous, nil
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
	if plaintext == "" && a.OpenWithoutKeys {
		p, err := a.keyless(ctx, r)
		if p != nil || err != nil {
			return p, err
		}
	}
	if plaintext == "" {
		return nil, fmt.Errorf("%w: an API key is required (Authorization: Bearer <key>)", ErrUnauthenticated)
	}
	return a.check(ctx, plaintext)
}

// check authenticates one key: the API's headers and the dashboard's login page both call it.
func (a *KeyAuth) check(ctx context.Context, plaintext string) (*Principal, error) {
	k, err := apikey.Authenticate(ctx, a.Keys, plaintext)
	switch {
	case errors.Is(err, apikey.ErrMalformed), errors.Is(err, apikey.ErrInvalid), errors.Is(err, apikey.ErrRevoked):
		return nil, fmt.Errorf("%w: invalid or revoked API key", ErrUnauthenticated)
	case err != nil:
		return nil, err
	}
	a.touch(ctx, k.ID)
	p := &Principal{KeyID: k.ID, Name: k.Name}
	for _, s := range k.Scopes {
		p.Scopes = append(p.Scopes, Scope(s))
	}
	return p, nil
}

func (a *KeyAuth) touch(ctx context.Context, id string) {
	now := a.now()
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

// StillValid implements Revalidator: the key exists and is not revoked; for a caller that came
// without a key, the server still lets such callers in (no live key exists). Answers are read
// at most every few seconds per key, however many streams ask.
func (a *KeyAuth) StillValid(ctx context.Context, p *Principal) (bool, error) {
	if p.KeyID == "" {
		if !a.OpenWithoutKeys {
			return false, nil
		}
		return a.open(ctx)
	}
	now := a.now()
	a.mu.Lock()
	v, ok := a.valid[p.KeyID]
	a.mu.Unlock()
	if ok && now.Sub(v.at) < liveCheckEvery {
		return v.valid, nil
	}
	k, err := a.Keys.KeyLookup(ctx, p.KeyID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		v = validity{at: now}
	case err != nil:
		return false, err
	default:
		v = validity{at: now, valid: !k.Revoked()}
	}
	a.mu.Lock()
	if a.valid == nil {
		a.valid = map[string]validity{}
	}
	a.valid[p.KeyID] = v
	a.mu.Unlock()
	return v.valid, nil
}

// Changed tells the authenticator that keys were created or revoked (through this server):
// its next checks read the keys instead of answering from what it read last.
func (a *KeyAuth) Changed() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.checked = time.Time{}
	clear(a.valid)
}

// notLocal says why a keyless request may not come from a program on this machine: a web page
// on another site (the browser sends Origin or Sec-Fetch-Site; a form or fetch to localhost
// must not enqueue or read jobs) or a name that is not a loopback address in Host (DNS
// rebinding). It returns "" for a local request.
func notLocal(r *http.Request) string {
	if !loopbackHost(r.Host) {
		return "Host " + r.Host + " is not a loopback address"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "Sec-Fetch-Site " + site
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !loopbackHost(u.Host) {
			return "Origin " + origin
		}
	}
	return ""
}

// loopbackHost reports whether host (with or without a port) names this machine.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
