package apikey

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hopperjobs/hopper/internal/store"
)

// Scope is something a key may do. A key holds one or more.
type Scope string

// The scopes. Admin implies the others.
const (
	// ScopeEnqueue: add jobs (Enqueue, EnqueueBatch, the async HTTP endpoint).
	ScopeEnqueue Scope = "enqueue"
	// ScopeWork: run jobs (Activate, StreamJobs, Complete, Fail, ExtendLease, Heartbeat,
	// ReportProgress).
	ScopeWork Scope = "work"
	// ScopeRead: look without changing (Get, List, Events, queue and worker listings).
	ScopeRead Scope = "read"
	// ScopeAdmin: everything, including pause and resume, cancel and managing keys.
	ScopeAdmin Scope = "admin"
)

// scopes lists every scope in the order they are shown.
var scopes = []Scope{ScopeEnqueue, ScopeWork, ScopeRead, ScopeAdmin}

// ErrInvalidScope: a scope name that is not one of the four, or no scope at all.
var ErrInvalidScope = errors.New("invalid scope")

// ParseScope returns the scope named s (exactly, lowercase), or an error wrapping
// ErrInvalidScope that lists the valid ones.
func ParseScope(s string) (Scope, error) {
	if slices.Contains(scopes, Scope(s)) {
		return Scope(s), nil
	}
	return "", fmt.Errorf("%w %q (want enqueue, work, read or admin)", ErrInvalidScope, s)
}

// ParseScopes parses scope names, drops repeats and returns them in the canonical order
// (enqueue, work, read, admin). At least one is required.
func ParseScopes(names []string) ([]Scope, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: none given (want one or more of enqueue, work, read, admin)", ErrInvalidScope)
	}
	seen := map[Scope]bool{}
	for _, n := range names {
		s, err := ParseScope(n)
		if err != nil {
			return nil, err
		}
		seen[s] = true
	}
	var out []Scope
	for _, s := range scopes {
		if seen[s] {
			out = append(out, s)
		}
	}
	return out, nil
}

// ScopeNames is scopes as the store and the API name them, in the same order.
func ScopeNames(scopes []Scope) []string {
	out := make([]string, len(scopes))
	for i, s := range scopes {
		out[i] = string(s)
	}
	return out
}

// Allows reports whether k may do what scope s covers: k is live and holds s or admin. A
// revoked key allows nothing. Unknown stored scope names are ignored.
func Allows(k *store.APIKey, s Scope) bool {
	if k == nil || k.Revoked() {
		return false
	}
	for _, held := range k.Scopes {
		if Scope(held) == s || Scope(held) == ScopeAdmin {
			return true
		}
	}
	return false
}
