package server_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect/v2"
	"connectrpc.com/connect/v2/connecthttp"
	"connectrpc.com/grpcreflect/v2"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/gen/hopper/v1/hopperv1connect"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/remote"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// TestEveryRouteAnswersEveryKeyAsDocumented calls every RPC procedure (enumerated from the
// protobuf descriptors, so a new one cannot be missed) and every HTTP route the server
// registers, with a key of each scope alone, with no key, a revoked key and malformed keys, and
// checks the answers against the scope table of docs/security.md: a key without the scope gets
// 403 permission_denied, no or a bad key 401 unauthenticated, and a key with the scope gets
// past auth (the empty request may then fail for its own reasons). Every procedure is also
// called over gRPC, whose clients get these answers as gRPC statuses with their messages, and
// gRPC server reflection, public, answers every caller. Before the first key exists the
// server, on loopback, is open to keyless requests (the matrix of `hopper serve` there).
func TestEveryRouteAnswersEveryKeyAsDocumented(t *testing.T) {
	t.Parallel()
	authClock := clock.NewFake(time.Now())
	s := serve(t, nil, nil, func(c *server.Config, st *sqlitestore.Store) {
		c.Auth = &server.KeyAuth{Keys: st, OpenWithoutKeys: true, Now: authClock.Now}
		c.Keys = st
	})
	grpcURL, grpcHTTP := serveTLS(t, s.srv)
	documented := documentedScopes(t)
	routes := enumerateRoutes(t, s.srv, documented)

	// Open until the first key: every route, keyless, gets past auth; a key that is sent is
	// still checked.
	for _, r := range routes {
		requireAllowed(t, r, "no key (no key exists yet)", callHTTP(t, s.ts.URL, r, credential{}))
		if r.scope != server.ScopePublic {
			requireUnauthenticated(t, r, badKey, callHTTP(t, s.ts.URL, r, badKey))
		}
	}

	creds := createKeys(t, s)
	authClock.Advance(3 * time.Second) // past the server's wait before it looks for live keys again
	for _, r := range routes {
		for _, c := range creds {
			requireAnswer(t, r, c, callHTTP(t, s.ts.URL, r, c))
			if r.method != nil {
				requireGRPCAnswer(t, r, c, callGRPC(t, grpcURL, grpcHTTP, r.method, c))
			}
		}
	}
	for _, c := range creds {
		requireReflection(t, grpcURL, grpcHTTP, c)
	}

	// With every key revoked no live key exists: open again.
	for _, name := range []string{"admin", "enqueue", "work", "read"} {
		_, err := s.store.KeyRevoke(t.Context(), name)
		require.NoError(t, err)
	}
	authClock.Advance(3 * time.Second)
	for _, r := range routes {
		requireAllowed(t, r, "no key (every key revoked)", callHTTP(t, s.ts.URL, r, credential{}))
	}
}

// badKey is a malformed key; the server refuses it even while it is open to keyless requests.
var badKey = credential{name: "hop_x", authorization: "Bearer hop_x", scope: scopeNone, badKey: true}

// scopeNone marks a caller without a valid key (none, revoked, malformed).
const scopeNone server.Scope = ""

type verdict int

const (
	allowed verdict = iota
	forbidden
	unauthenticated
)

// expect is the documented answer to a caller holding have on a route that needs need.
func expect(need, have server.Scope) verdict {
	switch {
	case need == server.ScopePublic:
		return allowed
	case have == scopeNone:
		return unauthenticated
	case have == need || have == server.ScopeAdmin:
		return allowed
	}
	return forbidden
}

// route is one registered route with its documented scope and, for an RPC procedure, its
// descriptor.
type route struct {
	pattern string
	scope   server.Scope
	method  protoreflect.MethodDescriptor // nil for plain HTTP routes and a service's catch-all
}

