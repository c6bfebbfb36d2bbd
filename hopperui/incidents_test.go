package hopperui_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

// Contract 18 in the dashboard: a failed job's page offers a retry in place, which asks first
// and then retries the same job, audited with the user's name; a dead letter replayed before
// is replayed (or retried) again only after a confirmation that names the earlier replay.
func TestFailedJobRetryInPlaceAndReplayAgain(t *testing.T) {
	e := uitest.Start(t, nil)
	dead := e.Failed(t, "boom")
	full := page(t, e.URL+"/jobs/"+dead.ID)
	require.Contains(t, full, `action="/ui/jobs/`+dead.ID+`/retry"`)
	require.Contains(t, full, `id="retry">Retry in place<`)

	status, body := post(t, e.URL+"/jobs/"+dead.ID+"/retry", url.Values{"retries": {"2"}, "reason": {"fixed"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Retry job "+dead.ID+" in place?")
	require.Contains(t, body, "with 2 more attempt(s)")
	got, err := e.Client.Get(t.Context(), dead.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.StateFailed, got.State, "asked, not done")
	status, _ = post(t, e.URL+"/jobs/"+dead.ID+"/retry", url.Values{"retries": {"x"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusBadRequest, status, "a bad number is refused")
	status, _ = post(t, e.URL+"/jobs/"+dead.ID+"/retry", url.Values{"retries": {"2"}, "reason": {"fixed"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	got, err = e.Client.Get(t.Context(), dead.ID)
	require.NoError(t, err)
	require.Equal(t, dead.Attempt+2, got.MaxAttempts, "retried in place: two more attempts")
	log, err := e.Client.Replays(t.Context(), &hopper.ReplayListParams{SourceJobID: dead.ID})
	require.NoError(t, err)
	require.Len(t, log.Replays, 1)
	require.Equal(t, hopper.ActionRetry, log.Replays[0].Action)
	require.Equal(t, "fixed", log.Replays[0].Reason)
	later := e.Enqueue(t, uitest.Steps{Note: "later"}, &hopper.InsertOpts{Delay: time.Hour})
	status, _ = post(t, e.URL+"/jobs/"+later.ID+"/retry", nil)
	require.Equal(t, http.StatusConflict, status, "a job that is not failed is refused, not asked about")

	other := e.Failed(t, "boom")
	status, body = post(t, e.URL+"/jobs/"+other.ID+"/replay", nil)
	require.Equal(t, http.StatusOK, status, "a first replay needs no question")
	first, err := e.Client.Replays(t.Context(), &hopper.ReplayListParams{SourceJobID: other.ID})
	require.NoError(t, err)
	require.Len(t, first.Replays, 1)
	status, body = post(t, e.URL+"/jobs/"+other.ID+"/replay", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Replay job "+other.ID+" again?")
	require.Contains(t, body, "as job "+first.Replays[0].NewJobID)
	require.Contains(t, body, `name="again" value="yes"`)
	status, body = post(t, e.URL+"/jobs/"+other.ID+"/retry", nil)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "It was replayed already, as job "+first.Replays[0].NewJobID)
	status, _ = post(t, e.URL+"/jobs/"+other.ID+"/replay", url.Values{"confirm": {"yes"}})
	require.Equal(t, http.StatusConflict, status, "confirmed without again: refused")
	status, _ = post(t, e.URL+"/jobs/"+other.ID+"/replay", url.Values{"again": {"yes"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	again, err := e.Client.Replays(t.Context(), &hopper.ReplayListParams{SourceJobID: other.ID})
	require.NoError(t, err)
	require.Len(t, again.Replays, 2)
	require.True(t, again.Replays[0].Forced)
	require.Contains(t, page(t, e.URL+"/jobs/"+other.ID), "(forced)")
}
