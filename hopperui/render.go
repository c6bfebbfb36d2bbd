package hopperui

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
)

// view is what every page's template gets: the frame (user, navigation, messages) and the
// page's own Data.
type view struct {
	Prefix   string
	Title    string
	User     *Principal
	CanWrite bool
	LoginOn  bool // the user logged in with a key (show "log out")
	Error    string
	Notice   string
	Now      time.Time
	// Live is the URL the page's live part polls (htmx), "" for none; LiveEvery how often.
	Live      string
	LiveEvery string
	Data      any
}

func (h *Handler) newView(r *http.Request, p *Principal, title string) *view {
	return &view{Prefix: h.cfg.Prefix, Title: title, User: p, CanWrite: p != nil && p.CanWrite,
		LoginOn: h.cfg.Auth != nil && p != nil && p.KeyID != "", Now: h.client.Now()}
}

// pageNames are the templates of web/templates, each rendered inside layout.html.
var pageNames = []string{"login", "error", "overview", "jobs", "job", "queues", "deadletters", "schedules", "workers", "workflows", "workflow", "confirm", "relatives"}

func parsePages() (map[string]*template.Template, error) {
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(webFS, "web/templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("hopperui: parse layout: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.Must(layout.Clone()).ParseFS(webFS, "web/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("hopperui: parse page %s: %w", name, err)
		}
		pages[name] = t
	}
	return pages, nil
}

// Live parts. A page that changes while it is watched (the overview, queues, workers, a job
// that has not ended) defines a "live" template: a <div id="live"> whose attributes (the
// "live-attrs" template of layout.html) make htmx fetch the page's own URL (view.Live) every
// view.LiveEvery and swap the answer in its place. The page's handler serves that request as
// it serves the page: render sees it is htmx's request for the live part (liveRequest) and
// writes the "live" template alone. Handlers may skip the work the live part does not show.
const (
	liveID = "live"
	// DefaultRefresh is how often the overview, queues and workers pages refresh unless
	// Config.Refresh says otherwise.
	DefaultRefresh = 5 * time.Second
	// liveEvery is how often a job page that has not ended polls for its progress.
	liveEvery = "1s"
)

// htmxInterval is d as htmx's hx-trigger reads it ("5s", "1500ms").
func htmxInterval(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// refreshing makes the live part of the page at path (the overview, queues, workers) refresh
// every Config.Refresh, unless refreshing is off.
func (h *Handler) refreshing(v *view, path string) {
	if h.cfg.Refresh > 0 {
		v.live(h.cfg.Prefix+path, htmxInterval(h.cfg.Refresh))
	}
}

// liveRequest reports whether r is htmx's request for a page's live part.
func liveRequest(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-Target") == liveID
}

// live makes the page's live part poll url every every.
func (v *view) live(url, every string) { v.Live, v.LiveEvery = url, every }

// render writes a page (its layout around it) or, with a "#fragment" suffix, one template of
// the page alone; htmx's request for a page's live part gets its "live" template alone.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, v *view) {
	page, fragment, _ := strings.Cut(name, "#")
	t := h.pages[page]
	if fragment == "" && liveRequest(r) && t.Lookup(liveID) != nil {
		fragment = liveID
	}
	if fragment == "" {
		fragment = "layout.html"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, fragment, v); err != nil {
		h.cfg.Logger.Error("render dashboard page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Vary", "HX-Request, HX-Target")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

// run serves fn to p, turning its error into a page that says what went wrong.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, p *Principal, fn pageFunc) {
	v := h.newView(r, p, "")
	if err := fn(w, r, v); err != nil {
		status, msg := explain(err)
		if status == http.StatusInternalServerError {
			h.cfg.Logger.Error("dashboard request", "path", r.URL.Path, "err", err)
		}
		v.Title, v.Error = http.StatusText(status), msg
		h.render(w, r, status, "error", v)
	}
}

// explain turns an error into a status and a message for the page: bad input names its field.
func explain(err error) (int, string) {
	var verr *hopper.ValidationError
	switch {
	case errors.As(err, &verr):
		return http.StatusBadRequest, fmt.Sprintf("Invalid %s: %s.", verr.Field, verr.Reason)
	case errors.Is(err, hopper.ErrNotFound):
		return http.StatusNotFound, "Not found: " + err.Error() + "."
	case errors.Is(err, hopper.ErrInvalidTransition), errors.Is(err, hopper.ErrDuplicate),
		errors.Is(err, hopper.ErrAlreadyReplayed):
		return http.StatusConflict, "Refused: " + err.Error() + "."
	case errors.Is(err, hopper.ErrInvalid):
		return http.StatusBadRequest, "Invalid input: " + err.Error() + "."
	case errors.Is(err, hopper.ErrUnavailable):
		return http.StatusServiceUnavailable, "The database cannot be reached right now; try again in a moment."
	}
	return http.StatusInternalServerError, "Something went wrong on the server; it has been logged."
}

// fail answers with an error page outside any page handler.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	v := h.newView(r, nil, http.StatusText(status))
	v.Error = msg
	h.render(w, r, status, "error", v)
}

