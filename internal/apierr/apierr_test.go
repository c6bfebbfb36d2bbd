package apierr_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hopperjobs/hopper/internal/apierr"
	"github.com/stretchr/testify/require"
)

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	for id, ok := range map[string]bool{
		"": false, "gw-7f3a.1": true, "0190a7c2-2b4e-7d6f-9a1b-3c4d5e6f7a8b": true, "00-abc:def_1": true,
		"evil\" level=INFO": false, "a\nb": false, string(make([]byte, 65)): false,
	} {
		require.Equal(t, ok, apierr.ValidID(id), "%q", id)
	}
	a, b := apierr.NewID(), apierr.NewID()
	require.Len(t, a, 20)
	require.True(t, apierr.ValidID(a))
	require.NotEqual(t, a, b)

	var seen string
	h := apierr.WithRequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = apierr.RequestID(w, r)
	}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set(apierr.Header, "gw-1")
	h.ServeHTTP(rec, req)
	require.Equal(t, "gw-1", seen, "a well-formed incoming id is kept")
	require.Equal(t, "gw-1", rec.Header().Get(apierr.Header))

	rec = httptest.NewRecorder()
	req.Header.Set(apierr.Header, "bad id")
	h.ServeHTTP(rec, req)
	require.NotEqual(t, "bad id", seen)
	require.Equal(t, seen, rec.Header().Get(apierr.Header))

	// Without the middleware, RequestID makes one and sets it on the response.
	rec = httptest.NewRecorder()
	id := apierr.RequestID(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	require.True(t, apierr.ValidID(id))
	require.Equal(t, id, rec.Header().Get(apierr.Header))
}
