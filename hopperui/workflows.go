package hopperui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/field"
)

// workflowFilter is the workflows page's search, as the form sends it.
type workflowFilter struct {
	Name, State, Cursor string
	Limit               int
}

type workflowsData struct {
	Filter    workflowFilter
	States    []hopper.WorkflowState
	Workflows []*hopper.WorkflowRow
	NextURL   string
}

// readWorkflowFilter reads the search; a bad page size or state is refused naming its field
// (the Client names a bad name or cursor).
func readWorkflowFilter(form url.Values) (workflowFilter, error) {
	f := workflowFilter{Name: strings.TrimSpace(form.Get("name")), State: form.Get("state"),
		Cursor: form.Get("cursor"), Limit: defaultPage}
	if s := form.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPage {
			return f, invalid("limit", "%q is not a page size from 1 to %d", s, maxPage)
		}
		f.Limit = n
	}
	if f.State != "" && !hopper.WorkflowState(f.State).Valid() {
		return f, invalid("state", "%q is not a workflow state (want one of %v)", f.State, hopper.WorkflowStates)
	}
	return f, nil
}

// query is the filter as a URL query, with the cursor of the next page.
func (f workflowFilter) query(cursor string) string {
	q := url.Values{}
	for k, v := range map[string]string{"name": f.Name, "state": f.State, "cursor": cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit != defaultPage {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	return q.Encode()
}

// workflows lists workflows, newest first, filtered by name and state and paged like the
// jobs. A bad field leaves the form filled in and says which (400).
func (h *Handler) workflows(w http.ResponseWriter, r *http.Request, v *view) error {
	d := &workflowsData{States: hopper.WorkflowStates}
	v.Title, v.Data = "Workflows", d
	return h.formPage(w, r, v, "workflows", func() error { return h.listWorkflows(r, d) })
}

// listWorkflows fills d with the page of workflows r's parsed form asks for.
func (h *Handler) listWorkflows(r *http.Request, d *workflowsData) error {
	f, err := readWorkflowFilter(r.Form)
	d.Filter = f
	if err != nil {
		return err
	}
	p := &hopper.WorkflowListParams{Name: f.Name, Cursor: f.Cursor, Limit: f.Limit}
	if f.State != "" {
		p.States = []hopper.WorkflowState{hopper.WorkflowState(f.State)}
	}
	res, err := h.client.ListWorkflows(r.Context(), p)
	if err != nil {
		return err
	}
	d.Workflows = res.Workflows
	if res.NextCursor != "" {
		d.NextURL = "?" + f.query(res.NextCursor)
	}
	return nil
}

// stepPage is the page size of a workflow's step table.
const stepPage = 100

type workflowData struct {
	Workflow *hopper.WorkflowRow
	// Graph is every step drawn, for a workflow of at most maxGraphSteps live steps; nil
	// beyond (Counts links to the steps of each state instead).
	Graph    *graph
	Counts   []stateTab
	MaxGraph int
	// Steps are one page of the steps the filter finds; NextURL the next page's.
	Steps      []stepView
	Filter     stepFilter
	JobStates  []hopper.JobState
	NextURL    string
	FirstURL   string
	TotalSteps int
}

// stepFilter is a workflow page's step search: a state, a part of the step's name, a page.
type stepFilter struct {
	State, Step, Cursor string
}

// readStepFilter reads the step search from a workflow page's query; a bad state or a name
// part too long is refused naming its form field (the Client names a cursor it did not issue).
func readStepFilter(q url.Values) (stepFilter, error) {
	f := stepFilter{State: q.Get("step_state"), Step: strings.TrimSpace(q.Get("step")), Cursor: q.Get("cursor")}
	if f.State != "" && !hopper.JobState(f.State).Valid() {
		return f, invalid("step_state", "%q is not a job state", f.State)
	}
	if err := field.Limited("step", f.Step, field.MaxFilterLen); err != nil {
		return f, err // the Client's limit, named as the form's field
	}
	return f, nil
}

// params is the filter as the Client's, one page of limit steps.
func (f stepFilter) params(limit int) *hopper.WorkflowStepsParams {
	p := &hopper.WorkflowStepsParams{StepContains: f.Step, Cursor: f.Cursor, Limit: limit}
	if f.State != "" {
		p.States = []hopper.JobState{hopper.JobState(f.State)}
	}
	return p
}

// query is the filter as a URL query ("" without one), with the cursor of a page.
func (f stepFilter) query(cursor string) string {
	q := url.Values{}
	for k, v := range map[string]string{"step_state": f.State, "step": f.Step, "cursor": cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// all reports whether the filter asks for the first page of every step.
func (f stepFilter) all() bool { return f == stepFilter{} }

// stepView is a step with its timings: Due is when it became due (its release from waiting,
// or its run-at or backoff's end), Wait from then to its latest start (JobRow.StartWait), Ran
// from its start to its end (or to now while it runs).
// AfterShown are the first maxLinks names of the steps it runs after, of len(After).
type stepView struct {
	*hopper.StepRow
	Due        time.Time
	Wait, Ran  time.Duration
	Started    bool
	AfterShown []string
	AfterMore  int
}

func newStepView(s *hopper.StepRow, now time.Time) stepView {
	j := s.Job
	sv := stepView{StepRow: s, AfterShown: s.After[:min(len(s.After), maxLinks)]}
	sv.AfterMore = len(s.After) - len(sv.AfterShown)
	switch {
	case !j.StartedAt.IsZero(), j.State == hopper.StateQueued, j.State == hopper.StateScheduled, j.State == hopper.StateSuspended:
		sv.Due = j.RunAt // a step that waits or ended without running was never due
	}
	sv.Wait, sv.Started = j.StartWait()
	switch {
	case j.State == hopper.StateRunning:
		sv.Ran = max(now.Sub(j.StartedAt), 0)
	case !j.StartedAt.IsZero() && !j.FinishedAt.IsZero():
		sv.Ran = max(j.FinishedAt.Sub(j.StartedAt), 0)
	}
	return sv
}

// workflow is a workflow's page: its state, its graph (or, beyond maxGraphSteps, its steps
// counted by state) and one page of its steps with their timings. A request reads one page of
// stepPage steps, and, for a workflow small enough to draw, its steps for the graph: never
// more than stepPage+maxGraphSteps steps, however large the workflow. While the workflow runs
// its live part (all of that) refreshes as the overview does.
func (h *Handler) workflow(w http.ResponseWriter, r *http.Request, v *view) error {
	ctx := r.Context()
	id := r.PathValue("id")
	f, err := readStepFilter(r.URL.Query())
	if err != nil {
		return err
	}
	res, err := h.client.WorkflowSteps(ctx, id, f.params(stepPage))
	if err != nil {
		return err
	}
	wf := res.Workflow
	path := "/workflows/" + pathEscape(wf.ID)
	if wf.State == hopper.WorkflowRunning {
		h.refreshing(v, path+f.query(f.Cursor))
	}
	d := &workflowData{Workflow: wf, MaxGraph: maxGraphSteps, Filter: f, JobStates: states, TotalSteps: liveSteps(wf),
		FirstURL: h.cfg.Prefix + path + f.query("")}
	if res.NextCursor != "" {
		d.NextURL = h.cfg.Prefix + path + f.query(res.NextCursor)
	}
	for _, s := range res.Steps {
		d.Steps = append(d.Steps, newStepView(s, v.Now))
	}
	if d.Graph, err = h.workflowGraph(r, wf, f, res); err != nil {
		return err
	}
	if d.Graph == nil {
		d.Counts = h.stepCounts(wf, path)
	}
	v.Title, v.Data = "Workflow "+wf.Name, d
	h.render(w, r, http.StatusOK, "workflow", v)
	return nil
}

// workflowGraph draws a workflow of at most maxGraphSteps live steps, reading them all unless
// the page read them already; nil for a larger one (or one that grew past the bound meanwhile).
func (h *Handler) workflowGraph(r *http.Request, wf *hopper.WorkflowRow, f stepFilter, page *hopper.WorkflowStepsResult) (*graph, error) {
	if liveSteps(wf) > maxGraphSteps {
		return nil, nil
	}
	steps := page.Steps
	if !f.all() || page.NextCursor != "" {
		all, err := h.client.WorkflowSteps(r.Context(), wf.ID, &hopper.WorkflowStepsParams{Limit: maxGraphSteps})
		if err != nil || all.NextCursor != "" {
			return nil, err
		}
		steps = all.Steps
	}
	return layout(steps), nil
}

// stepCounts are a workflow's steps counted by state, each count a link to its steps.
func (h *Handler) stepCounts(wf *hopper.WorkflowRow, path string) []stateTab {
	var out []stateTab
	for _, s := range states {
		if n := wf.StepStates[s]; n > 0 {
			out = append(out, stateTab{State: string(s), Count: int64(n),
				URL: h.cfg.Prefix + path + stepFilter{State: string(s)}.query("")})
		}
	}
	return out
}

// liveSteps counts a workflow's steps that are still kept (not removed at their result TTL).
func liveSteps(wf *hopper.WorkflowRow) int {
	n := 0
	for _, c := range wf.StepStates {
		n += c
	}
	return n
}

// askWorkflowCancel asks before a workflow is canceled, counting the steps it would cancel.
func (h *Handler) askWorkflowCancel(r *http.Request, _ *view) (*confirmation, error) {
	res, err := h.client.WorkflowSteps(r.Context(), r.PathValue("id"), &hopper.WorkflowStepsParams{Limit: 1})
	if err != nil {
		return nil, err
	}
	wf := res.Workflow // its counts: the step read is not used
	if wf.State != hopper.WorkflowRunning {
		return nil, fmt.Errorf("workflow %s has ended, it cannot be canceled: %w", wf.ID, hopper.ErrInvalidTransition)
	}
	var open int
	for s, n := range wf.StepStates {
		if !s.Terminal() {
			open += n
		}
	}
	running := wf.StepStates[hopper.StateRunning]
	details := []string{fmt.Sprintf("Its %d step(s) that have not ended end canceled, in one transaction; the steps that ended stay as they are, and no step is released afterwards.", open)}
	if running > 0 {
		details = append(details, fmt.Sprintf("%d running step(s): their handlers are told to stop.", running))
	}
	details = append(details, "Jobs outside the workflow that wait for its steps follow their parent failure policies.")
	return &confirmation{Question: fmt.Sprintf("Cancel workflow %s (%s)?", wf.ID, wf.Name), Details: details,
		Button: "Cancel the workflow", Danger: true, Back: h.cfg.Prefix + "/workflows/" + pathEscape(wf.ID)}, nil
}

func (h *Handler) workflowCancel(w http.ResponseWriter, r *http.Request, v *view) error {
	id := r.PathValue("id")
	if _, err := h.client.CancelWorkflowBy(r.Context(), id, hopper.ActorOperator, "dashboard cancel by "+v.User.Name); err != nil {
		return err
	}
	http.Redirect(w, r, h.cfg.Prefix+"/workflows/"+pathEscape(id), http.StatusSeeOther)
	return nil
}
