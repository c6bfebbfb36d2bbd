package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/hopperjobs/hopper/hopperui"
)

// The dashboard (package hopperui) is served under /ui/ with the API's keys: a key typed into
// its login page starts a session; admin may change things, read may only look. Without
// keys, on loopback, it is open to this machine as the API is.

// ScopeDashboard marks the dashboard's routes: it checks its own sessions (hopperui), made
// from the same API keys, so authorize lets requests through to it.
const ScopeDashboard Scope = "dashboard"

// Dashboard is the hopperui.Authenticator of these keys.
func (a *KeyAuth) Dashboard() hopperui.Authenticator { return dashboardAuth{a} }

type dashboardAuth struct{ a *KeyAuth }

func (d dashboardAuth) Login(ctx context.Context, key string) (*hopperui.Principal, error) {
	p, err := d.a.check(ctx, key)
	if errors.Is(err, ErrUnauthenticated) {
		return nil, hopperui.ErrBadKey
	}
	if err != nil {
		return nil, err
	}
	if !p.Allows(ScopeRead) {
		return nil, hopperui.ErrBadKey
	}
	return &hopperui.Principal{KeyID: p.KeyID, Name: p.Name, CanWrite: p.Allows(ScopeAdmin)}, nil
}

func (d dashboardAuth) StillValid(ctx context.Context, p *hopperui.Principal) (bool, error) {
	return d.a.StillValid(ctx, &Principal{KeyID: p.KeyID})
}

// Open lets a request from this machine in, with every right, while no live key exists; a
// refusal (keys exist, or the request comes from elsewhere) asks for a login.
func (d dashboardAuth) Open(ctx context.Context, r *http.Request) (*hopperui.Principal, error) {
	if !d.a.OpenWithoutKeys {
		return nil, nil
	}
	p, err := d.a.keyless(ctx, r)
	if errors.Is(err, ErrUnauthenticated) || p == nil {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &hopperui.Principal{Name: "local (no API keys yet)", CanWrite: true}, nil
}

// dashboardDenied is the Authenticator of a server whose Auth the dashboard cannot use: nobody
// logs in.
type dashboardDenied struct{}

func (dashboardDenied) Login(context.Context, string) (*hopperui.Principal, error) {
	return nil, hopperui.ErrBadKey
}
func (dashboardDenied) StillValid(context.Context, *hopperui.Principal) (bool, error) {
	return false, nil
}
func (dashboardDenied) Open(context.Context, *http.Request) (*hopperui.Principal, error) {
	return nil, nil
}

// remoteSource shows the registry's workers and streams in the dashboard.
type remoteSource struct{ s *Server }

func (rs remoteSource) Remote(context.Context) ([]hopperui.RemoteWorker, []hopperui.Stream) {
	now := rs.s.clock.Now()
	streams, workers := rs.s.reg.snapshot(now)
	ws := make([]hopperui.RemoteWorker, len(workers))
	for i, w := range workers {
		ws[i] = hopperui.RemoteWorker{Name: w.name, Queue: w.queue, Kinds: w.kinds, BatchKinds: w.batchKinds, LastSeen: w.lastSeen,
			Streams: w.streams, Polls: w.polls, Activated: w.activated, HeldUntil: w.heldUntil, Stale: !w.liveAt(now)}
	}
	ss := make([]hopperui.Stream, len(streams))
	for i, st := range streams {
		ss[i] = hopperui.Stream{ID: st.id, Worker: st.worker, Queues: st.queues, Kinds: st.kinds, Credit: st.credit,
			InFlight: st.inFlight, Pushed: st.pushed, Completed: st.completed, Failed: st.failed,
			Released: st.released, Opened: st.opened}
	}
	return ws, ss
}

// mountDashboard serves the dashboard under /ui/ and sends / there.
func (s *Server) mountDashboard() error {
	var auth hopperui.Authenticator
	switch a := s.cfg.Auth.(type) {
	case nil: // open, as the API is without Auth (loopback only)
	case interface{ Dashboard() hopperui.Authenticator }:
		auth = a.Dashboard()
	default:
		auth = dashboardDenied{}
	}
	ui, err := hopperui.New(hopperui.Config{Client: s.client, Prefix: "/ui", Auth: auth,
		Remote: remoteSource{s}, Logger: s.log})
	if err != nil {
		return err
	}
	s.handle("/ui/", ScopeDashboard, ui)
	s.handle("GET /{$}", ScopeDashboard, http.RedirectHandler("/ui/", http.StatusSeeOther))
	return nil
}
