package remote

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// ServeOptions shape the server ServeForTest starts; the zero value is a plain one.
type ServeOptions struct {
	Clock *clock.Fake                     // the store's, the client's and the server's clock (nil: the wall clock)
	Wrap  func(hopper.Store) hopper.Store // wraps the store, to inject faults
	Mod   func(*hopper.Config)            // adjusts the client's configuration
}

// ServeForTest starts a real server over a fresh SQLite store and a client on it (the client
// enqueues and reads), and stops them and closes the store when the test ends.
func ServeForTest(t testing.TB, o ServeOptions) (*httptest.Server, *hopper.Client) {
	t.Helper()
	scfg, hcfg := sqlitestore.Config{Path: t.TempDir() + "/hopper.db"}, hopper.Config{WorkerID: "server"}
	if o.Clock != nil {
		scfg.Clock, hcfg.Clock = o.Clock, o.Clock
	}
	st, err := sqlitestore.Open(context.Background(), scfg)
	require.NoError(t, err)
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
	srv, err := server.New(server.Config{Client: client})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
		stoptest.Within(t, client, 10*time.Second)
		require.NoError(t, st.Close())
	})
	return ts, client
}