// enumerateRoutes returns every registered route with the scope docs/security.md gives it. It
// fails on a procedure of the API that is not registered, on a route the table does not name,
// and on a documented route that does not exist. A service's catch-all (which answers
// "unimplemented") needs the read scope for the API's services and, for another service
// (reflection), the scope the table gives that service's procedures.
func enumerateRoutes(t *testing.T, srv *server.Server, documented map[string]server.Scope) []route {
	t.Helper()
	registered := srv.Routes()
	methods := map[string]protoreflect.MethodDescriptor{}
	services := map[string]bool{}
	protoregistry.GlobalFiles.RangeFilesByPackage(apiPackage, func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			svc := f.Services().Get(i)
			services["/"+string(svc.FullName())+"/"] = true
			for j := range svc.Methods().Len() {
				m := svc.Methods().Get(j)
				methods["/"+string(svc.FullName())+"/"+string(m.Name())] = m
			}
		}
		return true
	})
	require.NotEmpty(t, methods, "no procedures found in the hopper.v1 descriptors")
	for p := range methods {
		require.Contains(t, registered, p, "procedure %s is not served", p)
	}
	for p := range documented {
		require.Contains(t, registered, p, "docs/security.md names %s, which the server does not serve", p)
	}
	var out []route
	for _, p := range srv.RoutePatterns() {
		if registered[p] == server.ScopeDashboard {
			continue // the dashboard's own login, from the same keys: tested in hopperui and dashboard_test.go
		}
		r := route{pattern: p, method: methods[p]}
		scope, ok := documented[p]
		switch {
		case services[p]:
			// A service's catch-all answers unimplemented for a method it does not have, to
			// a key with the read scope (docs/security.md, below the table).
			scope, ok = server.ScopeRead, true
		case !ok && strings.HasPrefix(p, "/") && strings.HasSuffix(p, "/"):
			scope, ok = serviceScope(t, documented, p)
		}
		require.True(t, ok, "route %s (scope %s in the code) is missing from the scope table of docs/security.md", p, registered[p])
		r.scope = scope
		out = append(out, r)
	}
	return out
}

// serviceScope is the one scope documented for the procedures of the service whose catch-all
// is prefix ("/grpc.reflection.v1.ServerReflection/").
func serviceScope(t *testing.T, documented map[string]server.Scope, prefix string) (server.Scope, bool) {
	t.Helper()
	var scope server.Scope
	for p, sc := range documented {
		if strings.HasPrefix(p, prefix) {
			require.True(t, scope == "" || scope == sc, "docs/security.md gives the procedures of %s different scopes", prefix)
			scope = sc
		}
	}
	return scope, scope != ""
}

// apiPackage is the protobuf package of the API.
const apiPackage = "hopper.v1"

var (
	scopeRow  = regexp.MustCompile("^\\| (?:`(enqueue|work|read|admin)`|(no key)) \\|")
	procedure = regexp.MustCompile("`([A-Z][A-Za-z]*Service)\\.([A-Z][A-Za-z]*)`")
	// fullProcedure is a procedure outside the API, by its route: `/grpc.reflection.v1.ServerReflection/ServerReflectionInfo`.
	fullProcedure = regexp.MustCompile("`(/[a-z][a-z0-9]*(?:\\.[a-z][a-z0-9]*)*\\.[A-Z][A-Za-z0-9]*/[A-Z][A-Za-z0-9]*)`")
	httpRoute     = regexp.MustCompile("`((?:GET|POST|PUT|PATCH|DELETE) /[^`]*)`")
	wildcard      = regexp.MustCompile(`\{[^}]*\}`)
)

// documentedScopes reads the scope table of docs/security.md: each row names a scope (or "no
// key": public) and, in backquotes, the procedures (`JobService.Enqueue`, or by route outside
// the API: `/grpc.reflection.v1.ServerReflection/ServerReflectionInfo`) and HTTP routes
// (`GET /metrics`) it adds. A procedure named in two rows is an error.
func documentedScopes(t *testing.T) map[string]server.Scope {
	t.Helper()
	doc, err := os.ReadFile("../../docs/security.md")
	require.NoError(t, err)
	out := map[string]server.Scope{}
	add := func(key string, scope server.Scope) {
		prev, dup := out[key]
		require.False(t, dup, "docs/security.md gives %s two scopes: %s and %s", key, prev, scope)
		out[key] = scope
	}
	for line := range strings.SplitSeq(string(doc), "\n") {
		row := scopeRow.FindStringSubmatch(line)
		if row == nil {
			continue
		}
		scope := server.Scope(row[1])
		if row[2] != "" {
			scope = server.ScopePublic
		}
		for _, m := range procedure.FindAllStringSubmatch(line, -1) {
			add("/"+apiPackage+"."+m[1]+"/"+m[2], scope)
		}
		for _, m := range fullProcedure.FindAllStringSubmatch(line, -1) {
			add(m[1], scope)
		}
		for _, m := range httpRoute.FindAllStringSubmatch(line, -1) {
			add(m[1], scope)
		}
	}
	require.NotEmpty(t, out, "no scope table found in docs/security.md")
	return out
}

