package hopperui_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

// The dead-letters page counts what it lists: the dead letters never replayed, with the
// replayed ones counted apart and listed, marked, when asked (?replayed=1), as hopper dlq ls
// and dlq stats do.
func TestDeadLettersPageCountsWhatItLists(t *testing.T) {
	e := uitest.Start(t, nil)
	replayedOne, other := e.Failed(t, "boom"), e.Failed(t, "bang")
	replay, err := e.Client.Replay(t.Context(), replayedOne.ID, "ops")
	require.NoError(t, err)
	again := e.WaitState(t, replay.ID, hopper.StateFailed) // the replay fails too

	get := func(query string) string {
		resp, err := http.Get(e.URL + "/dead-letters" + query)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(body)
	}
	page := get("")
	require.Contains(t, page, `id="dl-count">2<`, "the dead letters never replayed")
	require.Contains(t, page, `id="dl-replayed">1<`, "the replayed one, counted apart")
	rows := listed(page)
	require.ElementsMatch(t, []string{again.ID, other.ID}, ids(rows), "the page lists what it counts")
	for _, r := range rows {
		require.NotContains(t, r, "replayed", "no marker on a dead letter never replayed")
	}

	rows = listed(get("?replayed=1"))
	require.ElementsMatch(t, []string{again.ID, other.ID, replayedOne.ID}, ids(rows))
	for _, r := range rows {
		if strings.Contains(r, `/jobs/`+replayedOne.ID+`"`) {
			require.Contains(t, r, `<tr class="replayed">`)
			require.Contains(t, r, `href="/ui/jobs/`+again.ID+`"`, "the marker links to the newest replay")
		} else {
			require.NotContains(t, r, `class="replayed"`)
		}
	}
}

// listed returns the rows of the page's table of dead letters.
func listed(page string) []string {
	start := strings.Index(page, `<table id="dead-letters">`)
	end := strings.Index(page[start:], "</table>")
	var rows []string
	for _, r := range strings.Split(page[start:start+end], "<tr")[2:] { // [0] before, [1] the header
		if !strings.Contains(r, "No dead letters") {
			rows = append(rows, "<tr"+r)
		}
	}
	return rows
}

// ids returns the job id of each row: its first link's.
func ids(rows []string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		_, after, _ := strings.Cut(r, `href="/ui/jobs/`)
		out[i], _, _ = strings.Cut(after, `"`)
	}
	return out
}
