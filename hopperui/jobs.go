package hopperui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
)

// Page sizes of the jobs list.
const (
	defaultPage = 50
	maxPage     = 500
)

// jobFilter is the jobs page's search, as the form sends it.
type jobFilter struct {
	ID, Kind, Queue, State, From, To, Text, Cursor string
	Limit                                          int
}

type jobsData struct {
	Filter     jobFilter
	States     []hopper.JobState
	Tabs       []stateTab
	Jobs       []*hopper.JobRow
	NextCursor string
	NextURL    string
	BulkLimit  int
	// Unworked are the hints of the queued jobs listed that no worker has asked for, by id.
	Unworked map[string]*noWorker
}

// stateTab is a tab of the jobs page: the search in one state (or any), with how many jobs
// of the search's queue and kind are in it.
type stateTab struct {
	State   string // "" for any
	Count   int64
	URL     string
	Current bool
}

// timeLayout is what <input type="datetime-local"> sends; the dashboard reads it as UTC.
const timeLayout = "2006-01-02T15:04"

func readFilter(form url.Values) (jobFilter, error) {
	f := jobFilter{ID: strings.TrimSpace(form.Get("id")), Kind: strings.TrimSpace(form.Get("kind")),
		Queue: strings.TrimSpace(form.Get("queue")), State: form.Get("state"), From: form.Get("from"),
		To: form.Get("to"), Text: form.Get("q"), Cursor: form.Get("cursor"), Limit: defaultPage}
	if s := form.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPage {
			return f, invalid("limit", "%q is not a page size from 1 to %d", s, maxPage)
		}
		f.Limit = n
	}
	return f, nil
}

// params turns the filter into the Client's list parameters; bad times and states are
// refused naming their field (the Client checks the rest).
func (f jobFilter) params() (*hopper.ListParams, error) {
	p := &hopper.ListParams{Cursor: f.Cursor, Limit: f.Limit, ArgsContains: f.Text}
	if f.Kind != "" {
		p.Kinds = []string{f.Kind}
	}
	if f.Queue != "" {
		p.Queues = []string{f.Queue}
	}
	if f.State != "" {
		// The Client names the field of an unknown state.
		p.States = []hopper.JobState{hopper.JobState(f.State)}
	}
	var err error
	if p.CreatedAfter, err = parseTime("from", f.From); err != nil {
		return nil, err
	}
	if p.CreatedBefore, err = parseTime("to", f.To); err != nil {
		return nil, err
	}
	return p, nil
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		if t, err = time.Parse(time.RFC3339, s); err != nil {
			return time.Time{}, invalid(field, "%q is not a time (YYYY-MM-DDTHH:MM, UTC)", s)
		}
	}
	return t.UTC(), nil
}

// query is the filter as a URL query, with the cursor of the next page.
func (f jobFilter) query(cursor string) string {
	q := url.Values{}
	for k, v := range map[string]string{"kind": f.Kind, "queue": f.Queue, "state": f.State, "from": f.From,
		"to": f.To, "q": f.Text, "cursor": cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit != defaultPage {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q.Encode()
}

func (h *Handler) jobs(w http.ResponseWriter, r *http.Request, v *view) error {
	d := &jobsData{States: states, BulkLimit: BulkLimit}
	v.Title, v.Data = "Jobs", d
	return h.formPage(w, r, v, "jobs", func() error { return h.search(r, d) })
}

// search fills d with the page of jobs r's parsed form asks for. A bad field leaves the form
// filled in.
func (h *Handler) search(r *http.Request, d *jobsData) error {
	f, err := readFilter(r.Form)
	d.Filter = f
	if err != nil {
		return err
	}
	if f.ID != "" {
		job, err := h.client.Get(r.Context(), f.ID)
		if errors.Is(err, hopper.ErrNotFound) {
			return fmt.Errorf("no job has id %q: %w", f.ID, err)
		}
		if err != nil {
			return err
		}
		d.Jobs = []*hopper.JobRow{job}
		return nil
	}
	p, err := f.params()
	if err != nil {
		return err
	}
	res, err := h.client.List(r.Context(), p)
	if err != nil {
		return err
	}
	d.Jobs, d.NextCursor = res.Jobs, res.NextCursor
	if res.NextCursor != "" {
		d.NextURL = "?" + f.query(res.NextCursor)
	}
	if err := h.tabs(r, d); err != nil {
		return err
	}
	return h.hints(r, d)
}

// tabs fills the state tabs: the search in each state, counted over the search's queue and
// kind (whatever its times and text, which no count could follow without reading the jobs).
func (h *Handler) tabs(r *http.Request, d *jobsData) error {
	counts, err := h.client.StateCounts(r.Context(), d.Filter.Queue, d.Filter.Kind)
	if err != nil {
		return err
	}
	tab := func(state string, n int64) stateTab {
		f := d.Filter
		f.State, f.Limit = state, defaultPage
		return stateTab{State: state, Count: n, URL: "?" + f.query(""), Current: d.Filter.State == state}
	}
	var all int64
	for _, s := range states {
		all += counts[s]
	}
	d.Tabs = append(d.Tabs, tab("", all))
	for _, s := range states {
		d.Tabs = append(d.Tabs, tab(string(s), counts[s]))
	}
	return nil
}

// hints finds the queued jobs listed that no worker has asked for.
func (h *Handler) hints(r *http.Request, d *jobsData) error {
	var sight *workerSight
	for _, j := range d.Jobs {
		if j.State != hopper.StateQueued {
			continue
		}
		if sight == nil {
			var err error
			if sight, err = h.workerSight(r.Context()); err != nil {
				return err
			}
			d.Unworked = map[string]*noWorker{}
		}
		if hint := sight.hint(j.Queue, j.Kind); hint != nil {
			d.Unworked[j.ID] = hint
		}
	}
	return nil
}
