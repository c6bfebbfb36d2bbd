package hopperui_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/hopperui"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

// fetch GETs u, with the headers given as name, value pairs, without following redirects,
// and returns the status, the page and the answer's headers.
func fetch(t *testing.T, u string, header ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header
}

// page GETs u and requires a 200.
func page(t *testing.T, u string) string {
	t.Helper()
	status, body, _ := fetch(t, u)
	require.Equal(t, http.StatusOK, status, u)
	return body
}

// live is htmx's request for the live part of the page at u.
func live(t *testing.T, u string) string {
	t.Helper()
	status, body, hd := fetch(t, u, "HX-Request", "true", "HX-Target", "live")
	require.Equal(t, http.StatusOK, status, u)
	require.Contains(t, hd.Get("Vary"), "HX-Target")
	return body
}

// row returns the table row of page whose opening tag contains marker ("" when none does).
func row(page, marker string) string {
	for r := range strings.SplitSeq(page, "<tr") {
		if strings.Contains(r, marker) {
			return r
		}
	}
	return ""
}

// The overview, queues, workers and a running job's page refresh their live part: the page
// polls its own URL, and htmx's request for the part gets the part alone, as it is now. A job
// that has ended, and the other pages, do not poll.
func TestLivePartsRefresh(t *testing.T) {
	e := uitest.Start(t, nil)
	running := e.Enqueue(t, uitest.Steps{Note: "live"}, &hopper.InsertOpts{Queue: "reports"})
	e.WaitState(t, running.ID, hopper.StateRunning)
	defer close(e.Progress)
	for _, p := range []struct{ path, every string }{
		{"/", "5s"}, {"/queues", "5s"}, {"/workers", "5s"}, {"/jobs/" + running.ID, "1s"},
	} {
		full := page(t, e.URL+p.path)
		require.Contains(t, full, `<div id="live" hx-get="/ui`+p.path+`" hx-trigger="every `+p.every+`" hx-swap="outerHTML">`, p.path)
		part := live(t, e.URL+p.path)
		require.True(t, strings.HasPrefix(strings.TrimSpace(part), `<div id="live" hx-get="/ui`+p.path+`"`), "%s: %.80q", p.path, part)
		require.NotContains(t, part, "<html", p.path)
		require.NotContains(t, part, "<h1>", "%s: the part alone", p.path)
	}

	// The part shows the store as it is now.
	countOf := func(part, state string) string {
		m := regexp.MustCompile(`class="num count-` + state + `">(\d+)<`).FindStringSubmatch(row(part, `id="queue-mail"`))
		require.NotNil(t, m, part)
		return m[1]
	}
	e.Enqueue(t, uitest.Steps{Note: "later"}, &hopper.InsertOpts{Queue: "mail", Delay: time.Hour})
	require.Equal(t, "1", countOf(live(t, e.URL+"/queues"), "scheduled"))
	e.Enqueue(t, uitest.Steps{Note: "later"}, &hopper.InsertOpts{Queue: "mail", Delay: time.Hour})
	require.Equal(t, "2", countOf(live(t, e.URL+"/queues"), "scheduled"))
	require.Contains(t, live(t, e.URL+"/"), `id="total-scheduled">2<`)
	require.NoError(t, e.Store.NodeHeartbeat(t.Context(), &hopper.Node{ID: "node-b", Host: "h", PID: 2}))
	require.Contains(t, live(t, e.URL+"/workers"), "node-b")

	dead := e.Failed(t, "boom")
	full := page(t, e.URL+"/jobs/"+dead.ID)
	require.Contains(t, full, `<div id="live" >`, "an ended job does not poll")
	require.NotContains(t, full, "hx-get")
	for _, path := range []string{"/jobs", "/schedules", "/dead-letters"} {
		require.NotContains(t, page(t, e.URL+path), "hx-trigger", path)
		require.Contains(t, live(t, e.URL+path), "<html", "%s has no live part: the page", path)
	}
}

// closedAuth lets nobody in without a session: every request must log in.
type closedAuth struct{}

