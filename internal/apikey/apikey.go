// Package apikey makes and checks Hopper's API keys. A key reads hop_<id>_<secret>: the id
// (12 characters) is public and finds the key's record in a store.KeyStore; the secret is 32
// random bytes, of which only a SHA-256 hash is stored. Both parts use lowercase base32
// (a–z, 2–7), so a key is one word to copy and needs no escaping in headers or shells.
package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"

	"github.com/hopperjobs/hopper/internal/store"
)

// Prefix starts every key, so a leaked one is recognizable (secret scanners, logs).
const Prefix = "hop_"

const (
	alphabet    = "abcdefghijklmnopqrstuvwxyz234567"
	idLen       = 12 // 60 random bits: collisions are negligible and KeyCreate refuses one
	secretBytes = 32
	maxNameLen  = 64
)

var (
	encoding  = base32.NewEncoding(alphabet).WithPadding(base32.NoPadding)
	secretLen = encoding.EncodedLen(secretBytes)
)

// Errors callers tell apart. Their messages never contain a key's secret.
var (
	// ErrMalformed: the text is not shaped like a key (prefix, lengths, alphabet).
	ErrMalformed = errors.New("malformed API key")
	// ErrInvalid: no key has that id, or the secret is wrong.
	ErrInvalid = errors.New("invalid API key")
	// ErrRevoked: the key is genuine but was revoked.
	ErrRevoked = errors.New("API key revoked")
	// ErrInvalidName: a key name New refuses.
	ErrInvalidName = errors.New("invalid API key name")
)

// New makes a key named name (1 to 64 letters, digits, '.', '_' or '-') with the given
// scopes (at least one; see ParseScopes). It returns the plaintext key, to show once, and the
// record to store with store.KeyStore.KeyCreate, which holds only a hash of the secret. Errors
// wrap ErrInvalidName or ErrInvalidScope.
func New(name string, scopes []Scope) (plaintext string, key *store.APIKey, err error) {
	if err := ValidateName(name); err != nil {
		return "", nil, err
	}
	names := ScopeNames(scopes)
	if _, err := ParseScopes(names); err != nil {
		return "", nil, err
	}
	id, secret, err := random()
	if err != nil {
		return "", nil, fmt.Errorf("new API key %q: %w", name, err)
	}
	key = &store.APIKey{ID: id, Name: name, Hash: hash(secret), Scopes: names}
	return format(id, secret), key, nil
}

// Generate returns a new plaintext key, stored nowhere: for a secret manager, to be given to
// the server later with Import (`hopper keys generate`, then `hopper keys import` or
// `hopper serve --bootstrap-key-file`). It fails only when the system's random source does.
func Generate() (string, error) {
	id, secret, err := random()
	if err != nil {
		return "", fmt.Errorf("generate API key: %w", err)
	}
	return format(id, secret), nil
}

// format writes a key from its parts.
func format(id, secret string) string { return Prefix + id + "_" + secret }

// random returns a new id and secret from crypto/rand.
func random() (id, secret string, err error) {
	b := make([]byte, idLen+secretBytes)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	ids := make([]byte, idLen)
	for i := range ids {
		ids[i] = alphabet[b[i]%32] // 256 is a multiple of 32: no bias
	}
	return string(ids), encoding.EncodeToString(b[idLen:]), nil
}

// ValidateName returns nil for a usable key name, else an error wrapping ErrInvalidName. Names
// are restricted so they print safely in tables and logs and need no quoting in a shell.
func ValidateName(name string) error {
	if name == "" || len(name) > maxNameLen || strings.IndexFunc(name, notNameChar) >= 0 {
		return fmt.Errorf("%w %q: use 1 to %d letters, digits, '.', '_' or '-'", ErrInvalidName, name, maxNameLen)
	}
	return nil
}

func notNameChar(c rune) bool {
	return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-')
}

// Parse splits a plaintext key into its id and secret, checking their shape only. Errors wrap
// ErrMalformed and never quote the secret.
func Parse(plaintext string) (id, secret string, err error) {
	rest, ok := strings.CutPrefix(plaintext, Prefix)
	if !ok {
		return "", "", fmt.Errorf("%w: it does not start with %q", ErrMalformed, Prefix)
	}
	id, secret, ok = strings.Cut(rest, "_")
	switch {
	case !ok:
		return "", "", fmt.Errorf("%w: want %s<id>_<secret>", ErrMalformed, Prefix)
	case len(id) != idLen || !inAlphabet(id):
		return "", "", fmt.Errorf("%w: the id is not %d characters of a–z, 2–7", ErrMalformed, idLen)
	case len(secret) != secretLen || !inAlphabet(secret):
		return "", "", fmt.Errorf("%w: the secret of key %s is not %d characters of a–z, 2–7", ErrMalformed, id, secretLen)
	}
	return id, secret, nil
}

func inAlphabet(s string) bool {
	for i := range len(s) {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

// Verify reports whether secret is k's, comparing hashes in constant time. It does not look at
// RevokedAt: see Authenticate.
func Verify(k *store.APIKey, secret string) bool {
	return subtle.ConstantTimeCompare(hash(secret), k.Hash) == 1
}

// hash is what is stored of a secret. A single SHA-256 is enough here: slow, salted hashes
// (bcrypt, argon2) exist to make guessing low-entropy passwords expensive, but a secret is
// 256 random bits, which no amount of guessing finds, with or without the hash. A fast hash
// also keeps checking a key cheap on every request.
func hash(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

// Authenticate checks a presented plaintext key against keys and returns its record. Errors
// wrap ErrMalformed, ErrInvalid (unknown id or wrong secret), ErrRevoked (checked after the
// secret, so only the key's holder learns it was revoked) or the store's error. A server should
// answer the first three alike to the client and keep the detail for its log.
func Authenticate(ctx context.Context, keys store.KeyStore, plaintext string) (*store.APIKey, error) {
	id, secret, err := Parse(plaintext)
	if err != nil {
		return nil, err
	}
	k, err := keys.KeyLookup(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: no key has id %s", ErrInvalid, id)
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate API key %s: %w", id, err)
	}
	if !Verify(k, secret) {
		return nil, fmt.Errorf("%w: wrong secret for key %s", ErrInvalid, id)
	}
	if k.Revoked() {
		return nil, fmt.Errorf("key %s (%s): %w", id, k.Name, ErrRevoked)
	}
	return k, nil
}
