// Package servertest starts a real Hopper server in process, over a fresh SQLite store in a
// temporary directory, for the tests and the runnable examples of packages that talk to a
// server (hopperclient). It serves as `hopper serve` does: HTTP/1.1 and HTTP/2 in plain text.
package servertest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/apikey"
	"github.com/hopperjobs/hopper/internal/server"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/sqlitestore"
)

// Options shape the server; the zero value is a server without keys or workers of its own.
type Options struct {
	// Keys makes the server require API keys and manage them (AdminService); Start makes
	// one admin key, Server.AdminKey.
	Keys bool
	// Workers are the server's own workers (nil: none), to get jobs done or failed.
	Workers *hopper.Workers
}

// Server is a started server. Close stops it.
type Server struct {
	// URL is the server's base URL.
	URL string
	// AdminKey is a key with the admin scope when Options.Keys is set, else "".
	AdminKey string
	// Client is the server's own client: it enqueues and reads as the server does.
	Client *hopper.Client

	ts    *httptest.Server
	store *sqlitestore.Store
	dir   string
}

// Start starts a server as o says. Close it when done.
func Start(ctx context.Context, o Options) (*Server, error) {
	dir, err := os.MkdirTemp("", "hopper-server-")
	if err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	s := &Server{dir: dir}
	if err := s.start(ctx, o); err != nil {
		return nil, errors.Join(fmt.Errorf("start server: %w", err), s.Close())
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, o Options) error {
	path := filepath.Join(s.dir, "hopper.db")
	if err := sqlitetest.Write(path); err != nil {
		return err
	}
	st, err := sqlitestore.Open(ctx, sqlitestore.Config{Path: path})
	if err != nil {
		return err
	}
	s.store = st
	if s.Client, err = hopper.NewClient(hopper.Config{Store: st, Workers: o.Workers, WorkerID: "servertest"}); err != nil {
		return err
	}
	if err := s.Client.Start(ctx); err != nil {
		s.Client = nil // nothing to stop
		return err
	}
	cfg := server.Config{Client: s.Client}
	if o.Keys {
		cfg.Auth, cfg.Keys = &server.KeyAuth{Keys: st}, st
		plain, k, err := apikey.New("admin", []apikey.Scope{apikey.ScopeAdmin})
		if err != nil {
			return err
		}
		if err := st.KeyCreate(ctx, k); err != nil {
			return err
		}
		s.AdminKey = plain
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	srv.SetReady(true)
	s.ts = httptest.NewUnstartedServer(srv)
	s.ts.Config.Protocols = server.Protocols()
	s.ts.Start()
	s.URL = s.ts.URL
	return nil
}

// CreateKey stores a new API key named name with scopes and returns it, for a server started
// with Options.Keys.
func (s *Server) CreateKey(ctx context.Context, name string, scopes ...apikey.Scope) (string, error) {
	plain, k, err := apikey.New(name, scopes)
	if err != nil {
		return "", err
	}
	return plain, s.store.KeyCreate(ctx, k)
}

// Close stops the server, its client (giving running jobs 10 s) and its store, and removes
// its directory.
func (s *Server) Close() error {
	if s.ts != nil {
		s.ts.CloseClientConnections()
		s.ts.Close()
	}
	var errs []error
	if s.Client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, s.Client.Stop(ctx))
		cancel()
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	errs = append(errs, os.RemoveAll(s.dir))
	return errors.Join(errs...)
}

// StartTB is Start for a test: it fails t when the server does not start, and closes it
// when the test ends.
func StartTB(t testing.TB, o Options) *Server {
	t.Helper()
	s, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}
