package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

// Every page loads in a real browser without a console error, exception or CSP violation,
// and shows what the store holds.
func TestEveryPageLoadsCleanly(t *testing.T) {
	e := uitest.Start(t, nil)
	tb := newTab(t)
	dead := e.Failed(t, "boom")
	running := e.Enqueue(t, uitest.Steps{Note: "long"}, &hopper.InsertOpts{Queue: "reports"})
	e.WaitState(t, running.ID, hopper.StateRunning)
	e.Progress <- uitest.Progress{Percent: 40, Message: "halfway there"}
	_, err := e.Client.AddSchedule(t.Context(), hopper.Schedule{Name: "nightly", Cron: "0 3 * * *", TZ: "Europe/Paris", Kind: "steps"})
	require.NoError(t, err)
	defer close(e.Progress)
	wf, err := e.Client.EnqueueWorkflow(t.Context(), hopper.Workflow{Name: "album", Steps: []hopper.WorkflowStep{
		{Name: "fetch", Args: uitest.Steps{Note: "fetch"}, Opts: &hopper.InsertOpts{Delay: time.Hour}},
		{Name: "publish", Args: uitest.Steps{Note: "publish"}, After: []string{"fetch"}}}})
	require.NoError(t, err)

	pages := []struct{ path, h1, contains string }{
		{"/", "Overview", "reports"},
		{"/jobs", "Jobs", dead.ID},
		{"/jobs/" + dead.ID, "Job " + dead.ID, "boom"},
		{"/jobs/" + running.ID, "Job " + running.ID, "halfway there"},
		{"/queues", "Queues", "reports"},
		{"/dead-letters", "Dead letters", dead.ID},
		{"/schedules", "Schedules", "Europe/Paris"},
		{"/workflows", "Workflows", wf.Workflow.ID},
		{"/workflows/" + wf.Workflow.ID, "Workflow " + wf.Workflow.ID, "publish"},
		{"/workers", "Workers", "ui-test-node"},
	}
	for _, p := range pages {
		tb.open(e.URL + p.path)
		require.Equal(t, p.h1, tb.text("h1"), p.path)
		require.Contains(t, tb.text("main"), p.contains, p.path)
		require.Empty(t, tb.consoleErrors(), "console of %s", p.path)
	}
	require.Contains(t, tb.text("#nodes"), "leader", "the leader is marked")

	// A path that is no page answers with one, not a crash.
	tb.open(e.URL + "/nowhere")
	require.Equal(t, "Not Found", tb.text("h1"))

	// The listener hears the console: the checks above are not vacuous.
	eval[any](tb, `console.error("probe")`)
	require.Eventually(t, func() bool { return len(tb.consoleErrors()) > 0 }, 5*time.Second, 10*time.Millisecond)
}

// Search finds a job by text in its args, by kind and by id; bad input is shown in the page,
// naming the field, with the form still filled in.
func TestSearchFindsAJob(t *testing.T) {
	e := uitest.Start(t, nil)
	tb := newTab(t)
	want := e.Enqueue(t, uitest.Steps{Note: "invoice INV-7731"}, &hopper.InsertOpts{Queue: "billing", Delay: time.Hour})
	for i := range 3 {
		e.Enqueue(t, uitest.Steps{Note: fmt.Sprintf("other %d", i)}, &hopper.InsertOpts{Queue: "billing", Delay: time.Hour})
	}
	tb.open(e.URL + "/jobs")
	tb.run(chromedp.SendKeys(chromedp.CSS(`#search input[name=q]`), "INV-7731"))
	tb.click(`#search button[type=submit]`)
	rows := eval[[]string](tb, `[...document.querySelectorAll('#jobs tbody tr td.mono')].map(td => td.textContent.trim())`)
	require.Equal(t, []string{want.ID}, rows)

	tb.open(e.URL + "/jobs?id=" + want.ID)
	rows = eval[[]string](tb, `[...document.querySelectorAll('#jobs tbody tr td.mono')].map(td => td.textContent.trim())`)
	require.Equal(t, []string{want.ID}, rows)

	tb.open(e.URL + "/jobs?state=lost&kind=steps")
	require.Contains(t, tb.text("#error"), "states")
	tb.expectBadRequest()
	require.Equal(t, "steps", eval[string](tb, `document.querySelector('#search input[name=kind]').value`),
		"the form keeps what was typed")
	require.Empty(t, tb.consoleErrors())
}

