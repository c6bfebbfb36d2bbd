package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/apispec"
)

// describedStore is a store that says what it is. Both of Hopper's stores do; a store that
// does not (a test's wrapper) leaves the store's fields of ServerInfo empty.
type describedStore interface {
	Name() string
	SchemaVersion(ctx context.Context) (int, error)
}

// serverService is ServerService: what the server is. It needs no key, as the probes do not.
type serverService struct{ s *Server }

func (v *serverService) Info(ctx context.Context, _ *hopperv1.ServerServiceInfoRequest) (*hopperv1.ServerServiceInfoResponse, error) {
	info, err := v.s.info(ctx)
	if err != nil {
		return nil, rpcError("server info", err)
	}
	return &hopperv1.ServerServiceInfoResponse{Server: apispec.ServerInfo(info)}, nil
}

// info is what the server says of itself: its build (Config.Build) and its store, whose
// schema version it reads now (another node may have migrated it since this one started).
func (s *Server) info(ctx context.Context) (*hoppertype.ServerInfo, error) {
	b := s.cfg.Build
	out := &hoppertype.ServerInfo{Version: b.Version, Commit: b.Commit, Modified: b.Modified, GoVersion: b.Go,
		Platform: b.Platform, InputLimits: s.client.InputLimits()}
	if t, err := time.Parse(time.RFC3339, b.CommitTime); err == nil {
		out.CommitTime = t
	}
	st, ok := s.client.Config().Store.(describedStore)
	if !ok {
		return out, nil
	}
	out.Store = st.Name()
	v, err := st.SchemaVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("read schema version: %w", err)
	}
	out.SchemaVersion = v
	return out, nil
}

// readiness is what /readyz answers, as text or JSON. Like the text, the JSON says what
// fails, never why (docs/security.md); it adds the server's build and its schema version.
type readiness struct {
	Ready bool `json:"ready"`
	// Status is the text's first line: "ok", "store unreachable", or "not ready: starting
	// or shutting down".
	Status string `json:"status"`
	// Failing are the background loops whose last call to the store failed, one
	// LoopStatus.Brief each.
	Failing []string `json:"failing"`
	Version string   `json:"version"`
	Commit  string   `json:"commit"`
	// Store and SchemaVersion are left out when the store could not be read.
	Store         string `json:"store,omitempty"`
	SchemaVersion int    `json:"schema_version,omitempty"`
}

// readiness checks the server and its store (a ping within 2 s; the schema version too when
// withInfo, for the JSON answer).
func (s *Server) readiness(ctx context.Context, withInfo bool) readiness {
	rd := readiness{Status: "ok", Ready: true, Failing: []string{}, Version: s.cfg.Build.Version, Commit: s.cfg.Build.Commit}
	if !s.isReady() {
		rd.Ready, rd.Status = false, "not ready: starting or shutting down"
		return rd
	}
	if err := s.client.Ping(ctx); err != nil {
		rd.Ready, rd.Status = false, "store unreachable"
	} else if withInfo {
		if info, err := s.info(ctx); err == nil { // else the store failed since its ping: leave it out
			rd.Store, rd.SchemaVersion = info.Store, info.SchemaVersion
		}
	}
	for _, l := range s.failingLoops() {
		rd.Failing = append(rd.Failing, l.Brief())
	}
	return rd
}

// readyz is the readiness probe: 200 when the server is ready (not starting nor shutting
// down) and its store answers a ping (within 2 s), else 503 with the reason. The text body
// says the status on its first line, then lists the background loops that are failing now,
// one a line, with their failure counts; with "Accept: application/json" the same comes as
// JSON (readiness) with the server's version, commit and schema version. It is public, so it
// says what fails, never why: the errors (which name hosts, ports, database users and names)
// are in the log, where each failing loop says why once.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	asJSON := wantsJSON(r)
	rd := s.readiness(r.Context(), asJSON)
	w.Header().Set("Cache-Control", "no-store")
	if asJSON {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	if !rd.Ready {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	if asJSON {
		json.NewEncoder(w).Encode(rd) //nolint:errcheck // best effort
		return
	}
	io.WriteString(w, rd.Status+"\n") //nolint:errcheck // best effort
	for _, l := range rd.Failing {
		fmt.Fprintf(w, "failing: %s\n", l)
	}
}

// wantsJSON reports whether the request's Accept header names application/json.
func wantsJSON(r *http.Request) bool {
	for _, a := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(a, ",") {
			if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "application/json" {
				return true
			}
		}
	}
	return false
}
