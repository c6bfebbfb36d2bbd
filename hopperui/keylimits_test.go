package hopperui_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperui"
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

// A kind's caps and rate limits, its own and per fairness key, are set from the kinds table's
// form (empty: keep, 0: remove); a bad value names its field and changes nothing.
func TestKindLimitsFromTheQueuesPage(t *testing.T) {
	e := uitest.Start(t, nil)
	ctx := t.Context()
	_, err := e.Client.Enqueue(ctx, digest{N: 1}, &hopper.InsertOpts{FairnessKey: "tenant-a"})
	require.NoError(t, err)
	require.Contains(t, page(t, e.URL+"/queues"), `action="/ui/kinds/digest/settings"`)
	kind := func() *hopper.KindInfo {
		ks, err := e.Client.Kinds(ctx)
		require.NoError(t, err)
		for _, k := range ks {
			if k.Name == "digest" {
				return k
			}
		}
		t.Fatal("kind digest is not listed")
		return nil
	}

	status, body := post(t, e.URL+"/kinds/digest/settings", url.Values{"max_running": {"8"}, "rate": {"100/1s"},
		"cap_per_key": {"2"}, "rate_per_key": {"10/1s"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Saved the settings of kind digest.")
	k := kind()
	require.Equal(t, 8, k.MaxRunning)
	require.Equal(t, hopper.Rate{Limit: 100, Period: time.Second}, k.Rate)
	require.Equal(t, 2, k.CapPerKey)
	require.Equal(t, hopper.Rate{Limit: 10, Period: time.Second}, k.RatePerKey)
	require.Contains(t, row(body, `href="/ui/jobs?kind=digest"`), `<td class="per-key">2 / 10/1s</td>`)

	good := url.Values{"max_running": {"9"}, "rate": {"5/1s"}, "cap_per_key": {"3"}, "rate_per_key": {"1/1s"}}
	for field, bad := range map[string]string{"cap_per_key": "x", "rate_per_key": "0/1s", "max_running": "-1", "rate": "fast"} {
		form := url.Values{}
		for f, v := range good {
			form[f] = v
		}
		form.Set(field, bad)
		status, body = post(t, e.URL+"/kinds/digest/settings", form)
		require.Equal(t, http.StatusBadRequest, status, field)
		require.Contains(t, body, field)
	}
	k = kind()
	require.Equal(t, 8, k.MaxRunning, "a form with a bad field stores none of it")
	require.Equal(t, 2, k.CapPerKey, "a form with a bad field stores none of it")

	status, _ = post(t, e.URL+"/kinds/digest/settings", url.Values{"cap_per_key": {"0"}, "rate_per_key": {"0"}})
	require.Equal(t, http.StatusOK, status)
	k = kind()
	require.Zero(t, k.CapPerKey)
	require.True(t, k.RatePerKey.IsZero())
	require.Equal(t, 8, k.MaxRunning, "an empty field keeps its setting")
}

// The queues page lists each queue's weights per fairness key; a key's weight is set and
// removed there, and a bad key or weight names its field.
func TestKeyWeightsOnTheQueuesPage(t *testing.T) {
	e := uitest.Start(t, nil)
	ctx := t.Context()
	_, err := e.Client.Enqueue(ctx, digest{N: 1}, &hopper.InsertOpts{FairnessKey: "tenant-a"})
	require.NoError(t, err)
	body := page(t, e.URL+"/queues")
	require.Contains(t, body, `action="/ui/queues/default/key-weights"`, "a queue without weights can get one")

	status, body := post(t, e.URL+"/queues/default/key-weights", url.Values{"fairness_key": {"tenant-a"}, "weight": {"3"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Key tenant-a of queue default weighs 3.")
	require.Contains(t, row(body, `id="key-weights-default"`), "tenant-a = 3")
	qs, err := e.Client.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"tenant-a": 3}, qs[0].KeyWeights)

	for _, bad := range []struct{ field, key, weight string }{
		{"weight", "tenant-a", "x"},
		{"weight", "tenant-a", ""},
		{"weight", "tenant-a", "1001"},
		{"fairness_key", "", "2"},
	} {
		status, body = post(t, e.URL+"/queues/default/key-weights", url.Values{"fairness_key": {bad.key}, "weight": {bad.weight}})
		require.Equal(t, http.StatusBadRequest, status, bad)
		require.Contains(t, body, bad.field, bad)
	}

	status, body = post(t, e.URL+"/queues/default/key-weights", url.Values{"fairness_key": {"tenant-a"}, "weight": {"0"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Removed the weight of key tenant-a in queue default.")
	require.NotContains(t, row(body, `id="key-weights-default"`), "tenant-a")
	qs, err = e.Client.Queues(ctx)
	require.NoError(t, err)
	require.Empty(t, qs[0].KeyWeights)
}

// A read-only dashboard shows limits and key weights but offers no form to change them, and
// refuses a change posted anyway.
func TestReadOnlyDashboardShowsLimitsWithoutForms(t *testing.T) {
	e := uitest.Start(t, &uitest.Opts{UI: func(c *hopperui.Config) { c.ReadOnly = true }})
	ctx := t.Context()
	require.NoError(t, e.Client.SetKeyWeight(ctx, "default", "tenant-a", 4))
	require.NoError(t, e.Client.SetLimit(ctx, hopper.Limit{Queue: "default", MaxRunning: 2, PerKey: true}))
	body := page(t, e.URL+"/queues")
	require.Contains(t, body, "tenant-a = 4")
	require.Contains(t, body, `<td class="per-key">2 / —</td>`)
	require.NotContains(t, body, "/key-weights")
	require.NotContains(t, body, "/settings")
	for _, u := range []string{"/queues/default/key-weights", "/kinds/steps/settings", "/queues/default/settings"} {
		status, _ := post(t, e.URL+u, url.Values{"fairness_key": {"tenant-a"}, "weight": {"0"}, "cap_per_key": {"0"}})
		require.Equal(t, http.StatusForbidden, status, u)
	}
	qs, err := e.Client.Queues(ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int{"tenant-a": 4}, qs[0].KeyWeights)
}