// The job page's progress bar and heartbeat follow a running job without a reload, and the
// page stops polling once the job ends.
func TestLiveProgressMoves(t *testing.T) {
	e := uitest.Start(t, nil)
	tb := newTab(t)
	job := e.Enqueue(t, uitest.Steps{Note: "live"}, nil)
	e.WaitState(t, job.ID, hopper.StateRunning)
	tb.open(e.URL + "/jobs/" + job.ID)
	tb.waitText("#percent", "0%")
	e.Progress <- uitest.Progress{Percent: 25, Message: "a quarter"}
	tb.waitText("#percent", "25%")
	tb.waitText("#progress-message", "a quarter")
	require.Equal(t, 25.0, eval[float64](tb, `document.querySelector('#progress').value`))
	require.NotEqual(t, "—", tb.text("#heartbeat"), "the progress report is a heartbeat")
	e.Progress <- uitest.Progress{Percent: 80, Message: "nearly"}
	tb.waitText("#percent", "80%")
	close(e.Progress)
	tb.waitText("#state", "completed")
	require.False(t, eval[bool](tb, `document.querySelector('#live').hasAttribute('hx-trigger')`),
		"an ended job is not polled")
	require.Empty(t, tb.consoleErrors())
}

// Pause, cancel, replay and bulk retry, clicked in the browser, change the store.
func TestChangesReachTheStore(t *testing.T) {
	e := uitest.Start(t, nil)
	tb := newTab(t)
	later := e.Enqueue(t, uitest.Steps{Note: "later"}, &hopper.InsertOpts{Queue: "mail", Delay: time.Hour})

	tb.open(e.URL + "/queues")
	tb.click(`#queue-mail button.pause`)
	require.Contains(t, tb.text("#notice"), "Paused queue mail")
	require.True(t, queue(t, e, "mail").Paused)
	tb.click(`#queue-mail button.resume`)
	require.False(t, queue(t, e, "mail").Paused)

	tb.run(chromedp.SendKeys(chromedp.CSS(`#queue-mail input[name=weight]`), "3"))
	tb.click(`#queue-mail form[action$="/settings"] button`)
	require.Equal(t, 3, queue(t, e, "mail").Weight)
	tb.run(chromedp.SendKeys(chromedp.CSS(`#queue-mail input[name=rate]`), "ten a second"))
	tb.click(`#queue-mail form[action$="/settings"] button`)
	require.Contains(t, tb.text("#error"), "Invalid rate", "bad input names its field")
	tb.expectBadRequest()

	// Limits per key of a kind, and a queue's weight per fairness key, from their forms.
	tb.open(e.URL + "/queues")
	tb.run(chromedp.SendKeys(chromedp.CSS(`#kinds form[action$="/kinds/steps/settings"] input[name=cap_per_key]`), "2"))
	tb.click(`#kinds form[action$="/kinds/steps/settings"] button`)
	require.Contains(t, tb.text("#notice"), "Saved the settings of kind steps")
	ks, err := e.Client.Kinds(t.Context())
	require.NoError(t, err)
	require.Equal(t, "steps", ks[0].Name)
	require.Equal(t, 2, ks[0].CapPerKey)
	tb.run(chromedp.SendKeys(chromedp.CSS(`#key-weights-mail input[name=fairness_key]`), "tenant-a"),
		chromedp.SendKeys(chromedp.CSS(`#key-weights-mail input[name=weight]`), "3"))
	tb.click(`#key-weights-mail form.key-weight button`)
	require.Equal(t, map[string]int{"tenant-a": 3}, queue(t, e, "mail").KeyWeights)
	require.Contains(t, tb.text("#key-weights-mail"), "tenant-a = 3")
	tb.click(`#key-weights-mail button.remove`)
	require.Empty(t, queue(t, e, "mail").KeyWeights)
	tb.run(chromedp.SendKeys(chromedp.CSS(`#key-weights-mail input[name=weight]`), "2"))
	tb.click(`#key-weights-mail form.key-weight button`)
	require.Contains(t, tb.text("#error"), "fairness_key", "an empty key is named")
	tb.expectBadRequest()

	// Cancel asks first: going back changes nothing; confirming cancels.
	tb.open(e.URL + "/jobs/" + later.ID)
	tb.click(`#cancel`)
	require.Equal(t, "Cancel job "+later.ID+"?", tb.text("h1"))
	got, err := e.Client.Get(t.Context(), later.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.StateScheduled, got.State, "asked, not done")
	tb.click(`#back`)
	require.Equal(t, "scheduled", tb.text("#state"))
	tb.click(`#cancel`)
	tb.click(`#confirm`)
	require.Equal(t, "canceled", tb.text("#state"))
	got, err = e.Client.Get(t.Context(), later.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.StateCanceled, got.State)
	events, err := e.Client.Events(t.Context(), later.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.ActorOperator, events[len(events)-1].Actor, "audited as an operator's change")

	dead := e.Failed(t, "boom")
	tb.open(e.URL + "/jobs/" + dead.ID)
	tb.click(`#replay`)
	replays, err := e.Client.Replays(t.Context(), &hopper.ReplayListParams{SourceJobID: dead.ID})
	require.NoError(t, err)
	require.Len(t, replays.Replays, 1)
	require.Equal(t, "dashboard", replays.Replays[0].ReplayedBy)
	require.Contains(t, tb.text("h1"), replays.Replays[0].NewJobID, "the replay's page follows")

	// Retry in place asks first, then puts the same job back to work with more attempts.
	incident := e.Failed(t, "boom")
	tb.open(e.URL + "/jobs/" + incident.ID)
	tb.run(chromedp.SetValue(chromedp.CSS(`#retries`), "2"))
	tb.click(`#retry`)
	require.Equal(t, "Retry job "+incident.ID+" in place?", tb.text("h1"))
	tb.click(`#confirm`)
	require.Contains(t, tb.text("h1"), incident.ID, "the same job's page follows")
	retried, err := e.Client.Get(t.Context(), incident.ID)
	require.NoError(t, err)
	require.Equal(t, incident.Attempt+2, retried.MaxAttempts)

	// Bulk replay of two ticked dead letters out of three (bulk retry in place: hopperui's tests).
	d1, d2, d3 := e.Failed(t, "one"), e.Failed(t, "two"), e.Failed(t, "three")
	tb.open(e.URL + "/jobs?state=failed")
	tb.run(chromedp.Click(chromedp.CSS(`input[value="`+d1.ID+`"]`)), chromedp.Click(chromedp.CSS(`input[value="`+d3.ID+`"]`)))
	tb.click(`button[value=replay]`)
	require.Equal(t, "Replay the 2 ticked job(s)?", tb.text("h1"))
	require.ElementsMatch(t, []string{d1.ID, d3.ID}, eval[[]string](tb, `[...document.querySelectorAll('#confirm-ids li')].map(li => li.textContent.trim())`))
	tb.click(`#confirm`)
	require.Contains(t, tb.text("#notice"), "Replayed 2 job(s)")
	for id, n := range map[string]int{d1.ID: 1, d2.ID: 0, d3.ID: 1} {
		rs, err := e.Client.Replays(t.Context(), &hopper.ReplayListParams{SourceJobID: id})
		require.NoError(t, err)
		require.Len(t, rs.Replays, n, id)
	}

	// Replay all on the dead-letters page: the ones never replayed (d2, and the first "boom"
	// was replayed already), bounded by the form's limit.
	tb.open(e.URL + "/dead-letters")
	tb.run(chromedp.SetValue(chromedp.CSS(`#replay-all input[name=limit]`), "1"))
	tb.click(`#replay-all button`)
	require.Equal(t, "Replay up to 1 dead letter(s)?", tb.text("h1"))
	tb.click(`#confirm`)
	require.Contains(t, tb.text("#notice"), "Replayed 1 dead letter(s)")
	require.Contains(t, tb.text("#replays"), "dashboard")
	require.Empty(t, tb.consoleErrors())
}

