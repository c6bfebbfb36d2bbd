package hopperui_test

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperui"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

// enqueueWorkflow enqueues a workflow of Steps jobs: each step's args by name, after the
// steps after names (name → parents).
func enqueueWorkflow(t *testing.T, e *uitest.Env, name string, steps []hopper.WorkflowStep) *hopper.WorkflowResult {
	t.Helper()
	res, err := e.Client.EnqueueWorkflow(t.Context(), hopper.Workflow{Name: name, Steps: steps})
	require.NoError(t, err)
	return res
}

// later is a step that waits an hour before it runs: its workflow stays running.
func later(name string, after ...string) hopper.WorkflowStep {
	return hopper.WorkflowStep{Name: name, Args: uitest.Steps{Note: name}, After: after,
		Opts: &hopper.InsertOpts{Queue: "mail", Delay: time.Hour}}
}

// waitWorkflow waits until the workflow is in state.
func waitWorkflow(t *testing.T, e *uitest.Env, id string, state hopper.WorkflowState) *hopper.WorkflowDetail {
	t.Helper()
	var d *hopper.WorkflowDetail
	require.Eventually(t, func() bool {
		var err error
		d, err = e.Client.Workflow(t.Context(), id)
		require.NoError(t, err)
		return d.Workflow.State == state
	}, 15*time.Second, 10*time.Millisecond, "workflow %s to become %s", id, state)
	return d
}

// svgOf returns the workflow page's graph, and requires it to be well-formed XML whose step
// boxes (<a data-step>) are returned by step name.
func svgOf(t *testing.T, body string) map[string]bool {
	t.Helper()
	start, end := strings.Index(body, "<svg xmlns"), strings.Index(body, "</svg>")
	require.True(t, start >= 0 && end > start, "the page has a graph")
	dec := xml.NewDecoder(strings.NewReader(body[start : end+len("</svg>")]))
	steps := map[string]bool{}
	paths := 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the graph is well-formed XML")
		if el, ok := tok.(xml.StartElement); ok {
			switch el.Name.Local {
			case "a":
				for _, a := range el.Attr {
					if a.Name.Local == "data-step" {
						steps[a.Value] = true
					}
				}
			case "path":
				paths++
			}
		}
	}
	steps["#edges"] = paths > 0
	return steps
}

// regexpFind returns the first group of pattern in s, which must match.
func regexpFind(t *testing.T, s, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	require.NotNil(t, m, pattern)
	return m[1]
}

// The workflows page lists workflows newest first, filtered by name and state and paged; bad
// filter values are a 400 naming the field, never a 500.
func TestWorkflowsPageListsAndFilters(t *testing.T) {
	t.Parallel()
	e := uitest.Start(t, nil)
	failed := enqueueWorkflow(t, e, "fails", []hopper.WorkflowStep{
		{Name: "fetch", Args: uitest.Steps{Fail: "boom"}}, later("small", "fetch")})
	running := enqueueWorkflow(t, e, "later", []hopper.WorkflowStep{later("x"), later("y", "x")})
	waitWorkflow(t, e, failed.Workflow.ID, hopper.WorkflowFailed)

	body := page(t, e.URL+"/workflows")
	require.Contains(t, body, `aria-current="page">Workflows<`)
	require.Contains(t, body, failed.Workflow.ID)
	require.Contains(t, body, running.Workflow.ID)
	require.Less(t, strings.Index(body, running.Workflow.ID), strings.Index(body, failed.Workflow.ID), "newest first")
	require.Contains(t, row(body, running.Workflow.ID), `state-running">running<`)
	require.Contains(t, row(body, failed.Workflow.ID), `state-failed">failed<`)

	byName := page(t, e.URL+"/workflows?name=fails")
	require.Contains(t, byName, failed.Workflow.ID)
	require.NotContains(t, byName, running.Workflow.ID)
	byState := page(t, e.URL+"/workflows?state=running")
	require.Contains(t, byState, running.Workflow.ID)
	require.NotContains(t, byState, failed.Workflow.ID)
	require.Contains(t, byState, `<option selected>running</option>`)

	first := page(t, e.URL+"/workflows?limit=1")
	require.Contains(t, first, running.Workflow.ID)
	require.NotContains(t, first, failed.Workflow.ID)
	next := regexpFind(t, first, `href="/ui/workflows(\?[^"]+)" id="next"`)
	second := page(t, e.URL+"/workflows"+strings.ReplaceAll(next, "&amp;", "&"))
	require.Contains(t, second, failed.Workflow.ID)
	require.NotContains(t, second, running.Workflow.ID)

	for q, field := range map[string]string{"state=bogus": "Invalid state", "name=no+spaces": "Invalid name",
		"limit=0": "Invalid limit", "cursor=nope": "Invalid cursor"} {
		status, body, _ := fetch(t, e.URL+"/workflows?"+q)
		require.Equal(t, http.StatusBadRequest, status, q)
		require.Contains(t, body, field, q)
	}
}

