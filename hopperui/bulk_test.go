package hopperui_test

import (
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

// post sends a form as a program would (no browser: CrossOriginProtection lets requests
// without Origin or Sec-Fetch-Site through) and returns the status and page.
func post(t *testing.T, u string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(u, form)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// Bulk actions on a search change at most their limit of matching jobs, each through the
// Client's own audited call; their bounds are checked and named.
func TestBulkActionsOnASearch(t *testing.T) {
	t.Parallel()
	e := uitest.Start(t, nil)
	var waiting []string
	for range 5 {
		waiting = append(waiting, e.Enqueue(t, uitest.Steps{Note: "bulk"}, &hopper.InsertOpts{Queue: "mail", Delay: time.Hour}).ID)
	}
	other := e.Enqueue(t, uitest.Steps{Note: "other"}, &hopper.InsertOpts{Queue: "reports", Delay: time.Hour})

	form := url.Values{"action": {"cancel-filter"}, "queue": {"mail"}, "bulk_limit": {"3"}}
	status, page := post(t, e.URL+"/jobs/bulk", form)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Cancel the 3 job(s) the search finds now?", "a bulk action asks first")
	for _, id := range waiting[2:] { // newest first: the three it would cancel
		require.Contains(t, page, id)
	}
	require.NotContains(t, page, waiting[0])
	require.Contains(t, page, `<input type="hidden" name="confirm" value="yes">`)
	for _, id := range waiting {
		j, err := e.Client.Get(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, hopper.StateScheduled, j.State, "nothing changes before it is confirmed")
	}
	form.Set("confirm", "yes")
	status, page = post(t, e.URL+"/jobs/bulk", form)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Canceled 3 job(s).")
	canceled := 0
	for _, id := range waiting {
		j, err := e.Client.Get(t.Context(), id)
		require.NoError(t, err)
		if j.State == hopper.StateCanceled {
			canceled++
			events, err := e.Client.Events(t.Context(), id)
			require.NoError(t, err)
			last := events[len(events)-1]
			require.Equal(t, hopper.ActorOperator, last.Actor)
			require.Equal(t, "dashboard bulk cancel by dashboard", last.Reason)
		}
	}
	require.Equal(t, 3, canceled)
	j, err := e.Client.Get(t.Context(), other.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.StateScheduled, j.State, "outside the search")

	d1, d2 := e.Failed(t, "one"), e.Failed(t, "two")
	status, page = post(t, e.URL+"/jobs/bulk", url.Values{"action": {"replay-filter"}, "q": {"two"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Replay the 1 failed job(s) the search finds now?")
	require.Contains(t, page, d2.ID)
	status, page = post(t, e.URL+"/jobs/bulk", url.Values{"action": {"replay-filter"}, "q": {"two"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Replayed 1 job(s).")
	for id, n := range map[string]int{d1.ID: 0, d2.ID: 1} {
		rs, err := e.Client.Replays(t.Context(), &hopper.ReplayListParams{SourceJobID: id})
		require.NoError(t, err)
		require.Len(t, rs.Replays, n)
	}

	// Retry in place: the same job goes back to its queue, its history says who did it.
	status, page = post(t, e.URL+"/jobs/bulk", url.Values{"action": {"retry"}, "select": {d1.ID}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Retry the 1 ticked job(s) in place?")
	status, page = post(t, e.URL+"/jobs/bulk", url.Values{"action": {"retry"}, "select": {d1.ID}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Retried in place 1 job(s).")
	j1, err := e.Client.Get(t.Context(), d1.ID)
	require.NoError(t, err)
	require.Contains(t, []hopper.JobState{hopper.StateQueued, hopper.StateRunning, hopper.StateCompleted, hopper.StateFailed}, j1.State)
	evs, err := e.Client.Events(t.Context(), d1.ID)
	require.NoError(t, err)
	var retried bool
	for _, ev := range evs {
		retried = retried || (ev.From == hopper.StateFailed && ev.To == hopper.StateQueued && ev.Actor == hopper.ActorOperator)
	}
	require.True(t, retried, "the job's own history records the retry: %+v", evs)
	rs, err := e.Client.Replays(t.Context(), &hopper.ReplayListParams{SourceJobID: d1.ID})
	require.NoError(t, err)
	require.Len(t, rs.Replays, 1, "the audit log records the retry")
	require.Equal(t, hopper.ActionRetry, rs.Replays[0].Action, "a retry in place, not a replay")
	require.Equal(t, d1.ID, rs.Replays[0].NewJobID, "the same job")

	for _, bad := range []struct {
		form  url.Values
		field string
	}{
		{url.Values{"action": {"cancel-filter"}, "bulk_limit": {"1001"}}, "bulk_limit"},
		{url.Values{"action": {"cancel"}, "bulk_limit": {"1"}, "select": {waiting[0], waiting[1]}}, "select"},
		{url.Values{"action": {"cancel"}}, "select"},
		{url.Values{"action": {"explode"}}, "action"},
		{url.Values{"action": {"retry-filter"}, "state": {"queued"}}, "state"},
		{url.Values{"action": {"cancel-filter"}, "from": {"soon"}}, "from"},
	} {
		status, page := post(t, e.URL+"/jobs/bulk", bad.form)
		require.Equal(t, http.StatusOK, status, "the list is shown again, with the error")
		require.NotContains(t, page, `id="confirmation"`, "bad input is refused, not asked about")
		require.Contains(t, page, "Invalid "+bad.field, bad.form)
	}
	j, err = e.Client.Get(t.Context(), waiting[0]) // the search lists newest first: the first cancel left the two oldest
	require.NoError(t, err)
	require.NotEqual(t, hopper.StateCanceled, j.State, "a refused action changes nothing")
}