// credential is what a caller sends in Authorization, or in header when set ("" for nothing),
// and the scope it holds (scopeNone when it must be refused). A bad key (malformed, unknown, wrong or revoked) is
// answered alike, so a caller learns nothing about which keys exist.
type credential struct {
	name          string
	authorization string
	header        string
	scope         server.Scope
	badKey        bool
}

// set sends the credential through set(header, value).
func (c credential) set(set func(key, value string)) {
	switch {
	case c.authorization == "":
	case c.header != "":
		set(c.header, c.authorization)
	default:
		set("Authorization", c.authorization)
	}
}

// createKeys makes the first key (admin) in the store, as `hopper keys create` does, and the
// others through AdminService.CreateKey with it; one admin key is then revoked through
// AdminService.RevokeKey. It returns every credential the matrix tries.
func createKeys(t *testing.T, s *served) []credential {
	t.Helper()
	admin, k, err := apikey.New("admin", []apikey.Scope{apikey.ScopeAdmin})
	require.NoError(t, err)
	require.NoError(t, s.store.KeyCreate(t.Context(), k))

	cc := connect.NewClient(connecthttp.NewTransport(s.ts.Client(), s.ts.URL), remote.Bearer(admin))
	keys := hopperv1connect.NewAdminServiceClient(cc)
	create := func(name string, scope server.Scope) string {
		res, err := keys.CreateKey(t.Context(), &hopperv1.CreateKeyRequest{Name: name, Scopes: []string{string(scope)}})
		require.NoError(t, err)
		return res.GetPlaintext()
	}
	creds := []credential{{name: "admin key", authorization: "Bearer " + admin, scope: server.ScopeAdmin}}
	for _, sc := range []server.Scope{server.ScopeEnqueue, server.ScopeWork, server.ScopeRead} {
		creds = append(creds, credential{name: string(sc) + " key", authorization: "Bearer " + create(string(sc), sc), scope: sc})
	}
	readKey := strings.TrimPrefix(creds[len(creds)-1].authorization, "Bearer ")
	creds = append(creds, credential{name: "read key in X-Api-Key", authorization: readKey, header: "X-Api-Key", scope: server.ScopeRead})
	revoked := create("revoked", server.ScopeAdmin)
	_, err = keys.RevokeKey(t.Context(), &hopperv1.RevokeKeyRequest{IdOrName: "revoked"})
	require.NoError(t, err)

	id, _, err := apikey.Parse(admin)
	require.NoError(t, err)
	other, _, err := apikey.New("unsaved", []apikey.Scope{apikey.ScopeAdmin})
	require.NoError(t, err)
	_, otherSecret, err := apikey.Parse(other)
	require.NoError(t, err)
	return append(creds,
		credential{name: "no key", scope: scopeNone},
		credential{name: "a revoked admin key", authorization: "Bearer " + revoked, scope: scopeNone, badKey: true},
		badKey,
		credential{name: "garbage", authorization: "Bearer garbage", scope: scopeNone, badKey: true},
		credential{name: "the admin key's id with a wrong secret", authorization: "Bearer " + apikey.Prefix + id + "_" + otherSecret,
			scope: scopeNone, badKey: true},
		credential{name: "a key never stored", authorization: "Bearer " + other, scope: scopeNone, badKey: true},
		credential{name: "the admin key in the Basic scheme", authorization: "Basic " + admin, scope: scopeNone},
		credential{name: "the admin key without a scheme", authorization: admin, scope: scopeNone},
		credential{name: "garbage in X-Api-Key", authorization: "garbage", header: "X-Api-Key", scope: scopeNone, badKey: true},
	)
}

