package server_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// FuzzAuthenticate feeds KeyAuth any Authorization, X-Api-Key, Host, Origin and
// Sec-Fetch-Site, against a store holding one key and, with the open flag, against one
// holding none (the loopback server before its first key). "$KEY" in a header stands for the
// stored key and "$ID" for its id, so that the fuzzer works around a real key. It never
// panics; a refusal is ErrUnauthenticated (a 401, never a 500); a key is accepted only when
// it is sent exactly (in X-Api-Key, or after "Bearer " give or take white space); and no key
// is needed only on the open store, for a request from this machine.
func FuzzAuthenticate(f *testing.F) {
	for _, s := range []struct {
		authorization, apiKey, host, origin, site string
		open                                      bool
	}{
		{"Bearer $KEY", "", "127.0.0.1:7070", "", "", false},
		{"bearer  $KEY \t", "", "", "", "", false},
		{"", "$KEY", "", "", "", false},
		{"Bearer $KEY", "garbage", "", "", "", false},
		{"Bearer $KEYx", "", "", "", "", false},
		{"Bearer hop_$ID_", "", "", "", "", false},
		{"Basic $KEY", "", "", "", "", false},
		{"$KEY", "", "", "", "", false},
		{"Bearer $KEY\x00", "", "", "", "", false},
		{"Bearer \u00a0$KEY\u0085", "", "", "", "", false},
		{"", "", "localhost:7070", "http://localhost:3000", "same-origin", true},
		{"", "", "[::1]:7070", "http://[::1]", "none", true},
		{"", "", "127.0.0.1", "http://evil.example", "", true},
		{"", "", "evil.example", "", "", true},
		{"", "", "127.0.0.1", "", "cross-site", true},
		{"", "", "127.0.0.1", "http://127.0.0.1:80%zz", "", true},
		{"", "", "127.0.0.1:7070", "http://localhost.", "", true},
	} {
		f.Add(s.authorization, s.apiKey, s.host, s.origin, s.site, s.open)
	}
	open := &server.KeyAuth{Keys: fuzzKeyStore(f), OpenWithoutKeys: true}
	keys := fuzzKeyStore(f)
	key, stored, err := apikey.New("fuzz", []apikey.Scope{apikey.ScopeRead})
	require.NoError(f, err)
	require.NoError(f, keys.KeyCreate(context.Background(), stored))
	closed := &server.KeyAuth{Keys: keys, OpenWithoutKeys: true}
	f.Fuzz(func(t *testing.T, authorization, apiKey, host, origin, site string, isOpen bool) {
		subst := strings.NewReplacer("$KEY", key, "$ID", stored.ID)
		r := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/", nil)
		r.Host = subst.Replace(host)
		for name, v := range map[string]string{"Authorization": authorization, "X-Api-Key": apiKey, "Origin": origin,
			"Sec-Fetch-Site": site} {
			if v != "" {
				r.Header[name] = []string{subst.Replace(v)}
			}
		}
		auth := closed
		if isOpen {
			auth = open
		}
		p, err := auth.Authenticate(t.Context(), r)
		if err != nil {
			require.ErrorIs(t, err, server.ErrUnauthenticated, "a bad credential is a 401, never a 500")
			return
		}
		if p.KeyID != "" {
			require.False(t, isOpen, "the open store holds no key")
			require.True(t, sentExactly(r, key), "accepted a key not sent exactly: %q", r.Header)
			require.Equal(t, stored.ID, p.KeyID)
			return
		}
		require.True(t, isOpen, "no key accepted while a key exists: %q", r.Header)
		require.Empty(t, r.Header.Get("X-Api-Key")+r.Header.Get("Authorization"), "a request with a key is checked")
		require.True(t, fromThisMachine(r), "a keyless request from elsewhere: Host %q, %q", r.Host, r.Header)
	})
}

// fuzzKeyStore is a SQLite store for API keys, for the whole fuzz run.
func fuzzKeyStore(f *testing.F) *sqlitestore.Store {
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Config{Path: f.TempDir() + "/keys.db"})
	require.NoError(f, err)
	f.Cleanup(func() { require.NoError(f, st.Close()) })
	return st
}

// sentExactly reports whether r carries key as docs/security.md says a key is sent.
func sentExactly(r *http.Request, key string) bool {
	if v := r.Header.Get("X-Api-Key"); v != "" {
		return v == key
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(token) == key
}

// fromThisMachine reports whether r names a loopback host and no other site.
func fromThisMachine(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !loopback(u.Host) {
			return false
		}
	}
	return loopback(r.Host)
}

func loopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}
