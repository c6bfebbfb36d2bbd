// Package hopperui is Hopper's web dashboard as an http.Handler: queues with counts and
// throughput charts, job search and bulk actions, job detail with live progress, dead letters
// with replay, schedules, workers and streams, workflows with their graphs. `hopper serve`
// serves it under /ui/; a library user mounts it in their own server:
//
//	ui, err := hopperui.New(hopperui.Config{Client: client, Prefix: "/ui"})
//	mux.Handle("/ui/", ui)
//
// Pages are rendered on the server with html/template (everything from a job is escaped) and
// made live with htmx, embedded in the package: no build step, no outside requests. Every
// response carries a strict Content-Security-Policy (no inline script or style); every change
// is a POST behind http.CrossOriginProtection. Without Config.Auth the handler lets every
// request read and change everything: put it behind your own authentication, or pass an
// Authenticator (hopper serve passes its API keys).
package hopperui

import (
	"embed"
	"errors"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
)

//go:embed web/templates/*.html web/static/*
var webFS embed.FS

// Config configures New. Client is required; the zero value of every other field works.
type Config struct {
	// Client is the Hopper client whose jobs the dashboard shows and steers. It need not be
	// started (a client without workers is enough to look and steer).
	Client *hopper.Client
	// Prefix is the path the handler is mounted at, without a trailing slash (default "/ui").
	// The handler answers the paths under Prefix + "/".
	Prefix string
	// Auth checks the API keys typed into the login page. nil: no login; every request may do
	// everything (or only read, with ReadOnly).
	Auth Authenticator
	// ReadOnly hides and refuses every change, whoever logs in.
	ReadOnly bool
	// Remote lists the remote workers and streams the server knows; nil shows none (a library
	// process has none of its own).
	Remote RemoteSource
	// SessionTTL is how long a login lasts (default 12 h).
	SessionTTL time.Duration
	// Refresh is how often the overview, queues and workers pages refresh while they are open
	// (default DefaultRefresh, 5 s; at least 1 s); negative turns the refresh off. Each refresh
	// reads what the page shows: the overview and the queues page count the jobs per state, a
	// scan of the jobs table, as Client.Queues does.
	Refresh time.Duration
	// Logger receives errors the pages could not show (default: discarded).
	Logger *slog.Logger
}

// BulkLimit bounds the jobs one bulk action changes.
const BulkLimit = hopper.MaxReplayLimit

// Handler is the dashboard. Create it with New; it is safe for concurrent use.
type Handler struct {
	cfg      Config
	client   *hopper.Client
	pages    map[string]*template.Template
	sessions *sessions
	mux      *http.ServeMux
	handler  http.Handler
}

// New builds the dashboard. It returns an error when Client is missing or Prefix is not a
// path.
func New(cfg Config) (*Handler, error) {
	if cfg.Client == nil {
		return nil, errors.New("hopperui: Config.Client is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/ui"
	}
	cfg.Prefix = strings.TrimSuffix(cfg.Prefix, "/")
	if !strings.HasPrefix(cfg.Prefix, "/") || strings.ContainsAny(cfg.Prefix, "{}? ") {
		return nil, errors.New("hopperui: Config.Prefix must be a path starting with /")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	switch {
	case cfg.Refresh == 0:
		cfg.Refresh = DefaultRefresh
	case cfg.Refresh > 0 && cfg.Refresh < time.Second:
		return nil, errors.New("hopperui: Config.Refresh must be at least 1s (or negative: no refresh)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, client: cfg.Client, pages: pages, mux: http.NewServeMux(),
		sessions: newSessions(cfg.Client.Now, cfg.SessionTTL)}
	h.routes()
	csrf := http.NewCrossOriginProtection()
	csrf.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, http.StatusForbidden, "This change came from another site, or your browser did not say where it came from; it was refused.")
	}))
	h.handler = secureHeaders(csrf.Handler(h.mux))
	return h, nil
}

// ServeHTTP serves the dashboard's pages.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.handler.ServeHTTP(w, r) }

// routes registers every page. Reads need a session (or an open dashboard); changes need one
// that may write.
func (h *Handler) routes() {
	p := h.cfg.Prefix
	static, _ := fs.Sub(webFS, "web/static")
	h.mux.Handle("GET "+p+"/static/", http.StripPrefix(p+"/static/", cacheStatic(http.FileServerFS(static))))
	h.mux.HandleFunc("GET "+p+"/login", h.loginPage)
	h.mux.HandleFunc("POST "+p+"/login", h.login)
	h.mux.HandleFunc("POST "+p+"/logout", h.logout)

	read := func(pattern string, fn pageFunc) { h.mux.Handle("GET "+p+pattern, h.reader(fn)) }
	write := func(pattern string, fn pageFunc) { h.mux.Handle("POST "+p+pattern, h.writer(fn)) }
	read("/{$}", h.overview)
	read("/jobs", h.jobs)
	read("/jobs/{id}", h.job)
	read("/jobs/{id}/parents", h.jobParents)
	read("/jobs/{id}/children", h.jobChildren)
	read("/queues", h.queues)
	read("/dead-letters", h.deadLetters)
	read("/schedules", h.schedules)
	read("/workers", h.workers)
	read("/workflows", h.workflows)
	read("/workflows/{id}", h.workflow)
	// Destructive and bulk changes ask first (confirm.go).
	write("/jobs/bulk", h.confirmed(h.askBulk, h.jobsBulk))
	write("/jobs/{id}/cancel", h.confirmed(h.askCancel, h.jobCancel))
	write("/jobs/{id}/replay", h.confirmed(h.askReplay, h.jobReplay))
	write("/jobs/{id}/retry", h.confirmed(h.askRetry, h.jobRetry))
	write("/workflows/{id}/cancel", h.confirmed(h.askWorkflowCancel, h.workflowCancel))
	write("/queues/{name}/pause", h.queuePause)
	write("/queues/{name}/resume", h.queueResume)
	write("/queues/{name}/settings", h.queueSettings)
	write("/queues/{name}/key-weights", h.queueKeyWeight)
	write("/kinds/{name}/settings", h.kindSettings)
	write("/kinds/{name}/compact", h.confirmed(h.askCompact, h.kindCompact))
	write("/dead-letters/replay", h.confirmed(h.askReplayAll, h.deadLettersReplay))
	write("/schedules/{name}/pause", h.schedulePause)
	write("/schedules/{name}/resume", h.scheduleResume)
	write("/schedules/{name}/run", h.confirmed(h.askScheduleRun, h.scheduleRun))
	write("/schedules/{name}/remove", h.confirmed(h.askScheduleRemove, h.scheduleRemove))
	h.mux.HandleFunc(p+"/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, http.StatusNotFound, "No such page.")
	})
}

// csp allows only the dashboard's own script and style: no inline script, no style attributes,
// no frames, no requests elsewhere.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// secureHeaders sets the headers every answer carries.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}