// answer is what a route answered: the HTTP status, the Connect error code ("" when none) and
// the 401's challenge.
type answer struct {
	status    int
	code      string
	message   string
	challenge string
}

// callHTTP calls r over plain HTTP as curl would: an RPC procedure with the Connect protocol
// and an empty JSON request, a plain route with its wildcards filled in.
func callHTTP(t *testing.T, base string, r route, c credential) answer {
	t.Helper()
	method, path, ok := strings.Cut(r.pattern, " ")
	if !ok {
		method, path = http.MethodPost, r.pattern
	}
	path = wildcard.ReplaceAllString(path, "authz-test")
	if strings.HasSuffix(path, "/") {
		path += "NoSuchMethod"
	}
	var body io.Reader
	contentType := "application/json"
	switch {
	case r.method != nil && r.method.IsStreamingServer():
		contentType = "application/connect+json"
		body = bytes.NewReader(envelope(0, []byte(`{}`)))
	case method != http.MethodGet:
		body = strings.NewReader(`{}`)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, base+path, body)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	c.set(req.Header.Set)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	a := answer{status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate")}
	var e struct{ Code, Message string }
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/connect+json") {
		e = streamError(t, raw)
	} else {
		_ = json.Unmarshal(raw, &e) // not every answer is JSON (/metrics); those carry no code
	}
	a.code, a.message = e.Code, e.Message
	return a
}

// envelope frames one message of the Connect streaming protocol.
func envelope(flags byte, msg []byte) []byte {
	out := make([]byte, 5, 5+len(msg))
	out[0] = flags
	binary.BigEndian.PutUint32(out[1:], uint32(len(msg)))
	return append(out, msg...)
}

// streamError returns the error of a Connect stream's end message, if any.
func streamError(t *testing.T, raw []byte) (e struct{ Code, Message string }) {
	t.Helper()
	for len(raw) >= 5 {
		n := binary.BigEndian.Uint32(raw[1:5])
		require.GreaterOrEqual(t, uint32(len(raw)-5), n, "truncated stream message")
		msg := raw[5 : 5+n]
		if raw[0]&0x02 != 0 {
			var end struct {
				Error struct{ Code, Message string }
			}
			require.NoError(t, json.Unmarshal(msg, &end))
			return end.Error
		}
		raw = raw[5+n:]
	}
	return e
}

// requireAnswer checks a's answer to c on r against the documented matrix.
func requireAnswer(t *testing.T, r route, c credential, a answer) {
	t.Helper()
	switch expect(r.scope, c.scope) {
	case allowed:
		requireAllowed(t, r, c.name, a)
	case forbidden:
		requireForbidden(t, r, c.name, a)
	default:
		requireUnauthenticated(t, r, c, a)
	}
}

// requireGRPCAnswer checks the gRPC status c got on r against the documented matrix. A refusal
// is a gRPC status with the server's message (not an HTTP status a gRPC client had to
// translate, whose message would be "HTTP status 401 Unauthorized").
func requireGRPCAnswer(t *testing.T, r route, c credential, err error) {
	t.Helper()
	code := connect.CodeOf(err)
	var message string
	if ce, ok := errors.AsType[*connect.Error](err); ok {
		message = ce.Message()
	}
	switch expect(r.scope, c.scope) {
	case allowed:
		require.NotContains(t, []connect.Code{connect.CodeUnauthenticated, connect.CodePermissionDenied}, code,
			"gRPC %s with %s: want past auth", r.pattern, c.name)
	case forbidden:
		require.Equal(t, connect.CodePermissionDenied, code, "gRPC %s with %s", r.pattern, c.name)
		require.Contains(t, message, fmt.Sprintf("lacks the %q scope", r.scope), "gRPC %s with %s", r.pattern, c.name)
	default:
		require.Equal(t, connect.CodeUnauthenticated, code, "gRPC %s with %s", r.pattern, c.name)
		require.Contains(t, message, "API key", "gRPC %s with %s", r.pattern, c.name)
		if c.badKey {
			require.Contains(t, message, "invalid or revoked API key", "gRPC %s with %s", r.pattern, c.name)
		}
	}
}