// The overview, queues and workers pages follow the store without a reload; a queue's
// settings being typed survive the refresh; the jobs page has state tabs.
func TestPagesRefreshLive(t *testing.T) {
	e := uitest.Start(t, nil)
	tb := newTab(t)
	e.Enqueue(t, uitest.Steps{Note: "later"}, &hopper.InsertOpts{Queue: "mail", Delay: time.Hour})

	tb.open(e.URL + "/queues")
	tb.waitText(`#queue-mail .count-scheduled`, "1")
	eval[bool](tb, `window.hopperStale = true`) // no page load from here on
	tb.run(chromedp.SendKeys(chromedp.CSS(`#queue-mail input[name=weight]`), "7"))
	refreshed := tb.text(".refreshed")
	e.Enqueue(t, uitest.Steps{Note: "later"}, &hopper.InsertOpts{Queue: "mail", Delay: time.Hour})
	tb.waitText(`#queue-mail .count-scheduled`, "2")
	require.NotEqual(t, refreshed, tb.text(".refreshed"), "the live part was swapped")
	require.True(t, eval[bool](tb, `window.hopperStale === true`), "by htmx, not by a reload")
	require.Equal(t, "7", eval[string](tb, `document.querySelector('#queue-mail input[name=weight]').value`),
		"what is being typed survives the refresh")
	tb.click(`#queue-mail form[action$="/settings"] button`)
	require.Equal(t, 7, queue(t, e, "mail").Weight)

	tb.open(e.URL + "/")
	tb.waitText(`#total-scheduled`, "2")
	e.Enqueue(t, uitest.Steps{Note: "later"}, &hopper.InsertOpts{Queue: "mail", Delay: time.Hour})
	tb.waitText(`#total-scheduled`, "3")

	tb.open(e.URL + "/workers")
	require.NotContains(t, tb.text("#nodes"), "node-b")
	require.NoError(t, e.Store.NodeHeartbeat(t.Context(), &hopper.Node{ID: "node-b", Host: "h", PID: 2}))
	if !tb.until(`document.querySelector('#nodes').textContent.includes('node-b')`) {
		t.Fatal("the workers page did not show the new node")
	}

	tb.open(e.URL + "/jobs?queue=mail")
	require.Equal(t, "3", tb.text(`#state-tabs a[data-state=scheduled] .count`))
	tb.click(`#state-tabs a[data-state=queued]`)
	require.Equal(t, "queued", eval[string](tb, `document.querySelector('#search select[name=state]').value`))
	require.Equal(t, "mail", eval[string](tb, `document.querySelector('#search input[name=queue]').value`))
	require.Equal(t, "No jobs match.", tb.text("#jobs tbody td"))
	require.Empty(t, tb.consoleErrors())
}