// A workflow's page draws every step in a well-formed SVG graph, lists each step's state and
// timings, refreshes while the workflow runs, and answers 404 for an unknown workflow, 400 for
// a malformed id or step state.
func TestWorkflowPageDrawsEveryStep(t *testing.T) {
	t.Parallel()
	e := uitest.Start(t, nil)
	res := enqueueWorkflow(t, e, "album", []hopper.WorkflowStep{
		later("fetch"), later("small", "fetch"), later("large", "fetch"), later("publish", "small", "large")})
	id := res.Workflow.ID
	u := e.URL + "/workflows/" + id
	body := page(t, u)
	require.Equal(t, map[string]bool{"fetch": true, "small": true, "large": true, "publish": true, "#edges": true}, svgOf(t, body))
	require.Equal(t, 4, strings.Count(body, "<path "), "one edge per parent")
	for _, s := range []string{"fetch", "small", "large", "publish"} {
		require.Contains(t, row(body, `class="step" data-step="`+s+`"`), res.Job(s).ID, s)
	}
	require.Contains(t, row(body, `class="step" data-step="fetch"`), `state-scheduled">scheduled<`)
	require.Contains(t, row(body, `class="step" data-step="publish"`), `state-waiting">waiting<`)
	require.Contains(t, row(body, `class="step" data-step="publish"`), "small, large")

	// Live while it runs, as the overview: the part alone on htmx's request.
	require.Contains(t, body, `<div id="live" hx-get="/ui/workflows/`+id+`" hx-trigger="every 5s"`)
	part := live(t, u)
	require.NotContains(t, part, "<html")
	require.Contains(t, part, `id="workflow-state">running<`)

	filtered := page(t, u+"?step_state=waiting")
	require.Len(t, svgOf(t, filtered), 5, "the graph draws every step, whatever the table's filter")
	require.Equal(t, []string{"small", "large", "publish"}, stepsOf(filtered))
	require.Contains(t, filtered, `data-step="publish"`)
	require.NotContains(t, row(filtered, `class="step" data-step="fetch"`), res.Job("fetch").ID)

	for path, want := range map[string]int{"/workflows/" + uuid.NewString(): http.StatusNotFound,
		"/workflows/not-an-id": http.StatusNotFound, "/workflows/" + id + "?step_state=bogus": http.StatusBadRequest} {
		status, body, _ := fetch(t, e.URL+path)
		require.Equal(t, want, status, path)
		require.Contains(t, body, `class="error"`, path)
	}

	// A step's job page links to its workflow, its parents and its children.
	small := page(t, e.URL+"/jobs/"+res.Job("small").ID)
	require.Contains(t, small, `href="/ui/workflows/`+id+`">album</a>, step <strong>small</strong>`)
	require.Contains(t, small, `href="/ui/jobs/`+res.Job("fetch").ID+`">fetch</a>`)
	require.Contains(t, small, `href="/ui/jobs/`+res.Job("publish").ID+`">publish</a>`)

	// Canceled, it has ended: no more polling, no cancel button.
	_, err := e.Client.CancelWorkflow(t.Context(), id, "test")
	require.NoError(t, err)
	ended := page(t, u)
	require.NotContains(t, ended, "hx-get")
	require.NotContains(t, ended, `id="cancel-workflow"`)
	require.Contains(t, ended, `id="workflow-state">canceled<`)
}