func (closedAuth) Login(context.Context, string) (*hopperui.Principal, error) {
	return nil, hopperui.ErrBadKey
}
func (closedAuth) StillValid(context.Context, *hopperui.Principal) (bool, error) { return false, nil }
func (closedAuth) Open(context.Context, *http.Request) (*hopperui.Principal, error) {
	return nil, nil
}

// A live part's poll without a session (it ended) sends the whole page to the login page
// (HX-Redirect) instead of swapping the login page into the part.
func TestLivePollWithoutSessionGoesToLogin(t *testing.T) {
	e := uitest.Start(t, &uitest.Opts{UI: func(c *hopperui.Config) { c.Auth = closedAuth{} }})
	status, _, hd := fetch(t, e.URL+"/queues", "HX-Request", "true", "HX-Target", "live")
	require.Equal(t, http.StatusUnauthorized, status)
	require.Equal(t, "/ui/login", hd.Get("HX-Redirect"))
	status, _, hd = fetch(t, e.URL+"/queues")
	require.Equal(t, http.StatusSeeOther, status, "a page is redirected")
	require.Equal(t, "/ui/login", hd.Get("Location"))
}

// Destructive changes ask first: the POST without confirm=yes changes nothing and answers
// with what it would do and a form to confirm it; confirmed, it is done. Bad input is refused
// at once, not asked about.
func TestDestructiveChangesAskFirst(t *testing.T) {
	e := uitest.Start(t, &uitest.Opts{Client: func(c *hopper.Config) {
		c.Schedules = []hopper.Schedule{{Name: "declared", Cron: "@hourly", Kind: "steps"}}
	}})
	later := e.Enqueue(t, uitest.Steps{Note: "later"}, &hopper.InsertOpts{Queue: "mail", Delay: time.Hour})

	status, body := post(t, e.URL+"/jobs/"+later.ID+"/cancel", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Cancel job "+later.ID+"?")
	require.Contains(t, body, `<form method="post" action="/ui/jobs/`+later.ID+`/cancel"`)
	require.Contains(t, body, `<a href="/ui/jobs/`+later.ID+`" id="back">`)
	got, err := e.Client.Get(t.Context(), later.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.StateScheduled, got.State, "asked, not done")
	status, body = post(t, e.URL+"/jobs/"+later.ID+"/cancel", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `id="state">canceled<`, "the job's page follows")
	status, _ = post(t, e.URL+"/jobs/"+later.ID+"/cancel", nil)
	require.Equal(t, http.StatusConflict, status, "an ended job is refused, not asked about")
	status, _ = post(t, e.URL+"/jobs/"+uuid.NewString()+"/cancel", nil)
	require.Equal(t, http.StatusNotFound, status)

	dead := e.Failed(t, "boom")
	status, body = post(t, e.URL+"/dead-letters/replay", url.Values{"limit": {"5"}, "queue": {"default"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, `Replay up to 5 dead letter(s) of queue &#34;default&#34;?`)
	rs, err := e.Client.Replays(t.Context(), &hopper.ReplayListParams{SourceJobID: dead.ID})
	require.NoError(t, err)
	require.Empty(t, rs.Replays, "asked, not done")
	status, body = post(t, e.URL+"/dead-letters/replay", url.Values{"limit": {"5"}, "queue": {"default"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Replayed 1 dead letter(s).")
	status, body = post(t, e.URL+"/dead-letters/replay", url.Values{"limit": {"5000"}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, "Invalid limit")

	_, err = e.Client.AddSchedule(t.Context(), hopper.Schedule{Name: "nightly", Cron: "0 3 * * *", Kind: "steps", Queue: "reports"})
	require.NoError(t, err)
	status, body = post(t, e.URL+"/schedules/nightly/remove", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Remove schedule nightly?")
	_, err = e.Client.GetSchedule(t.Context(), "nightly")
	require.NoError(t, err, "asked, not done")
	status, body = post(t, e.URL+"/schedules/nightly/run", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Run schedule nightly now?")
	info, err := e.Client.GetSchedule(t.Context(), "nightly")
	require.NoError(t, err)
	require.Empty(t, info.LastManualJobID, "asked, not done")
	status, body = post(t, e.URL+"/schedules/nightly/remove", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Removed schedule nightly")
	_, err = e.Client.GetSchedule(t.Context(), "nightly")
	require.ErrorIs(t, err, hopper.ErrNotFound)
	status, body = post(t, e.URL+"/schedules/declared/remove", nil)
	require.Equal(t, http.StatusConflict, status, "a schedule declared in code is refused, not asked about")
	require.Contains(t, body, "declared in code")
}

// The schedules page shows each schedule's next fire times in its zone, "never" for a
// schedule that has not fired (not the time it was saved), and its last manual run; run now
// enqueues the job at once and leaves the next fire times alone; a schedule declared in code
// offers no removal.
func TestSchedulesPageRunsAndShows(t *testing.T) {
	e := uitest.Start(t, &uitest.Opts{Client: func(c *hopper.Config) {
		c.Schedules = []hopper.Schedule{{Name: "declared", Cron: "@hourly", Kind: "steps"}}
	}})
	info, err := e.Client.AddSchedule(t.Context(), hopper.Schedule{Name: "nightly", Cron: "0 3 * * *", TZ: "Europe/Paris",
		Kind: "steps", Queue: "archive", Args: uitest.Steps{Note: "report"}})
	require.NoError(t, err)
	body := page(t, e.URL+"/schedules")
	r := row(body, `id="schedule-nightly"`)
	require.Regexp(t, `class="last-fire"><span class="muted">never</span>`, r)
	require.Regexp(t, `class="last-manual"><span class="muted">never</span>`, r)
	require.Equal(t, 3, strings.Count(r, " 03:00:00 CE"), "three next fires at 03:00 in Paris: %s", r)
	require.Contains(t, r, `action="/ui/schedules/nightly/run"`)
	require.Contains(t, r, `action="/ui/schedules/nightly/remove"`)
	declared := row(body, `id="schedule-declared"`)
	require.Contains(t, declared, "declared in code")
	require.Contains(t, declared, `/schedules/declared/run"`)
	require.NotContains(t, declared, `/schedules/declared/remove"`, "changed in code, not here")

	status, body := post(t, e.URL+"/schedules/nightly/run", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	after, err := e.Client.GetSchedule(t.Context(), "nightly")
	require.NoError(t, err)
	require.NotEmpty(t, after.LastManualJobID)
	require.Contains(t, body, "Ran schedule nightly: job "+after.LastManualJobID+" is queued.")
	require.Equal(t, info.NextFireAt, after.NextFireAt, "the next fire time stays")
	require.True(t, after.LastFireAt.IsZero())
	r = row(body, `id="schedule-nightly"`)
	require.Contains(t, r, after.LastManualJobID, "the last manual run, with its job")
	require.Regexp(t, `class="last-fire"><span class="muted">never</span>`, r, "a manual run is no fire")
	job, err := e.Client.Get(t.Context(), after.LastManualJobID)
	require.NoError(t, err)
	require.Equal(t, "archive", job.Queue)
	events, err := e.Client.Events(t.Context(), job.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.ActorOperator, events[0].Actor)
	require.Equal(t, "dashboard run now by dashboard", events[0].Reason)
}

// A schedule that starts a workflow shows its workflow and steps, and runs one by hand.
func TestSchedulesPageShowsAWorkflowSchedule(t *testing.T) {
	e := uitest.Start(t, nil)
	_, err := e.Client.AddSchedule(t.Context(), hopper.Schedule{Name: "albums", Cron: "0 3 * * *", Workflow: &hopper.Workflow{
		Name: "publish-album", Steps: []hopper.WorkflowStep{
			{Name: "fetch", Args: hopper.RawArgs{KindName: "fetch", JSON: []byte(`{}`)}}, // no worker: nothing runs
			{Name: "publish", Args: hopper.RawArgs{KindName: "publish", JSON: []byte(`{}`)}, After: []string{"fetch"}},
		}}})
	require.NoError(t, err)
	r := row(page(t, e.URL+"/schedules"), `id="schedule-albums"`)
	require.Contains(t, r, "workflow publish-album")
	require.Contains(t, r, "2 steps: fetch, publish")
	status, body := post(t, e.URL+"/schedules/albums/run", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	require.Regexp(t, `Ran schedule albums: workflow \S+ started.`, body)
}

// remoteWorkers is a RemoteSource of workers and no streams.
type remoteWorkers []hopperui.RemoteWorker

func (r remoteWorkers) Remote(context.Context) ([]hopperui.RemoteWorker, []hopperui.Stream) {
	return r, nil
}

// The jobs page has a tab per state with the count of the search's queue and kind, and shows
// each job's run-at and its args, clipped. A queued job of a kind no worker has asked for on
// its queue, in this process or among the server's remote workers, is marked, on the list and
// its page, which names the other nodes that work its queue.
func TestJobsTabsColumnsAndNoWorkerHint(t *testing.T) {
	asked := remoteWorkers{{Name: "pdf-worker", Queue: "print", Kinds: []string{"pdf"}}, {Name: "any", Queue: "anything"}}
	e := uitest.Start(t, &uitest.Opts{UI: func(c *hopperui.Config) { c.Remote = asked }})
	require.NoError(t, e.Client.PauseQueue(t.Context(), "mail")) // its steps jobs stay queued
	long := strings.Repeat("x", 100)
	scheduled := e.Enqueue(t, uitest.Steps{Note: long}, &hopper.InsertOpts{Queue: "mail", Delay: time.Hour})
	worked := e.Enqueue(t, uitest.Steps{Note: "has a worker"}, &hopper.InsertOpts{Queue: "mail"})
	pdf := func(queue string) *hopper.JobRow {
		res, err := e.Client.Enqueue(t.Context(), hopper.RawArgs{KindName: "pdf", JSON: json.RawMessage(`{"page": 1}`)}, &hopper.InsertOpts{Queue: queue})
		require.NoError(t, err)
		return res.Job
	}
	nobody, remote, anyKind := pdf("mail"), pdf("print"), pdf("anything")
	require.NoError(t, e.Store.NodeHeartbeat(t.Context(), &hopper.Node{ID: "node-b", Host: "h", PID: 2, Queues: []string{"mail"}}))

	body := page(t, e.URL+"/jobs?queue=mail")
	tabs := body[strings.Index(body, `id="state-tabs"`):]
	tabs = tabs[:strings.Index(tabs, "</nav>")]
	tab := regexp.MustCompile(`<a href="/ui/jobs\?([^"]*)" class="tab[^"]*" data-state="(\w*)" (aria-current="page")?>[^<]*<span class="count">(\d+)</span>`)
	counts, current := map[string]string{}, ""
	for _, m := range tab.FindAllStringSubmatch(tabs, -1) {
		q, err := url.ParseQuery(html.UnescapeString(m[1]))
		require.NoError(t, err)
		require.Equal(t, "mail", q.Get("queue"), "a tab keeps the search")
		require.Equal(t, m[2], q.Get("state"))
		counts[m[2]] = m[4]
		if m[3] != "" {
			current = m[2]
		}
	}
	require.Equal(t, map[string]string{"": "3", "queued": "2", "scheduled": "1", "running": "0", "suspended": "0", "waiting": "0",
		"completed": "0", "failed": "0", "canceled": "0"}, counts, "the jobs of queue mail: %s", tabs)
	require.Equal(t, "", current, "no state searched: any")
	require.Contains(t, page(t, e.URL+"/jobs?queue=mail&state=queued"), `data-state="queued" aria-current="page"`)
	require.Contains(t, page(t, e.URL+"/jobs?kind=pdf"), `data-state="queued" >queued <span class="count">3</span>`)

	sr := row(body, `value="`+scheduled.ID+`"`)
	require.Regexp(t, `class="run-at">in (59m\d+s|1h0m0s)<`, sr)
	preview := regexp.MustCompile(`<td class="args" title="[^"]*">([^<]*)</td>`).FindStringSubmatch(sr)
	require.NotNil(t, preview, sr)
	shown := html.UnescapeString(preview[1])
	require.Equal(t, 60, len([]rune(shown)), "clipped: %q", shown)
	require.True(t, strings.HasPrefix(shown, `{"note":"xxx`) && strings.HasSuffix(shown, "…"), shown)
	require.Contains(t, row(body, `value="`+worked.ID+`"`), `class="run-at">`)

	require.Contains(t, row(body, `value="`+nobody.ID+`"`), "no worker", "pdf on mail: nobody asked")
	require.NotContains(t, row(body, `value="`+worked.ID+`"`), "no worker", "steps on mail: this process")
	require.NotContains(t, row(body, `value="`+scheduled.ID+`"`), "no worker", "only queued jobs")
	all := page(t, e.URL+"/jobs?kind=pdf")
	require.NotContains(t, row(all, `value="`+remote.ID+`"`), "no worker", "a remote worker asked for pdf on print")
	require.NotContains(t, row(all, `value="`+anyKind.ID+`"`), "no worker", "a remote worker asked for any kind")

	hint := page(t, e.URL+"/jobs/"+nobody.ID)
	require.Contains(t, hint, `id="no-worker"`)
	require.Contains(t, hint, "No worker has asked for kind <strong>pdf</strong> on queue <strong>mail</strong>")
	require.Contains(t, hint, "no remote worker of this server asked for it")
	require.Contains(t, hint, `<span class="mono">node-b</span>`, "another node works mail: it may run pdf")
	require.Contains(t, live(t, e.URL+"/jobs/"+nobody.ID), `id="no-worker"`, "the live part keeps it")
	for _, j := range []*hopper.JobRow{worked, remote, anyKind, scheduled} {
		require.NotContains(t, page(t, e.URL+"/jobs/"+j.ID), `id="no-worker"`, j.Kind+" on "+j.Queue)
	}
}

// The workers page marks the remote workers the server calls stale.
func TestStaleRemoteWorkersMarked(t *testing.T) {
	now := time.Now()
	e := uitest.Start(t, &uitest.Opts{UI: func(c *hopperui.Config) {
		c.Remote = remoteWorkers{{Name: "gone", Queue: "mail", LastSeen: now.Add(-10 * time.Minute), Stale: true},
			{Name: "here", Queue: "mail", LastSeen: now, Streams: 1}}
	}})
	body := page(t, e.URL+"/workers")
	gone, here := row(body, "<td>gone"), row(body, "<td>here")
	require.Contains(t, gone, ` class="stale">`)
	require.Contains(t, gone, ">stale</span>")
	require.NotEmpty(t, here)
	require.NotContains(t, here, "stale")
}

// The overview's charts draw failed and retried jobs apart, each series in its own class
// (colour and dash), with ticks on both axes; the hour's counts per queue include the jobs
// that failed because their worker was lost once too often (worker_lost).
func TestOverviewCountsAndCharts(t *testing.T) {
	e := uitest.Start(t, nil)
	ctx := t.Context()
	insert := func(maxRescues int) *hoppertype.JobRow {
		t.Helper()
		res, err := e.Store.JobInsertMany(ctx, []*store.InsertParams{{ID: uuid.Must(uuid.NewV7()).String(), Kind: "lost-kind",
			Queue: "lost", Args: json.RawMessage(`{}`), MaxAttempts: 3, MaxRescues: maxRescues, Actor: hoppertype.ActorAPI}})
		require.NoError(t, err)
		return res[0].Job
	}
	claim := func() *hoppertype.JobRow {
		t.Helper()
		jobs, _, err := e.Store.JobClaim(ctx, &store.ClaimParams{Queue: "lost", Limit: 1, WorkerID: "gone", LeaseDuration: time.Minute})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		return jobs[0]
	}
	lose := func(j *hoppertype.JobRow) *store.RescueResult {
		t.Helper()
		res, err := e.Store.JobRescueLeases(ctx, &store.RescueLeasesParams{Leases: []store.LeaseRef{{ID: j.ID, Token: j.Token}},
			Actor: hoppertype.ActorServer, Reason: "stream closed", Error: "stream closed", ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		return res
	}
	lost := insert(1)
	require.Len(t, lose(claim()).JobIDs, 1, "rescued once")
	require.Equal(t, []string{lost.ID}, lose(claim()).Failed, "then failed: worker_lost")
	insert(0)
	retry := claim()
	errs, err := e.Store.JobFinishMany(ctx, []*store.FinishParams{{ID: retry.ID, Token: retry.Token, State: hoppertype.StateScheduled,
		Outcome: hoppertype.OutcomeError, Error: "try again", Actor: hoppertype.ActorWorker, RunAt: time.Now().Add(time.Hour)}})
	require.NoError(t, err)
	require.Equal(t, []error{nil}, errs)

	body := page(t, e.URL+"/")
	lostRow := row(body, `href="/ui/jobs?queue=lost"`)
	require.Contains(t, lostRow, `class="num hour">0 / 1 / 1<`, "done / failed / retried: the worker_lost failure counts")
	for _, class := range []string{"completed", "failed", "retried", "enqueued"} {
		require.Equal(t, 2, strings.Count(body, `<polyline class="series `+class+`"`), "%s: a line in each chart", class)
	}
	require.Equal(t, 2, strings.Count(body, `<span class="key failed">`))
	require.Regexp(t, `<span class="key failed">.*failed: <strong>1</strong>`, body)
	require.Regexp(t, `<span class="key retried">.*retried: <strong>1</strong>`, body)
	require.Regexp(t, `<span class="key enqueued">.*enqueued: <strong>2</strong>`, body)
	require.GreaterOrEqual(t, strings.Count(body, `class="ytick"`), 4, "count ticks")
	require.Regexp(t, `class="xtick" [^>]*>\d\d:\d\d</text>`, body, "time ticks")
}

// Config.Refresh sets how often the overview, queues and workers pages refresh; negative
// turns it off (a running job's page still follows its progress); under a second is refused.
func TestRefreshIsConfigurable(t *testing.T) {
	slow := uitest.Start(t, &uitest.Opts{UI: func(c *hopperui.Config) { c.Refresh = 2500 * time.Millisecond }})
	require.Contains(t, page(t, slow.URL+"/queues"), `hx-trigger="every 2500ms"`)
	off := uitest.Start(t, &uitest.Opts{UI: func(c *hopperui.Config) { c.Refresh = -1 }})
	for _, path := range []string{"/", "/queues", "/workers"} {
		require.NotContains(t, page(t, off.URL+path), "hx-trigger", path)
	}
	running := off.Enqueue(t, uitest.Steps{Note: "live"}, nil)
	off.WaitState(t, running.ID, hopper.StateRunning)
	defer close(off.Progress)
	require.Contains(t, page(t, off.URL+"/jobs/"+running.ID), `hx-trigger="every 1s"`)
	_, err := hopperui.New(hopperui.Config{Client: off.Client, Refresh: 500 * time.Millisecond})
	require.ErrorContains(t, err, "Config.Refresh")
}

// The queues page shows a queue's awaiting compute beside its computing, and says when every
// live worker of the queue is held back by its resource governor. (The test's own node does not
// work the queue "archive": its job waits.)
func TestQueuesPageShowsWhatAwaitsCompute(t *testing.T) {
	e := uitest.Start(t, nil)
	e.Enqueue(t, uitest.Steps{Note: "waits"}, &hopper.InsertOpts{Queue: "archive"})
	archive := func() string { t.Helper(); return row(live(t, e.URL+"/queues"), `id="queue-archive"`) }
	require.Contains(t, archive(), "1 awaiting compute, 0 computing")
	require.NotContains(t, archive(), "held by governor", "no node holds the queue back")
	require.NoError(t, e.Store.NodeHeartbeat(t.Context(), &hopper.Node{ID: "busy", Host: "h", PID: 2, Holding: true,
		Queues: []string{"archive"}, HeldQueues: []string{"archive"}}))
	require.Contains(t, archive(), "held by governor")
}
