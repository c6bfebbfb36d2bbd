package dashboard

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperui"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// served is hopper serve's dashboard: the server with API keys (open on loopback until the
// first key exists), its client on a fake clock and its store.
type served struct {
	client *hopper.Client
	store  *sqlitestore.Store
	clock  *clock.Fake
	ts     *httptest.Server
	url    string
}

func serveWithKeys(t *testing.T, useTLS bool) *served {
	t.Helper()
	clk := clock.NewFake(time.Now())
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: t.TempDir() + "/hopper.db", Clock: clk})
	require.NoError(t, err)
	c, err := hopper.NewClient(hopper.Config{Store: st, Clock: clk, WorkerID: "serve-node"})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	srv, err := server.New(server.Config{Client: c, Keys: st,
		Auth: &server.KeyAuth{Keys: st, OpenWithoutKeys: true, Now: clk.Now}})
	require.NoError(t, err)
	ts := httptest.NewUnstartedServer(srv)
	if useTLS {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(func() {
		ts.Close()
		srv.Shutdown()
		stoptest.Within(t, c, 10*time.Second)
		require.NoError(t, st.Close())
	})
	return &served{client: c, store: st, clock: clk, ts: ts, url: ts.URL + "/ui"}
}

// key creates an API key with scope and returns it; the server notices that keys exist once
// its clock moves past its next look.
func (s *served) key(t *testing.T, name string, scope apikey.Scope) string {
	t.Helper()
	plain, k, err := apikey.New(name, []apikey.Scope{scope})
	require.NoError(t, err)
	require.NoError(t, s.store.KeyCreate(t.Context(), k))
	s.clock.Advance(3 * time.Second)
	return plain
}

// A read-only key sees every page and can change nothing, even by posting the forms itself;
// an admin key can; before any key exists the dashboard is open to this machine.
func TestReadOnlyKeyChangesNothing(t *testing.T) {
	s := serveWithKeys(t, false)
	tb := newTab(t)
	res, err := s.client.Enqueue(t.Context(), hopper.RawArgs{KindName: "report", JSON: []byte(`{}`)}, &hopper.InsertOpts{Queue: "mail"})
	require.NoError(t, err)
	job := res.Job

	tb.open(s.ts.URL + "/") // / leads to the dashboard, open while no key exists
	require.Equal(t, "Overview", tb.text("h1"))
	require.Contains(t, tb.text("header .who"), "no API keys yet")

	read := s.key(t, "viewer", apikey.ScopeRead)
	admin := s.key(t, "boss", apikey.ScopeAdmin)
	enqueue := s.key(t, "producer", apikey.ScopeEnqueue)

	tb.open(s.url + "/queues")
	require.Equal(t, "Log in", tb.text("h1"), "keys exist: log in first")
	for _, bad := range []string{"hop_nonsense", enqueue} {
		tb.run(chromedpSetKey(bad))
		tb.click(`.login button`)
		require.Contains(t, tb.text("#error"), "refused")
		tb.expectStatus(401)
	}

	tb.run(chromedpSetKey(read))
	tb.click(`.login button`)
	require.Equal(t, "Overview", tb.text("h1"))
	require.Contains(t, tb.text("header .who"), "viewer (read only)")
	for _, page := range []string{"/", "/jobs", "/jobs/" + job.ID, "/queues", "/dead-letters", "/schedules", "/workers"} {
		tb.open(s.url + page)
		require.Zero(t, eval[int](tb, `document.querySelectorAll('main form[method=post]').length`), "no change offered on %s", page)
		require.Empty(t, tb.consoleErrors(), page)
	}
	// Posting what an admin's page would post, from the page itself (same origin, with the
	// session cookie), is refused.
	for _, post := range []struct{ path, body string }{
		{"/queues/mail/pause", ""},
		{"/jobs/" + job.ID + "/cancel", ""},
		{"/jobs/bulk", "action=cancel&select=" + job.ID},
		{"/dead-letters/replay", "limit=10"},
	} {
		status := await[int](tb, `fetch(`+jsString(s.url+post.path)+`, {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: `+jsString(post.body)+`}).then(r => r.status)`)
		require.Equal(t, http.StatusForbidden, status, post.path)
	}
	tb.consoleErrors() // the console reports the refusals
	require.False(t, queueOf(t, s.client, "mail").Paused)
	got, err := s.client.Get(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.StateQueued, got.State)

	tb.click(`header .who button`) // log out
	require.Equal(t, "Log in", tb.text("h1"))
	tb.run(chromedpSetKey(admin))
	tb.click(`.login button`)
	tb.open(s.url + "/queues")
	tb.click(`#queue-mail button.pause`)
	require.True(t, queueOf(t, s.client, "mail").Paused, "an admin key may change things")
}