// requireReflection checks that gRPC server reflection answers c (it is public): it lists the
// API's services and describes one.
func requireReflection(t *testing.T, url string, hc *http.Client, c credential) {
	t.Helper()
	cc := connect.NewClient(connecthttp.NewTransport(hc, url, connecthttp.WithGRPC()))
	ctx, info := connect.NewClientContext(t.Context())
	c.set(info.RequestHeader().Set)
	stream := grpcreflect.NewClient(cc).NewStream(ctx)
	defer stream.Close()
	names, err := stream.ListServices()
	require.NoError(t, err, "reflection with %s", c.name)
	require.Contains(t, names, protoreflect.FullName(hopperv1connect.WorkerServiceName), "reflection with %s", c.name)
	files, err := stream.FileContainingSymbol(hopperv1connect.WorkerServiceName)
	require.NoError(t, err, "reflection with %s", c.name)
	require.Equal(t, "hopper/v1/hopper.proto", files[0].GetName(), "reflection with %s", c.name)
}

func requireAllowed(t *testing.T, r route, who string, a answer) {
	t.Helper()
	require.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, a.status,
		"%s with %s: want past auth, got %d %s %q", r.pattern, who, a.status, a.code, a.message)
	require.NotContains(t, []string{"unauthenticated", "permission_denied"}, a.code,
		"%s with %s: want past auth, got %d %s %q", r.pattern, who, a.status, a.code, a.message)
	require.NotEqual(t, http.StatusInternalServerError, a.status, "%s with %s: %s %q", r.pattern, who, a.code, a.message)
}

func requireForbidden(t *testing.T, r route, who string, a answer) {
	t.Helper()
	require.Equal(t, http.StatusForbidden, a.status, "%s with %s (needs %s): %s %q", r.pattern, who, r.scope, a.code, a.message)
	require.Equal(t, "permission_denied", a.code, "%s with %s", r.pattern, who)
	require.Contains(t, a.message, string(r.scope), "%s with %s: the answer names the missing scope", r.pattern, who)
}

func requireUnauthenticated(t *testing.T, r route, c credential, a answer) {
	t.Helper()
	require.Equal(t, http.StatusUnauthorized, a.status, "%s with %s: %s %q", r.pattern, c.name, a.code, a.message)
	require.Equal(t, "unauthenticated", a.code, "%s with %s", r.pattern, c.name)
	require.Equal(t, `Bearer realm="hopper"`, a.challenge, "%s with %s", r.pattern, c.name)
	if c.badKey {
		require.Contains(t, a.message, "invalid or revoked API key", "%s with %s: bad keys are answered alike", r.pattern, c.name)
	}
}

// serveTLS serves srv over TLS with HTTP/2, as gRPC needs.
func serveTLS(t *testing.T, srv *server.Server) (string, *http.Client) {
	t.Helper()
	ts := httptest.NewUnstartedServer(srv)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return ts.URL, ts.Client()
}

// callGRPC calls m over gRPC with an empty request and returns its error (for a server
// stream, that of its end).
func callGRPC(t *testing.T, url string, hc *http.Client, m protoreflect.MethodDescriptor, c credential) error {
	t.Helper()
	cc := connect.NewClient(connecthttp.NewTransport(hc, url, connecthttp.WithGRPC()))
	ctx, info := connect.NewClientContext(t.Context())
	c.set(info.RequestHeader().Set)
	spec := connect.Spec{Procedure: "/" + string(m.Parent().FullName()) + "/" + string(m.Name()), Schema: m}
	req := dynamicpb.NewMessage(m.Input())
	if !m.IsStreamingServer() {
		spec.StreamType = connect.StreamTypeUnary
		return cc.CallUnary(ctx, spec, req, dynamicpb.NewMessage(m.Output()))
	}
	spec.StreamType = connect.StreamTypeServer
	stream, err := cc.CallServerStream(ctx, spec, req)
	if err != nil {
		return err
	}
	defer stream.Close()
	for {
		if err := stream.Receive(dynamicpb.NewMessage(m.Output())); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