// stepsOf returns the step names of a workflow page's step table, in order.
func stepsOf(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<tr class="step" data-step="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// nextOf follows a page's link of id, "" when it has none.
func nextOf(body, id string) string {
	m := regexp.MustCompile(`href="/ui([^"]+)" id="` + id + `"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// Beyond the steps a graph draws, the page says so, counts the steps by state (each count a
// link to them) and lists them a page at a time, filtered by state and by a part of the name;
// a step's page lists its first parents and children and links to the rest.
func TestWorkflowPageLargeWorkflowPagesItsSteps(t *testing.T) {
	t.Parallel()
	e := uitest.Start(t, nil)
	steps := []hopper.WorkflowStep{later("root")}
	var leaves []string
	for i := range 320 {
		leaves = append(leaves, fmt.Sprintf("leaf-%03d", i))
		steps = append(steps, later(leaves[i], "root"))
	}
	steps = append(steps, later("sink", leaves[:25]...))
	res := enqueueWorkflow(t, e, "wide", steps)
	id := res.Workflow.ID
	u := e.URL + "/workflows/" + id
	body := page(t, u)
	require.NotContains(t, body, "<svg xmlns")
	require.Contains(t, body, "The workflow has 322 steps: the graph is drawn for at most 300")
	require.Contains(t, body, `href="/ui/workflows/`+id+`?step_state=waiting">321 waiting</a>`)
	require.Contains(t, body, `href="/ui/workflows/`+id+`?step_state=scheduled">1 scheduled</a>`)
	require.Contains(t, body, `hx-get="/ui/workflows/`+id+`"`, "it refreshes")

	var all []string
	pages := 0
	for next := "/workflows/" + id; next != ""; pages++ {
		body := page(t, e.URL+next)
		require.LessOrEqual(t, len(stepsOf(body)), 100)
		all = append(all, stepsOf(body)...)
		next = nextOf(body, "next-steps")
	}
	require.Equal(t, 4, pages)
	require.Equal(t, append(append([]string{"root"}, leaves...), "sink"), all, "every step once, in insert order")

	second := page(t, e.URL+nextOf(body, "next-steps"))
	require.Contains(t, second, `id="first-steps"`)
	require.Contains(t, second, `hx-get="/ui/workflows/`+id+`?cursor=`, "a refresh keeps the page")

	require.Equal(t, []string{"leaf-010", "leaf-011", "leaf-012", "leaf-013", "leaf-014", "leaf-015", "leaf-016",
		"leaf-017", "leaf-018", "leaf-019"}, stepsOf(page(t, u+"?step=leaf-01")))
	require.Equal(t, []string{"root"}, stepsOf(page(t, u+"?step_state=scheduled")))
	require.Contains(t, row(page(t, u+"?step=sink"), `data-step="sink"`), "leaf-019 <span class=\"muted\">and 5 more</span>",
		"a step's first 20 parents, counted")
	require.Empty(t, stepsOf(page(t, u+"?step_state=waiting&step=root")))
	for q, field := range map[string]string{"cursor=nope": "Invalid cursor", "step_state=bogus": "Invalid step_state",
		"step=" + strings.Repeat("x", 300): "Invalid step: is 300 bytes, more than 255"} {
		status, body, _ := fetch(t, u+"?"+q)
		require.Equal(t, http.StatusBadRequest, status, q)
		require.Contains(t, body, field, q)
	}

	// The root's page lists 20 of its 320 children, and links to the rest.
	root := page(t, e.URL+"/jobs/"+res.Job("root").ID)
	require.Contains(t, root, `href="/ui/workflows/`+id+`">wide</a>, step <strong>root</strong> (<span class="state state-running">running</span>)`)
	require.Equal(t, 20, strings.Count(regexpFind(t, root, `<dd id="children">(.*?)</dd>`), `class="mono"`))
	require.Contains(t, root, `href="/ui/jobs/`+res.Job("root").ID+`/children" id="more-children">and 300 more</a>`)
	var children []string
	for next := "/jobs/" + res.Job("root").ID + "/children"; next != ""; {
		body := page(t, e.URL+next)
		require.Contains(t, body, "320 in all")
		for _, m := range regexp.MustCompile(`<tr class="child"><td class="mono"><a href="/ui/jobs/([^"]+)"`).FindAllStringSubmatch(body, -1) {
			children = append(children, m[1])
		}
		next = nextOf(body, "next")
	}
	require.Len(t, children, 320)
	require.Equal(t, res.Job("leaf-000").ID, children[0])

	// The sink's page lists 20 of its 25 parents; its parents' page all of them.
	sink := page(t, e.URL+"/jobs/"+res.Job("sink").ID)
	require.Contains(t, sink, `href="/ui/jobs/`+res.Job("sink").ID+`/parents" id="more-parents">and 5 more</a>`)
	require.NotContains(t, sink, `id="more-children"`)
	parents := page(t, e.URL+"/jobs/"+res.Job("sink").ID+"/parents")
	require.Equal(t, 25, strings.Count(parents, `<tr class="parent">`))
	require.Contains(t, parents, "25 in all")
	leaf := page(t, e.URL+"/jobs/"+res.Job("leaf-001").ID)
	require.NotContains(t, leaf, `id="more-parents"`)
	require.Contains(t, leaf, `href="/ui/jobs/`+res.Job("sink").ID+`">sink</a>`)
	status, _, _ := fetch(t, e.URL+"/jobs/"+res.Job("root").ID+"/children?cursor=nope")
	require.Equal(t, http.StatusBadRequest, status)
}

// Cancel the workflow and retry a failed step from its page: both ask first, act through the
// Client's calls, and come back to the workflow. An unknown workflow is 404, an ended one 409.
func TestWorkflowPageActions(t *testing.T) {
	t.Parallel()
	e := uitest.Start(t, nil)
	res := enqueueWorkflow(t, e, "later", []hopper.WorkflowStep{later("x"), later("y", "x")})
	id := res.Workflow.ID
	body := page(t, e.URL+"/workflows/"+id)
	require.Contains(t, body, `action="/ui/workflows/`+id+`/cancel"`)

	status, body := post(t, e.URL+"/workflows/"+id+"/cancel", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Cancel workflow "+id+" (later)?")
	require.Contains(t, body, "Its 2 step(s) that have not ended end canceled")
	waitWorkflow(t, e, id, hopper.WorkflowRunning) // asked, not done
	status, body = post(t, e.URL+"/workflows/"+id+"/cancel", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `id="workflow-state">canceled<`, "the workflow's page follows")
	events, err := e.Client.Events(t.Context(), res.Job("x").ID)
	require.NoError(t, err)
	require.Equal(t, "dashboard cancel by dashboard", events[len(events)-1].Reason)
	status, _ = post(t, e.URL+"/workflows/"+id+"/cancel", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusConflict, status, "an ended workflow")
	status, body = post(t, e.URL+"/workflows/"+id+"/cancel", nil)
	require.Equal(t, http.StatusConflict, status, "asked to cancel an ended workflow")
	require.Contains(t, body, "Refused: cancel workflow "+id+": every step has ended")
	status, _ = post(t, e.URL+"/workflows/"+uuid.NewString()+"/cancel", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusNotFound, status)

	failed := enqueueWorkflow(t, e, "fails", []hopper.WorkflowStep{
		{Name: "fetch", Args: uitest.Steps{Fail: "boom"}}, later("small", "fetch")})
	waitWorkflow(t, e, failed.Workflow.ID, hopper.WorkflowFailed)
	fetchID := failed.Job("fetch").ID
	body = page(t, e.URL+"/workflows/"+failed.Workflow.ID)
	require.Contains(t, row(body, `class="step" data-step="fetch"`), `action="/ui/jobs/`+fetchID+`/retry"`)
	require.NotContains(t, row(body, `class="step" data-step="small"`), "/retry")
	status, body = post(t, e.URL+"/jobs/"+fetchID+"/retry", url.Values{"back": {"workflow"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Retry job "+fetchID+" in place?")
	require.Contains(t, body, `href="/ui/workflows/`+failed.Workflow.ID+`" id="back"`)
	status, body = post(t, e.URL+"/jobs/"+fetchID+"/retry", url.Values{"back": {"workflow"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "<h1>Workflow <span class=\"mono\">"+failed.Workflow.ID, "back to the workflow")
	log, err := e.Client.Replays(t.Context(), &hopper.ReplayListParams{SourceJobID: fetchID})
	require.NoError(t, err)
	require.Len(t, log.Replays, 1)
	require.Equal(t, hopper.ActionRetry, log.Replays[0].Action)
}

// A read-only dashboard shows workflows without their actions and refuses them.
func TestWorkflowActionsRefusedReadOnly(t *testing.T) {
	t.Parallel()
	e := uitest.Start(t, &uitest.Opts{UI: func(c *hopperui.Config) { c.ReadOnly = true }})
	res := enqueueWorkflow(t, e, "fails", []hopper.WorkflowStep{
		{Name: "fetch", Args: uitest.Steps{Fail: "boom"}}, later("other")})
	e.WaitState(t, res.Job("fetch").ID, hopper.StateFailed)
	body := page(t, e.URL+"/workflows/"+res.Workflow.ID)
	require.NotContains(t, body, "/cancel")
	require.NotContains(t, body, "/retry")
	for _, u := range []string{"/workflows/" + res.Workflow.ID + "/cancel", "/jobs/" + res.Job("fetch").ID + "/retry"} {
		status, _ := post(t, e.URL+u, url.Values{"confirm": {"yes"}, "back": {"workflow"}})
		require.Equal(t, http.StatusForbidden, status, u)
	}
	d := waitWorkflow(t, e, res.Workflow.ID, hopper.WorkflowRunning)
	require.Equal(t, 1, d.Workflow.StepStates[hopper.StateFailed], "nothing changed")
}
