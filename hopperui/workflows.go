package hopperui

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hopperjobs/hopper"
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

// maxStepRows bounds the steps the workflow page lists; its step-state filter finds the others.
const maxStepRows = 500

type workflowData struct {
	Workflow *hopper.WorkflowRow
	// Graph is the steps drawn (nil beyond maxGraphSteps: Depths counts them instead).
	Graph    *graph
	Depths   []depthCount
	MaxGraph int
	// Steps are the steps listed: those in StepState (all when ""), at most maxStepRows.
	Steps      []stepView
	StepState  string
	JobStates  []hopper.JobState
	Matching   int // the steps in StepState, listed or not
	Hidden     int // of those, how many are not listed
	TotalSteps int
}

// stepView is a step with its timings: Due is when it became due (its release from waiting,
// or its run-at or backoff's end), Wait from then to its latest start (JobRow.StartWait), Ran
// from its start to its end (or to now while it runs).
type stepView struct {
	*hopper.StepRow
	Due       time.Time
	Wait, Ran time.Duration
	Started   bool
}

func newStepView(s *hopper.StepRow, now time.Time) stepView {
	j := s.Job
	sv := stepView{StepRow: s}
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

// workflow is a workflow's page: its state, its graph and its steps with their timings. While
// the workflow runs its live part (all of that) refreshes as the overview does.
func (h *Handler) workflow(w http.ResponseWriter, r *http.Request, v *view) error {
	id := r.PathValue("id")
	stepState := r.URL.Query().Get("step_state")
	if stepState != "" && !hopper.JobState(stepState).Valid() {
		return invalid("step_state", "%q is not a job state", stepState)
	}
	det, err := h.client.Workflow(r.Context(), id)
	if err != nil {
		return err
	}
	wf := det.Workflow
	if wf.State == hopper.WorkflowRunning {
		path := "/workflows/" + pathEscape(wf.ID)
		if stepState != "" {
			path += "?step_state=" + url.QueryEscape(stepState)
		}
		h.refreshing(v, path)
	}
	d := &workflowData{Workflow: wf, MaxGraph: maxGraphSteps, StepState: stepState, JobStates: states,
		TotalSteps: len(det.Steps)}
	if len(det.Steps) <= maxGraphSteps {
		d.Graph = layout(det.Steps)
	} else {
		d.Depths = countByDepth(det.Steps)
	}
	for _, s := range det.Steps {
		if stepState != "" && string(s.Job.State) != stepState {
			continue
		}
		d.Matching++
		if len(d.Steps) < maxStepRows {
			d.Steps = append(d.Steps, newStepView(s, v.Now))
		}
	}
	d.Hidden = d.Matching - len(d.Steps)
	v.Title, v.Data = "Workflow "+wf.Name, d
	h.render(w, r, http.StatusOK, "workflow", v)
	return nil
}

// askWorkflowCancel asks before a workflow is canceled, counting the steps it would cancel.
func (h *Handler) askWorkflowCancel(r *http.Request, _ *view) (*confirmation, error) {
	det, err := h.client.Workflow(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	wf := det.Workflow
	if wf.State != hopper.WorkflowRunning {
		return nil, fmt.Errorf("workflow %s has ended", wf.ID) // the cancel refuses it
	}
	var open, running int
	for _, s := range det.Steps {
		if !s.Job.State.Terminal() {
			open++
		}
		if s.Job.State == hopper.StateRunning {
			running++
		}
	}
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
