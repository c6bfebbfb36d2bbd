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

// The queues page shows the limits per fairness key of queues and kinds, and a queue's are set
// from its settings form (empty: keep, 0: remove); a bad value names its field.
func TestLimitsPerKeyOnTheQueuesPage(t *testing.T) {
	e := uitest.Start(t, nil)
	ctx := t.Context()
	_, err := e.Client.Enqueue(ctx, digest{N: 1}, &hopper.InsertOpts{FairnessKey: "tenant-a"})
	require.NoError(t, err)
	require.NoError(t, e.Client.SetLimit(ctx, hopper.Limit{Kind: "digest", MaxRunning: 4, PerKey: true}))

	status, body := post(t, e.URL+"/queues/default/settings", url.Values{"cap_per_key": {"2"}, "rate_per_key": {"10/1s"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Saved the settings of queue default.")
	qs, err := e.Client.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, 2, qs[0].CapPerKey)
	require.Equal(t, hopper.Rate{Limit: 10, Period: time.Second}, qs[0].RatePerKey)
	body = page(t, e.URL+"/queues")
	require.Contains(t, body, `<td class="per-key">2 / 10/1s</td>`, "the queue's")
	require.Contains(t, body, `<td class="per-key">4 / —</td>`, "the kind's")

	status, body = post(t, e.URL+"/queues/default/settings", url.Values{"cap_per_key": {"x"}})
	require.NotEqual(t, http.StatusOK, status)
	require.Contains(t, body, "cap_per_key")
	status, body = post(t, e.URL+"/queues/default/settings", url.Values{"rate_per_key": {"0/1s"}})
	require.NotEqual(t, http.StatusOK, status)
	require.Contains(t, body, "rate_per_key")

	status, _ = post(t, e.URL+"/queues/default/settings", url.Values{"cap_per_key": {"0"}, "rate_per_key": {"0"}})
	require.Equal(t, http.StatusOK, status)
	qs, err = e.Client.Queues(ctx)
	require.NoError(t, err)
	require.Zero(t, qs[0].CapPerKey)
	require.True(t, qs[0].RatePerKey.IsZero())
}
