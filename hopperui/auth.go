package hopperui

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"sync"
	"time"
)

// Authenticator checks who may use the dashboard. hopper serve's implementation checks the
// server's API keys: a key with the admin scope may change things, one with read may only look,
// others may not log in; keyless requests from this machine pass while no key exists.
type Authenticator interface {
	// Login checks an API key typed into the login page. An error wrapping ErrBadKey refuses
	// it (the page says so); any other error is the check's own failure.
	Login(ctx context.Context, key string) (*Principal, error)
	// StillValid reports whether a logged-in principal's key still holds (not revoked). The
	// dashboard asks at most every SessionCheck per session.
	StillValid(ctx context.Context, p *Principal) (bool, error)
	// Open returns who a request without a session is, or nil when it must log in.
	Open(ctx context.Context, r *http.Request) (*Principal, error)
}

// ErrBadKey is an Authenticator's refusal of a key: unknown, revoked, or without the scope the
// dashboard needs.
var ErrBadKey = errors.New("this API key cannot open the dashboard")

// Principal is who uses the dashboard.
type Principal struct {
	KeyID string // "" for an open dashboard
	Name  string // shown in the page and recorded as who replayed or canceled
	// CanWrite allows changes (pause, cancel, replay…); without it the dashboard is read-only.
	CanWrite bool
}

// SessionCheck is how often a session's key is checked again (revoked keys log out).
const SessionCheck = 30 * time.Second

// cookieName is the session cookie.
const cookieName = "hopper_session"

type session struct {
	p       *Principal
	expires time.Time
	checked time.Time
}

// sessions are kept in memory: a restart, or another node behind a load balancer, asks for
// the key again.
type sessions struct {
	now func() time.Time
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]*session
}

func newSessions(now func() time.Time, ttl time.Duration) *sessions {
	return &sessions{now: now, ttl: ttl, m: map[string]*session{}}
}

// create starts a session for p and returns its token.
func (s *sessions) create(p *Principal) string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	token := base64.RawURLEncoding.EncodeToString(b)
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, se := range s.m { // logins are rare: prune here rather than in a goroutine
		if !now.Before(se.expires) {
			delete(s.m, t)
		}
	}
	s.m[token] = &session{p: p, expires: now.Add(s.ttl), checked: now}
	return token
}

// get returns the live session of token, and whether its key is due for a check.
func (s *sessions) get(token string) (p *Principal, recheck bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	se, ok := s.m[token]
	if !ok {
		return nil, false
	}
	if !now.Before(se.expires) {
		delete(s.m, token)
		return nil, false
	}
	if now.Sub(se.checked) >= SessionCheck {
		se.checked = now
		return se.p, true
	}
	return se.p, false
}

func (s *sessions) remove(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, token)
}

// everyone is the user of a dashboard without an Authenticator.
var everyone = &Principal{Name: "dashboard", CanWrite: true}

// principal returns who makes r, or nil when r must log in.
func (h *Handler) principal(r *http.Request) (*Principal, error) {
	p, err := h.who(r)
	if p != nil && h.cfg.ReadOnly {
		cp := *p
		cp.CanWrite = false
		p = &cp
	}
	return p, err
}

func (h *Handler) who(r *http.Request) (*Principal, error) {
	if h.cfg.Auth == nil {
		return everyone, nil
	}
	if c, err := r.Cookie(cookieName); err == nil {
		p, recheck := h.sessions.get(c.Value)
		if p != nil && recheck {
			ok, err := h.cfg.Auth.StillValid(r.Context(), p)
			if err != nil {
				return nil, err
			}
			if !ok {
				h.sessions.remove(c.Value)
				p = nil
			}
		}
		if p != nil {
			return p, nil
		}
	}
	return h.cfg.Auth.Open(r.Context(), r)
}

type pageFunc func(w http.ResponseWriter, r *http.Request, v *view) error

// reader serves a page to anyone who may look; others go to the login page.
func (h *Handler) reader(fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := h.principal(r)
		if err != nil {
			h.internal(w, r, "check the session", err)
			return
		}
		if p == nil {
			if r.Header.Get("HX-Request") == "true" {
				// A live part's poll after the session ended: htmx would follow a redirect
				// and swap the login page into the part; this sends the whole page there.
				w.Header().Set("HX-Redirect", h.cfg.Prefix+"/login")
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, h.cfg.Prefix+"/login", http.StatusSeeOther)
			return
		}
		h.run(w, r, p, fn)
	})
}

// writer serves a change to whoever may make it: 401 without a session, 403 read-only.
func (h *Handler) writer(fn pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := h.principal(r)
		if err != nil {
			h.internal(w, r, "check the session", err)
			return
		}
		switch {
		case p == nil:
			h.fail(w, r, http.StatusUnauthorized, "Log in first.")
		case !p.CanWrite:
			h.fail(w, r, http.StatusForbidden, "Your API key may only look (read scope): this change was refused.")
		default:
			h.run(w, r, p, fn)
		}
	})
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "login", h.newView(r, nil, "Log in"))
}

// login checks the key and starts a session: an HttpOnly, SameSite=Strict cookie, Secure
// when the request came over TLS.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Auth == nil {
		http.Redirect(w, r, h.cfg.Prefix+"/", http.StatusSeeOther)
		return
	}
	key := r.PostFormValue("key")
	p, err := h.cfg.Auth.Login(r.Context(), key)
	if errors.Is(err, ErrBadKey) || (err == nil && p == nil) {
		v := h.newView(r, nil, "Log in")
		v.Error = "That key was refused: it is unknown, revoked, or has neither the read nor the admin scope."
		h.render(w, r, http.StatusUnauthorized, "login", v)
		return
	}
	if err != nil {
		h.internal(w, r, "check an API key", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: h.sessions.create(p), Path: h.cfg.Prefix + "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: int(h.cfg.SessionTTL.Seconds())})
	http.Redirect(w, r, h.cfg.Prefix+"/", http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		h.sessions.remove(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: h.cfg.Prefix + "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	http.Redirect(w, r, h.cfg.Prefix+"/login", http.StatusSeeOther)
}
