package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// What FuzzAsync's flags byte turns on.
const (
	asyncRawKind  = 1 << iota // the kind goes into the request line as it is, not percent-encoded
	asyncKey                  // send the Idempotency-Key header
	asyncGetAsKey             // GET /v1/jobs/{kind}?{query} instead of the POST
)

// FuzzAsync sends POST /v1/async/{kind} with any kind, query string, body, Idempotency-Key
// and one more header of any name and value (Latin-1 and other bytes that are not UTF-8
// included), written on a raw connection so that nothing on the client side cleans them up;
// with the asyncGetAsKey flag it reads GET /v1/jobs/{id} with the kind as the id instead. The
// server never answers 5xx; a 202's job is readable with GET /v1/jobs/{id}, its args are the
// body (insignificant white space aside) unless a Merge-Key merged it into a waiting job, and
// its recorded headers are text; a request with a plain kind, a JSON body and plain headers is
// accepted.
func FuzzAsync(f *testing.F) {
	for _, s := range []struct {
		kind, query, name, value, key string
		body                          string
		flags                         uint8
	}{
		{"send-email", "", "X-Tenant", "acme", "", `{"to":"a@example.com"}`, 0},
		{"send-email", "a=1&a=2&b", "Content-Type", "application/json", "order-1", ` { "a" : [1, 2] } `, asyncKey},
		{"send-email", "", "X-Html", "<b>&amp;</b>", "", `{"html":"<b>&amp;\u2028</b>"}`, 0},
		{"k", "", "X-Latin1", "caf\xe9", "", `{"a":"\xff"}`, 0},
		{"x\xffkind", "", "", "", "", `1`, 0},
		{"k\x00", "%FF=%00", "X-\xff", "v", "", `null`, 0},
		{"k", "q=%ff", "X-Nul", "a\x00b", "\"quoted\"", `"s"`, asyncKey},
		{"k", "", "Idempotency-Key", "second", "first", `[]`, asyncKey},
		{"k", "", "Merge-Key", "daily", "", `{"day":1}`, 0},
		{"k", "", "Merge", "append", "", `{"day":2}`, 0},
		{"k", "", "", "", "", ``, 0},
		{"k", "", "", "", "", `{"a":1}{"b":2}`, 0},
		{"k", "", "", "", "", `{"a":"\ud800"}`, 0},
		{"a/b", "", "", "", "", `{}`, 0},
		{"a b", "", "", "", "", `{}`, asyncRawKind},
		{"00000000-0000-0000-0000-000000000000", "wait=1s&x=%ff", "", "", "", "", asyncGetAsKey},
		{"%00", "", "", "", "", "", asyncGetAsKey | asyncRawKind},
		{"\xff", "", "", "", "", "", asyncGetAsKey},
	} {
		f.Add(s.kind, s.query, s.name, s.value, s.key, []byte(s.body), s.flags)
	}
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, kind, query, name, value, key string, body []byte, flags uint8) {
		s := fs.get(t)
		if flags&asyncGetAsKey != 0 {
			requireStatusAnswer(t, s, kind, query, flags&asyncRawKind != 0)
			return
		}
		a := asyncInput{kind: kind, query: query, name: name, value: value, key: key, body: body,
			rawKind: flags&asyncRawKind != 0, withKey: flags&asyncKey != 0}
		status, answer := rawHTTP(t, s.ts.Listener.Addr().String(), a.request())
		require.Less(t, status, 500, "POST /v1/async: %d %s", status, answer)
		if status != http.StatusAccepted {
			require.False(t, a.plain(), "a plain request was refused: %d %s", status, answer)
			return
		}
		requireAcceptedJob(t, s, a, answer)
	})
}

// asyncInput is one fuzzed POST /v1/async/{kind}.
type asyncInput struct {
	kind, query, name, value, key string
	body                          []byte
	rawKind, withKey              bool
}

// framing are the headers that change how a request is read; a fuzzed header with one of
// these names is sent as X-Fuzz-<name> instead, so that the body stays the body.
var framing = map[string]bool{"content-length": true, "transfer-encoding": true, "host": true, "connection": true,
	"expect": true, "te": true, "trailer": true, "upgrade": true}

