package dashboard

import (
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperui"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

// A workflow's page draws its graph in the browser (a box per step, laid out, coloured by
// state), follows the workflow without a reload while it runs, retries a failed step in
// place and cancels the workflow, each once confirmed, coming back to the workflow.
func TestWorkflowPageInTheBrowser(t *testing.T) {
	e := uitest.Start(t, &uitest.Opts{UI: func(c *hopperui.Config) { c.Refresh = time.Second }})
	tb := newTab(t)
	res, err := e.Client.EnqueueWorkflow(t.Context(), hopper.Workflow{Name: "album", Steps: []hopper.WorkflowStep{
		{Name: "fetch", Args: uitest.Steps{Fail: "boom"}},
		{Name: "small", Args: uitest.Steps{Note: "small"}, After: []string{"fetch"}, OnParentFailure: hopper.ParentRun,
			Opts: &hopper.InsertOpts{Delay: time.Hour}},
		{Name: "later", Args: uitest.Steps{Note: "later"}, Opts: &hopper.InsertOpts{Delay: time.Hour}}}})
	require.NoError(t, err)
	id := res.Workflow.ID
	fetch := e.WaitState(t, res.Job("fetch").ID, hopper.StateFailed)

	tb.open(e.URL + "/workflows")
	tb.click(`#workflows a[href$="/workflows/` + id + `"]`)
	require.Equal(t, "Workflow "+id, tb.text("h1"))
	require.Equal(t, 3, eval[int](tb, `document.querySelectorAll('#graph svg a.node').length`))
	require.Greater(t, eval[float64](tb, `document.querySelector('#graph svg').getBBox().width`), 300.0, "drawn: two columns")
	require.Equal(t, "rgb(196, 48, 43)", eval[string](tb, `getComputedStyle(document.querySelector('#graph a.node.state-failed rect')).stroke`),
		"a failed step is drawn in the failure colour")
	require.Empty(t, tb.consoleErrors())

	// Live: the state follows the store without a reload.
	tb.waitText(`tr[data-step="small"] .state`, "scheduled")
	eval[bool](tb, `window.hopperStale = true`)
	_, err = e.Client.Cancel(t.Context(), res.Job("small").ID)
	require.NoError(t, err)
	tb.waitText(`tr[data-step="small"] .state`, "canceled")
	require.True(t, eval[bool](tb, `window.hopperStale === true`), "by htmx, not by a reload")

	// Retry the failed step in place: asked first, then back to the workflow.
	tb.click(`tr[data-step="fetch"] button.retry-step`)
	require.Contains(t, tb.text("h1"), "Retry job "+fetch.ID+" in place?")
	tb.click(`#confirm`)
	require.Equal(t, "Workflow "+id, tb.text("h1"))
	log, err := e.Client.Replays(t.Context(), &hopper.ReplayListParams{SourceJobID: fetch.ID})
	require.NoError(t, err)
	require.Len(t, log.Replays, 1)

	// Cancel the workflow: asked first, then canceled.
	tb.click(`#cancel-workflow`)
	require.Contains(t, tb.text("h1"), "Cancel workflow "+id)
	tb.click(`#confirm`)
	d, err := e.Client.Workflow(t.Context(), id)
	require.NoError(t, err)
	require.NotEqual(t, hopper.WorkflowRunning, d.Workflow.State)
	require.Equal(t, string(d.Workflow.State), tb.text("#workflow-state"))
	require.Empty(t, tb.consoleErrors())
}
