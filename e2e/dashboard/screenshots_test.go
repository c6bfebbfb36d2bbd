package dashboard

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/hopperui"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

// screenshots is where TestScreenshots writes a PNG of each page (make screenshots writes
// docs/dashboard/); without it the test does nothing.
var screenshots = flag.String("screenshots", "", "write a PNG of each dashboard page to this directory")

// TestScreenshots fills a store with an hour of history and jobs in every state, and takes a
// picture of each page.
func TestScreenshots(t *testing.T) {
	if *screenshots == "" {
		t.Skip("run with -screenshots DIR (make screenshots)")
	}
	dir, err := filepath.Abs(*screenshots)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	now := time.Now()
	e := uitest.Start(t, &uitest.Opts{DBPath: func(p string) { history(t, p) }, UI: func(c *hopperui.Config) {
		c.Remote = remoteWorkers{ // as hopper serve's registry would list them
			{Name: "media-1", Queue: "media", Kinds: []string{"resize-image"}, LastSeen: now, Polls: 1, Activated: 1517},
			{Name: "mailer-2", Queue: "default", LastSeen: now.Add(-2 * time.Second), Polls: 1, Activated: 1628},
			{Name: "mailer-old", Queue: "default", LastSeen: now.Add(-25 * time.Minute), Activated: 312, Stale: true},
		}
	}})
	tb := newTab(t)

	running := e.Enqueue(t, uitest.Steps{Note: "resize 4 images"}, &hopper.InsertOpts{Queue: "reports"})
	e.WaitState(t, running.ID, hopper.StateRunning)
	e.Progress <- uitest.Progress{Percent: 62, Message: "image 3 of 4"}
	t.Cleanup(func() { close(e.Progress) })
	e.Failed(t, "smtp: 550 mailbox unavailable")
	for i := range 3 {
		e.Enqueue(t, uitest.Steps{Note: fmt.Sprintf("invoice %d", i)}, &hopper.InsertOpts{Queue: "mail", Delay: time.Hour})
	}
	require.NoError(t, e.Client.PauseQueue(t.Context(), "mail"))
	_, err = e.Client.Enqueue(t.Context(), hopper.RawArgs{KindName: "render-pdf", JSON: json.RawMessage(`{"invoice":1042}`)},
		&hopper.InsertOpts{Queue: "reports"}) // a kind nobody works: its row says so
	require.NoError(t, err)
	_, err = e.Client.AddSchedule(t.Context(), hopper.Schedule{Name: "nightly-report", Cron: "0 3 * * *", TZ: "Europe/Paris", Kind: "steps", Queue: "reports"})
	require.NoError(t, err)
	_, err = e.Client.AddSchedule(t.Context(), hopper.Schedule{Name: "cleanup", Every: 15 * time.Minute, Kind: "steps"})
	require.NoError(t, err)
	_, err = e.Client.RunScheduleBy(t.Context(), "nightly-report", hopper.ActorOperator, "run now by ops")
	require.NoError(t, err)

	later := &hopper.InsertOpts{Queue: "mail", Delay: time.Hour}
	wf, err := e.Client.EnqueueWorkflow(t.Context(), hopper.Workflow{Name: "publish-album", Steps: []hopper.WorkflowStep{
		{Name: "fetch-photos", Args: uitest.Steps{Fail: "album 7: 404 not found"}},
		{Name: "resize-small", Args: uitest.Steps{Note: "small"}, After: []string{"fetch-photos"}, Opts: later},
		{Name: "resize-large", Args: uitest.Steps{Note: "large"}, After: []string{"fetch-photos"}, Opts: later},
		{Name: "publish", Args: uitest.Steps{Note: "publish"}, After: []string{"resize-small", "resize-large"}, Opts: later},
		{Name: "notify-owner", Args: uitest.Steps{Note: "notify"}, After: []string{"fetch-photos"}, OnParentFailure: hopper.ParentRun, Opts: later},
		{Name: "index-album", Args: uitest.Steps{Note: "index"}, Opts: later},
		{Name: "report", Args: uitest.Steps{Note: "report"}, After: []string{"publish", "notify-owner", "index-album"}, OnParentFailure: hopper.ParentRun, Opts: later},
	}})
	require.NoError(t, err)
	e.WaitState(t, wf.Job("fetch-photos").ID, hopper.StateFailed)

	shots := map[string]string{
		"workflows":    "/workflows",
		"workflow":     "/workflows/" + wf.Workflow.ID,
		"overview":     "/",
		"jobs":         "/jobs",
		"job":          "/jobs/" + running.ID,
		"queues":       "/queues",
		"dead-letters": "/dead-letters",
		"schedules":    "/schedules",
		"workers":      "/workers",
	}
	for name, page := range shots {
		tb.open(e.URL + page)
		if name == "job" {
			tb.waitText("#percent", "62%")
		}
		png := get(tb, chromedp.CaptureScreenshot()) // the window (1400×1000): long lists are cut
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
		require.Empty(t, tb.consoleErrors(), page)
	}
}

// remoteWorkers is a RemoteSource of workers and no streams.
type remoteWorkers []hopperui.RemoteWorker

func (r remoteWorkers) Remote(context.Context) ([]hopperui.RemoteWorker, []hopperui.Stream) {
	return r, nil
}

// history writes an hour of enqueues and outcomes, minute by minute, into the store at path,
// through the store on a clock that walks that hour.
func history(t *testing.T, path string) {
	t.Helper()
	clk := clock.NewFake(time.Now().Add(-time.Hour))
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: path, Clock: clk})
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	for m := range 60 {
		for q, kind := range map[string]string{"default": "send-email", "media": "resize-image"} {
			n := 20 + int(15*math.Sin(float64(m)/6)) + len(q)
			var ps []*store.InsertParams
			for range n {
				ps = append(ps, &store.InsertParams{ID: uuid.Must(uuid.NewV7()).String(), Kind: kind, Queue: q,
					Args: json.RawMessage(`{}`), MaxAttempts: 3, Actor: hoppertype.ActorAPI})
			}
			_, err := st.JobInsertMany(ctx, ps)
			require.NoError(t, err)
			clk.Advance(time.Duration(50+m*10) * time.Millisecond)
			jobs, _, err := st.JobClaim(ctx, &store.ClaimParams{Queue: q, Limit: n, WorkerID: "history", LeaseDuration: time.Minute})
			require.NoError(t, err)
			var fs []*store.FinishParams
			for i, j := range jobs {
				f := &store.FinishParams{ID: j.ID, Token: j.Token, State: hoppertype.StateCompleted,
					Outcome: hoppertype.OutcomeOK, Actor: hoppertype.ActorWorker, ExpiresAt: clk.Now().Add(time.Hour)}
				switch {
				case i%17 == m%5:
					f.State, f.Outcome, f.Error = hoppertype.StateFailed, hoppertype.OutcomeError, "timeout talking to upstream"
				case i%11 == (m/3)%11:
					f.State, f.Outcome, f.Error = hoppertype.StateScheduled, hoppertype.OutcomeError, "503 from upstream"
					f.RunAt = clk.Now().Add(time.Minute)
				}
				fs = append(fs, f)
			}
			_, err = st.JobFinishMany(ctx, fs)
			require.NoError(t, err)
		}
		clk.Advance(time.Minute - time.Duration(2*(50+m*10))*time.Millisecond)
	}
}
