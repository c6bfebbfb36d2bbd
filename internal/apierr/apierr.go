// Package apierr is what Hopper's HTTP APIs (the RPC API and the async endpoints) answer when
// a request fails for a reason that is not the caller's: every request carries an id (the
// X-Request-Id header), an INTERNAL answer says only "internal error (request id …)" while
// the full error goes to the log with that id, and an unavailable store is UNAVAILABLE (503)
// with Retry-After, so a client can tell "retry later" from a bug.
package apierr

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"net/http"
	"strconv"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apiview"
)

// Header carries a request's id, on the response and, when a proxy sets one, on the request.
const Header = "X-Request-Id"

// UnavailableMessage is the message of an answer whose store is unavailable: it names no
// host, driver or SQL.
const UnavailableMessage = "job store unavailable; retry later"

// RetryAfterSeconds is the Retry-After of an answer whose store is unavailable.
const RetryAfterSeconds = 5

// RetryAfter is RetryAfterSeconds as a header value.
var RetryAfter = strconv.Itoa(RetryAfterSeconds)

// StoreRefusalMessage answers input the store refused though the checks at the door let it
// through: the store's own words are the driver's (SQL, encodings, SQLSTATE) and name no field.
const StoreRefusalMessage = apiview.StoreRefusalMessage

// StoreRefusal reports whether err is a store's refusal of a value (hopper.ErrInvalid) rather
// than one of Hopper's checks, which names the field (*hopper.ValidationError): its text must
// go to the log, and the caller gets StoreRefusalMessage.
func StoreRefusal(err error) bool {
	_, checked := errors.AsType[*hopper.ValidationError](err)
	return errors.Is(err, hopper.ErrInvalid) && !checked
}

// InternalMessage is the whole message of an INTERNAL answer to request id.
func InternalMessage(id string) string { return "internal error (request id " + id + ")" }

// NewID returns a new request id: 20 random characters of [A-Z2-7].
func NewID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)[:20]
}

// ValidID reports whether id, sent by a caller or a proxy, may stand as a request id: 1–64
// characters of letters, digits and "-._:" (a UUID, a trace id), nothing that could forge a
// log line.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == ':':
		default:
			return false
		}
	}
	return true
}

type idKey struct{}

// WithID returns ctx carrying request id.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, idKey{}, id)
}

// IDFrom returns the request id ctx carries, "" without one.
func IDFrom(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}

// WithRequestID gives every request an id before h sees it: the well-formed X-Request-Id it
// came with, else a new one. The id is set on the response's X-Request-Id and carried by the
// request's context (IDFrom).
func WithRequestID(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(Header)
		if !ValidID(id) {
			id = NewID()
		}
		w.Header().Set(Header, id)
		h.ServeHTTP(w, r.WithContext(WithID(r.Context(), id)))
	})
}

// RequestID returns r's id: the one WithRequestID gave it, else (a handler mounted without it)
// one made now and set on w's X-Request-Id.
func RequestID(w http.ResponseWriter, r *http.Request) string {
	if id := IDFrom(r.Context()); id != "" {
		return id
	}
	if id := w.Header().Get(Header); id != "" {
		return id
	}
	id := NewID()
	w.Header().Set(Header, id)
	return id
}
