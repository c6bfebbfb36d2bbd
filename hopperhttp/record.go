package hopperhttp

import (
	"net/http"
	"strings"

	"github.com/hopperjobs/hopper/internal/field"
)

// credentialHeaders are never recorded: job headers are stored in the clear and shown by the
// CLI, so a recorded credential would leak to everyone who can list jobs.
var credentialHeaders = map[string]bool{
	"authorization": true, "cookie": true, "proxy-authorization": true, "x-api-key": true,
}

// unrecorded are the headers the enqueue acts on that the job keeps elsewhere, and that could
// be long: After's ids are the job's parents (up to hopper.MaxParents of them).
var unrecorded = map[string]bool{"after": true}

// requestHeaders is the HTTP request as recorded in a job's headers (see the package doc). A
// recorded value that is not UTF-8 (a Latin-1 header value, a %FF in the query or the path)
// is kept with U+FFFD in place of its bad bytes: the record describes the request, and
// refusing a request over a header it does not act on would be worse.
func requestHeaders(r *http.Request, skip map[string]bool) map[string]string {
	h := record(r, skip)
	for k, v := range h {
		if ck, cv := field.Clean(k), field.Clean(v); ck != k || cv != v {
			delete(h, k)
			h[ck] = cv
		}
	}
	return h
}

func record(r *http.Request, skip map[string]bool) map[string]string {
	h := map[string]string{"http.method": r.Method, "http.path": r.URL.Path}
	add := func(key string, vals []string) {
		v := strings.Join(vals, ", ")
		if old, ok := h[key]; ok {
			v = old + ", " + v
		}
		h[key] = v
	}
	for name, vals := range r.Header {
		n := strings.ToLower(name)
		if !credentialHeaders[n] && !unrecorded[n] && !skip[n] {
			add("http.header."+n, vals)
		}
	}
	// The server moves Host out of r.Header; it is often what tells tenants apart.
	if r.Host != "" && !skip["host"] {
		h["http.header.host"] = r.Host
	}
	for _, name := range patternWildcards(r.Pattern) {
		h["http.path."+name] = r.PathValue(name)
	}
	for name, vals := range r.URL.Query() {
		add("http.query."+name, vals)
	}
	return h
}

// patternWildcards returns the names of the wildcards of a ServeMux pattern: "tenant" and
// "rest" of "POST /t/{tenant}/{rest...}". {$} matches the end of the path and names nothing.
func patternWildcards(pattern string) []string {
	var names []string
	for {
		i := strings.IndexByte(pattern, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(pattern[i:], '}')
		if j < 0 {
			return names
		}
		name := strings.TrimSuffix(pattern[i+1:i+j], "...")
		if name != "" && name != "$" {
			names = append(names, name)
		}
		pattern = pattern[i+j+1:]
	}
}
