package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

// Payloads that would run script if a page put them in as markup. Each sets
// window.hopperXSS; CSP would also block them and report a violation in the console.
const (
	xssImg    = `<img src=x onerror="window.hopperXSS='img'">`
	xssScript = `<script>window.hopperXSS='script'</script>`
	xssAttr   = `"><img src=x onerror="window.hopperXSS='attr'">`
)

// kindImg and kindScript are kinds (no white space allowed) that are markup.
type (
	kindImg    struct{ Mode string }
	kindScript struct{ Mode string }
)

func (kindImg) Kind() string    { return `<img/src=x/onerror=window.hopperXSS='kind'>` }
func (kindScript) Kind() string { return `"><script>window.hopperXSS='kind2'</script>` }

// xssWork fails with a markup error, or reports a markup progress message and runs until
// stopped.
func xssWork(ctx context.Context, mode string) error {
	if mode == "fail" {
		return hopper.NoRetry(errors.New("failed: " + xssImg + xssScript + xssAttr))
	}
	if err := hopper.ReportProgress(ctx, 50, "progress "+xssImg+xssScript); err != nil {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}

// Everything a job carries (kind, args, headers, error, progress message) and what a search
// echoes is shown as text on every page: no payload runs, none becomes an element, and the
// console reports no blocked script (which would mean markup got through and only CSP
// stopped it). Queue names cannot hold markup at all: the client refuses them.
func TestJobDataIsEscapedEverywhere(t *testing.T) {
	e := uitest.Start(t, &uitest.Opts{Workers: func(ws *hopper.Workers, _ *uitest.Env) {
		hopper.AddWorkerFunc(ws, func(ctx context.Context, j *hopper.Job[kindImg]) error { return xssWork(ctx, j.Args.Mode) })
		hopper.AddWorkerFunc(ws, func(ctx context.Context, j *hopper.Job[kindScript]) error { return xssWork(ctx, j.Args.Mode) })
	}})
	tb := newTab(t)
	headers := map[string]string{"x-note": xssImg + xssAttr, "x-script": xssScript}
	args := func(mode string) *hopper.InsertOpts { return &hopper.InsertOpts{Headers: headers} }
	failed := e.Enqueue(t, kindImg{Mode: "fail"}, args("fail"))
	running := e.Enqueue(t, kindScript{Mode: "run"}, args("run"))
	raw := e.Enqueue(t, hopper.RawArgs{KindName: "steps", JSON: mustJSON(t, map[string]string{
		"note": xssScript, "img": xssImg, "attr": xssAttr})}, &hopper.InsertOpts{Delay: time.Hour, Headers: headers})
	t.Cleanup(func() { _, _ = e.Client.Cancel(context.Background(), running.ID) }) // before the client stops
	e.WaitState(t, failed.ID, hopper.StateFailed)
	require.Eventually(t, func() bool {
		j, err := e.Client.Get(t.Context(), running.ID)
		require.NoError(t, err)
		return strings.HasPrefix(j.ProgressMessage, "progress")
	}, 15*time.Second, 10*time.Millisecond)
	_, err := e.Client.AddSchedule(t.Context(), hopper.Schedule{Name: "xss", Every: time.Hour, Kind: kindImg{}.Kind(), Args: map[string]string{"m": xssScript}})
	require.NoError(t, err)

	_, err = e.Client.Enqueue(t.Context(), uitest.Steps{}, &hopper.InsertOpts{Queue: "<b>q</b>"})
	var verr *hopper.ValidationError
	require.ErrorAs(t, err, &verr, "a queue name cannot hold markup")
	require.Equal(t, "queue", verr.Field)

	pages := map[string]string{ // page → a payload it must show as text
		"/":     "",
		"/jobs": kindImg{}.Kind(),
		"/jobs?kind=" + url.QueryEscape(xssAttr+xssScript): "",
		"/jobs?q=" + url.QueryEscape(xssImg):               "",
		"/jobs/" + failed.ID:                               "failed: " + xssImg,
		"/jobs/" + running.ID:                              "progress " + xssImg,
		"/jobs/" + raw.ID:                                  xssAttr,
		"/queues":                                          kindScript{}.Kind(),
		"/dead-letters":                                    xssAttr,
		"/schedules":                                       kindImg{}.Kind(),
		"/workers":                                         "",
	}
	for path, text := range pages {
		tb.open(e.URL + path)
		if path == "/jobs/"+running.ID {
			tb.waitText("#progress-message", "progress "+xssImg+xssScript) // after a live swap too
		}
		if text != "" {
			require.Contains(t, tb.text("main"), text, "%s shows the payload as text", path)
		}
		require.Nil(t, eval[any](tb, `window.hopperXSS`), "a payload ran on %s", path)
		require.Zero(t, eval[int](tb, `document.querySelectorAll('img').length`), "markup became an element on %s", path)
		require.Equal(t, 1, eval[int](tb, `document.scripts.length`), "only htmx is a script on %s", path)
		require.Empty(t, tb.consoleErrors(), "console of %s", path)
	}
	// A confirmation names what it would change as text too.
	for _, c := range []struct{ page, button, text string }{
		{"/jobs/" + running.ID, `#cancel`, kindScript{}.Kind()},
		{"/schedules", `#schedule-xss button.run`, kindImg{}.Kind()},
	} {
		tb.open(e.URL + c.page)
		tb.click(c.button)
		require.NotNil(t, eval[any](tb, `document.querySelector('#confirmation')`), "%s asks", c.button)
		require.Contains(t, tb.text("main"), c.text)
		require.Nil(t, eval[any](tb, `window.hopperXSS`), "a payload ran on the confirmation of %s", c.button)
		require.Zero(t, eval[int](tb, `document.querySelectorAll('img').length`))
		require.Equal(t, 1, eval[int](tb, `document.scripts.length`))
		require.Empty(t, tb.consoleErrors())
	}
	// The search form echoes what was typed as the input's value, not as markup.
	tb.open(e.URL + "/jobs?kind=" + url.QueryEscape(xssAttr))
	require.Equal(t, xssAttr, eval[string](tb, `document.querySelector('#search input[name=kind]').value`))
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
