package remote

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/pgstore"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// ServeOptions shape the server ServeForTest starts; the zero value is a plain one.
type ServeOptions struct {
	Clock *clock.Fake                     // the store's, the client's and the server's clock (nil: the wall clock)
	Wrap  func(hopper.Store) hopper.Store // wraps the store, to inject faults
	Mod   func(*hopper.Config)            // adjusts the client's configuration
	// HTTP1Only serves HTTP/1.1 only, as a proxy might: no report stream.
	HTTP1Only bool
	// Handler wraps the server's handler, to watch or break requests.
	Handler func(http.Handler) http.Handler
	// Keys: the server checks API keys, stored in the store (none exists: every call is refused).
	Keys bool
	// Postgres: the store is a fresh schema of the test PostgreSQL (pgtest) instead of SQLite.
	Postgres bool
}

// ServeForTest starts a real server over a fresh SQLite store (or PostgreSQL schema) and a
// client on it (the client enqueues and reads), and stops them and closes the store when the
// test ends.
func ServeForTest(t testing.TB, o ServeOptions) (*httptest.Server, *hopper.Client) {
	t.Helper()
	hcfg := hopper.Config{WorkerID: "server"}
	if o.Clock != nil {
		hcfg.Clock = o.Clock
	}
	st := openStore(t, o)
	hcfg.Store = st
	if o.Wrap != nil {
		hcfg.Store = o.Wrap(st)
	}
	if o.Mod != nil {
		o.Mod(&hcfg)
	}
	client, err := hopper.NewClient(hcfg)
	require.NoError(t, err)
	require.NoError(t, client.Start(context.Background()))
	scfg2 := server.Config{Client: client}
	if o.Keys {
		scfg2.Auth, scfg2.Keys = &server.KeyAuth{Keys: st}, st
	}
	srv, err := server.New(scfg2)
	require.NoError(t, err)
	// As `hopper serve` does, the server speaks HTTP/1.1 and HTTP/2 in plain text (h2c), so
	// workers report on a report stream; HTTP1Only leaves them Report requests.
	var h http.Handler = srv
	if o.Handler != nil {
		h = o.Handler(srv)
	}
	ts := httptest.NewUnstartedServer(h)
	ts.Config.Protocols = server.Protocols()
	ts.Config.Protocols.SetUnencryptedHTTP2(!o.HTTP1Only)
	ts.Start()
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		stoptest.Within(t, client, 10*time.Second)
		require.NoError(t, st.Close())
	})
	return ts, client
}

// storeCloser is a store the test closes.
type storeCloser interface {
	hopper.Store
	Close() error
}

// openStore opens the store of a ServeForTest server.
func openStore(t testing.TB, o ServeOptions) storeCloser {
	t.Helper()
	if o.Postgres {
		pgtest.Require(t)
		cfg := pgstore.Config{URL: pgtest.URL(), Schema: pgtest.FreshSchema(t, "hopper_remote_"), MaxConns: 20}
		if o.Clock != nil {
			cfg.Clock = o.Clock
		}
		st, err := pgstore.Open(context.Background(), cfg)
		require.NoError(t, err)
		return st
	}
	cfg := sqlitestore.Config{Path: sqlitetest.Path(t)}
	if o.Clock != nil {
		cfg.Clock = o.Clock
	}
	st, err := sqlitestore.Open(context.Background(), cfg)
	require.NoError(t, err)
	return st
}