func chromedpSetKey(key string) chromedpAction {
	return setValue(`.login input[name=key]`, key)
}

// The session cookie is HttpOnly, SameSite=Strict and, under TLS, Secure; every answer has
// the strict CSP; a cross-site POST is refused even with a valid session; a revoked key's
// session ends; bad input is a 4xx page naming the field, never a 500.
func TestSessionsAndHeaders(t *testing.T) {
	t.Parallel()
	s := serveWithKeys(t, true)
	admin := s.key(t, "boss", apikey.ScopeAdmin)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := s.ts.Client()
	hc.Jar = jar
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // test server

	resp, err := hc.PostForm(s.url+"/login", url.Values{"key": {admin}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	cookie := resp.Header.Get("Set-Cookie")
	for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Secure", "Path=/ui/"} {
		require.Contains(t, cookie, attr)
	}

	get := func(path string) (int, string, http.Header) {
		t.Helper()
		resp, err := hc.Get(s.url + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body), resp.Header
	}
	status, _, h := get("/")
	require.Equal(t, http.StatusOK, status)
	csp := h.Get("Content-Security-Policy")
	require.Contains(t, csp, "script-src 'self'")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.NotContains(t, csp, "unsafe-inline")
	require.NotContains(t, csp, "unsafe-eval")

	for path, field := range map[string]string{
		"/jobs?limit=100000":   "limit",
		"/jobs?state=lost":     "states",
		"/jobs?from=yesterday": "from",
		"/jobs?cursor=zzz":     "cursor",
		"/jobs/%00bad":         "id",
	} {
		status, body, _ := get(path)
		require.Equal(t, http.StatusBadRequest, status, path)
		require.Contains(t, body, "Invalid "+field, path)
	}
	status, body, _ := get("/jobs/01a20d70-0000-7000-8000-000000000000")
	require.Equal(t, http.StatusNotFound, status)
	require.Contains(t, body, "Not found")

	// A POST from another site, with the session cookie, is refused before it does anything.
	req, err := http.NewRequest(http.MethodPost, s.url+"/queues/mail/pause", nil)
	require.NoError(t, err)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	qs, err := s.client.Queues(t.Context())
	require.NoError(t, err)
	for _, q := range qs {
		require.False(t, q.Paused)
	}
	req, err = http.NewRequest(http.MethodPost, s.url+"/queues/mail/pause", nil)
	require.NoError(t, err)
	req.Header.Set("Origin", "https://evil.example")
	resp, err = hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)

	// Revoking the key ends the session at its next check (another key still lives: with
	// none, the dashboard would be open to this machine again).
	s.key(t, "other", apikey.ScopeRead)
	_, err = s.store.KeyRevoke(t.Context(), "boss")
	require.NoError(t, err)
	s.clock.Advance(hopperui.SessionCheck)
	status, _, h = get("/")
	require.Equal(t, http.StatusSeeOther, status)
	require.True(t, strings.HasSuffix(h.Get("Location"), "/ui/login"))
}

func queueOf(t *testing.T, c *hopper.Client, name string) *hopper.QueueInfo {
	t.Helper()
	qs, err := c.Queues(t.Context())
	require.NoError(t, err)
	for _, q := range qs {
		if q.Name == name {
			return q
		}
	}
	return &hopper.QueueInfo{Name: name}
}
