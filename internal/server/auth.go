package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"connectrpc.com/connect/v2"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apierr"
)

// ErrUnauthenticated: a request without valid credentials.
var ErrUnauthenticated = errors.New("unauthenticated")

// anonymous is the caller when the server runs without keys (loopback only).
var anonymous = &Principal{KeyID: "", Scopes: []Scope{ScopeAdmin}}

type principalKey struct{}

// principalFrom returns the authenticated caller of a request.
func principalFrom(ctx context.Context) *Principal {
	if p, ok := ctx.Value(principalKey{}).(*Principal); ok {
		return p
	}
	return anonymous
}

// authorize lets a request through when its caller holds scope.
func (s *Server) authorize(scope Scope, h http.Handler) http.Handler {
	if scope == ScopePublic || scope == ScopeDashboard {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := anonymous
		if s.cfg.Auth != nil {
			var err error
			p, err = s.cfg.Auth.Authenticate(r.Context(), r)
			switch {
			case errors.Is(err, ErrUnauthenticated):
				w.Header().Set("WWW-Authenticate", `Bearer realm="hopper"`)
				s.refuse(w, r, http.StatusUnauthorized, connect.CodeUnauthenticated, err.Error())
				return
			case errors.Is(err, hopper.ErrUnavailable):
				w.Header().Set("Retry-After", apierr.RetryAfter)
				s.refuse(w, r, http.StatusServiceUnavailable, connect.CodeUnavailable, apierr.UnavailableMessage)
				return
			case err != nil:
				id := apierr.RequestID(w, r)
				s.log.Error("authenticate request", "request_id", id, "err", err)
				s.refuse(w, r, http.StatusInternalServerError, connect.CodeInternal, apierr.InternalMessage(id))
				return
			}
		}
		if !p.Allows(scope) {
			s.refuse(w, r, http.StatusForbidden, connect.CodePermissionDenied,
				fmt.Sprintf("this API key lacks the %q scope", scope))
			return
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}

// limitBody refuses bodies over MaxBodyBytes with 413: at once when Content-Length says so,
// else when reading passes the limit.
func (s *Server) limitBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.cfg.MaxBodyBytes {
			s.refuse(w, r, http.StatusRequestEntityTooLarge, connect.CodeResourceExhausted,
				fmt.Sprintf("request body is %d bytes, more than the limit of %d", r.ContentLength, s.cfg.MaxBodyBytes))
			return
		}
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		}
		h.ServeHTTP(w, r)
	})
}

// limiter counts what each key holds open (streams, waiting long polls).
type limiter struct {
	mu   sync.Mutex
	open map[string]int
}

func newLimiter() *limiter { return &limiter{open: map[string]int{}} }

// acquire takes one of max slots of kind for key; release gives it back.
func (l *limiter) acquire(kind, key string, max int) (release func(), ok bool) {
	k := kind + "\x00" + key
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[k] >= max {
		return nil, false
	}
	l.open[k]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			l.open[k]--
			if l.open[k] == 0 {
				delete(l.open, k)
			}
			l.mu.Unlock()
		})
	}, true
}

// retryAfterSeconds is the Retry-After a caller over its stream or poll limit gets.
const retryAfterSeconds = 1

var retryAfter = strconv.Itoa(retryAfterSeconds)