func (h *Handler) internal(w http.ResponseWriter, r *http.Request, doing string, err error) {
	h.cfg.Logger.Error("dashboard: "+doing, "path", r.URL.Path, "err", err)
	status, msg := explain(err)
	h.fail(w, r, status, msg)
}

// formPage serves a page of a search form (jobs, workflows): it parses the request's form,
// lets fill read its fields into the page's data and find what they ask for, and renders page.
// An error fill can explain (a bad field: 400 naming it; 404; 409…) is shown on the page, the
// form filled in as sent, with its status; any other is returned for the error page (500).
func (h *Handler) formPage(w http.ResponseWriter, r *http.Request, v *view, page string, fill func() error) error {
	err := r.ParseForm()
	if err != nil {
		err = invalid("query", "%v", err)
	} else {
		err = fill()
	}
	status := http.StatusOK
	if err != nil {
		if status, v.Error = explain(err); status == http.StatusInternalServerError {
			return err
		}
	}
	h.render(w, r, status, page, v)
	return nil
}

// invalid is a bad form or query field, in the Client's own error type so every page reports
// it the same way.
func invalid(field, format string, args ...any) error {
	return &hopper.ValidationError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// formInt reads the whole number in form field name; set is false when the field is empty.
func formInt(r *http.Request, name string) (n int, set bool, err error) {
	s := strings.TrimSpace(r.PostFormValue(name))
	if s == "" {
		return 0, false, nil
	}
	n, err = strconv.Atoi(s)
	if err != nil {
		return 0, false, invalid(name, "%q is not a whole number", s)
	}
	return n, true, nil
}

var funcs = template.FuncMap{
	"ts":       formatTime,
	"clock":    clockTime,
	"ago":      ago,
	"dur":      formatDuration,
	"pretty":   prettyJSON,
	"esc":      url.PathEscape,
	"add":      func(a, b int) int { return a + b },
	"terminal": func(s hopper.JobState) bool { return s.Terminal() },
	"hexid":    func(s string) string { return hex.EncodeToString([]byte(s)) },
	"preview":  argsPreview,
	"zoned":    zonedTime,
	// jobStates are the job states in the dashboard's order (waiting, queued… canceled).
	"jobStates": func() []hopper.JobState { return states },
}

// argsPreview is a job's args on one line (compact JSON), clipped to n characters with an
// ellipsis (the jobs list shows 60, and up to 500 when the pointer rests on them). The result
// is text: the template escapes it.
func argsPreview(raw json.RawMessage, n int) string {
	var buf bytes.Buffer
	s := string(raw)
	if err := json.Compact(&buf, raw); err == nil {
		s = buf.String()
	}
	return clip(s, n)
}

// zonedTime is t in the IANA zone tz (UTC when it is unknown here), with its zone's name.
func zonedTime(t time.Time, tz string) string {
	if t.IsZero() {
		return "—"
	}
	if loc, err := time.LoadLocation(tz); err == nil && tz != "" {
		t = t.In(loc)
	} else {
		t = t.UTC()
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// clockTime is t's time of day (UTC) to the millisecond, for a table whose rows are of one
// day or so: its title carries the whole time.
func clockTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("15:04:05.000")
}

// ago is how long before now t was ("3m 20s ago"), or "in …" for a time to come.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + formatDuration(-d)
	}
	return formatDuration(d) + " ago"
}

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < 48*time.Hour:
		return d.Round(time.Second).String()
	}
	return fmt.Sprintf("%dd %s", int(d.Hours())/24, (d % (24 * time.Hour)).Round(time.Minute))
}

// prettyJSON indents a JSON value for a <pre>; what is not JSON is shown as it is. The result
// is text: the template escapes it.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

func pathEscape(s string) string { return url.PathEscape(s) }