// request is the request's bytes, as a client that cleans up nothing would send them (only
// line breaks, which would end the request line or a header, become underscores).
func (a asyncInput) request() []byte {
	path := url.PathEscape(a.kind)
	if a.rawKind {
		path = lineSafe(a.kind, " ?#")
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST /v1/async/%s", path)
	if a.query != "" {
		fmt.Fprintf(&b, "?%s", lineSafe(a.query, " #"))
	}
	fmt.Fprintf(&b, " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: %d\r\n", len(a.body))
	if a.withKey {
		fmt.Fprintf(&b, "Idempotency-Key: %s\r\n", lineSafe(a.key, ""))
	}
	if name := a.headerName(); name != "" {
		fmt.Fprintf(&b, "%s: %s\r\n", name, lineSafe(a.value, ""))
	}
	b.WriteString("\r\n")
	b.Write(a.body)
	return b.Bytes()
}

func (a asyncInput) headerName() string {
	name := lineSafe(a.name, "")
	if framing[strings.ToLower(strings.TrimSpace(name))] {
		return "X-Fuzz-" + name
	}
	return name
}

// lineSafe replaces CR and LF, and the characters of also, with underscores: a request line
// has no spaces in its target, and a header line ends at a line break.
func lineSafe(s, also string) string {
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' || strings.ContainsRune(also, r) {
			return '_'
		}
		return r
	}, s)
}

var (
	plainKind  = regexp.MustCompile(`^[a-z][a-z0-9.-]{0,63}$`)
	plainToken = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,63}$`)
	plainValue = regexp.MustCompile(`^[ -~]{0,256}$`)
)

// optionHeaders are the headers that set options of the enqueue, which may refuse it.
var optionHeaders = map[string]bool{"idempotency-key": true, "merge-key": true, "merge": true}

// plain reports whether every part of the request is ordinary, so it must be accepted.
func (a asyncInput) plain() bool {
	return plainKind.MatchString(a.kind) && !a.withKey && (a.name == "" || plainToken.MatchString(a.name) &&
		!optionHeaders[strings.ToLower(a.name)] && plainValue.MatchString(a.value)) &&
		plainValue.MatchString(a.query) && json.Valid(a.body) && utf8.Valid(a.body) && len(a.body) < 1<<20
}

// requireAcceptedJob checks the job of a 202: readable with GET, args as sent, headers text.
func requireAcceptedJob(t *testing.T, s *served, a asyncInput, answer []byte) {
	t.Helper()
	var acc asyncAnswer
	require.NoError(t, json.Unmarshal(answer, &acc), "202 answer %q", answer)
	status, got := getHTTP(t, s.ts.URL+"/v1/jobs/"+url.PathEscape(acc.Job.ID))
	require.Equal(t, http.StatusOK, status, "GET the accepted job: %s", got)

	job, err := s.client.Get(t.Context(), acc.Job.ID)
	require.NoError(t, err)
	var want bytes.Buffer
	require.NoError(t, json.Compact(&want, a.body), "an accepted body is JSON")
	if acc.Merged {
		require.True(t, strings.EqualFold(a.headerName(), "Merge-Key"), "only a Merge-Key merges: %s", answer)
		require.NotEmpty(t, job.MergeKey)
	} else {
		require.Equal(t, want.String(), string(job.Args), "the job's args are the body")
	}
	if !a.rawKind && !a.withKey {
		require.Equal(t, a.kind, job.Kind, "the job's kind is the path's")
	}
	for k, v := range job.Headers {
		require.True(t, utf8.ValidString(k) && !strings.ContainsRune(k, 0), "recorded header name %q", k)
		require.True(t, utf8.ValidString(v) && !strings.ContainsRune(v, 0), "recorded header %q: %q", k, v)
	}
}

// requireStatusAnswer reads GET /v1/jobs/{id}?{query} (without a wait: a wait on a job that
// exists takes its time, and parseWait has its own target): 200, 400 or 404, never 5xx.
func requireStatusAnswer(t *testing.T, s *served, id, query string, raw bool) {
	t.Helper()
	q, _ := url.ParseQuery(query) // what is left of a malformed query, as the server reads it
	q.Del("wait")
	path := url.PathEscape(id)
	if raw {
		path = lineSafe(id, " ?#")
	}
	req := fmt.Sprintf("GET /v1/jobs/%s?%s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", path, q.Encode())
	status, answer := rawHTTP(t, s.ts.Listener.Addr().String(), []byte(req))
	require.Contains(t, []int{http.StatusOK, http.StatusBadRequest, http.StatusNotFound}, status,
		"GET /v1/jobs/%q: %d %s", id, status, answer)
}

// rawHTTP sends req on a new connection and returns the answer's status and body.
func rawHTTP(t *testing.T, addr string, req []byte) (int, []byte) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, rpcHang)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(rpcHang)))
	_, _ = conn.Write(req) // a server that answers before the whole body may close early
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err, "no answer to %q", req)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// getHTTP is a plain GET.
func getHTTP(t *testing.T, u string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), rpcHang)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}