// The schedules page runs a schedule now and removes one, each once confirmed.
func TestSchedulesRunAndRemove(t *testing.T) {
	e := uitest.Start(t, nil)
	tb := newTab(t)
	info, err := e.Client.AddSchedule(t.Context(), hopper.Schedule{Name: "nightly", Cron: "0 3 * * *", Kind: "steps", Queue: "archive"})
	require.NoError(t, err)
	tb.open(e.URL + "/schedules")
	require.Equal(t, "never", tb.text(`#schedule-nightly .last-fire`))
	tb.click(`#schedule-nightly button.run`)
	require.Equal(t, "Run schedule nightly now?", tb.text("h1"))
	tb.click(`#confirm`)
	require.Contains(t, tb.text("#notice"), "Ran schedule nightly")
	after, err := e.Client.GetSchedule(t.Context(), "nightly")
	require.NoError(t, err)
	require.NotEmpty(t, after.LastManualJobID)
	require.Equal(t, info.NextFireAt, after.NextFireAt)
	require.Contains(t, tb.text(`#schedule-nightly .last-manual`), after.LastManualJobID)

	tb.click(`#schedule-nightly button.remove`)
	require.Equal(t, "Remove schedule nightly?", tb.text("h1"))
	tb.click(`#confirm`)
	require.Contains(t, tb.text("#notice"), "Removed schedule nightly")
	_, err = e.Client.GetSchedule(t.Context(), "nightly")
	require.ErrorIs(t, err, hopper.ErrNotFound)
	require.Empty(t, tb.consoleErrors())
}

func queue(t *testing.T, e *uitest.Env, name string) *hopper.QueueInfo {
	t.Helper()
	qs, err := e.Client.Queues(t.Context())
	require.NoError(t, err)
	for _, q := range qs {
		if q.Name == name {
			return q
		}
	}
	t.Fatalf("no queue %s", name)
	return nil
}
