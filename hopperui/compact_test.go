package hopperui_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

// digest has no worker here: its jobs wait.
type digest struct {
	N int `json:"n"`
}

func (digest) Kind() string { return "digest" }

// The queues page offers to compact a kind's groups; the change asks first, then replaces a
// group's waiting jobs by one, recorded as an operator's; each job's page shows the lineage.
func TestKindCompactFromTheQueuesPage(t *testing.T) {
	e := uitest.Start(t, nil)
	ctx := t.Context()
	var ids []string
	for n := range 3 {
		res, err := e.Client.Enqueue(ctx, digest{N: n}, &hopper.InsertOpts{GroupKey: "user-7"})
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	require.NoError(t, e.Client.SetKindCompaction(ctx, "digest", hopper.Compaction{Over: 50, Merge: hopper.MergeReplace}))
	body := page(t, e.URL+"/queues")
	require.Contains(t, body, `action="/ui/kinds/digest/compact"`)
	require.Contains(t, body, "over 50 waiting (replace)")

	status, body := post(t, e.URL+"/kinds/digest/compact", url.Values{"merge": {"replace"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Compact the queued jobs of kind digest?")
	require.Contains(t, body, "the newest job&#39;s args")
	into, err := e.Client.CompactedInto(ctx, ids[0])
	require.NoError(t, err)
	require.Empty(t, into, "asked, not done")

	status, body = post(t, e.URL+"/kinds/digest/compact", url.Values{"merge": {"replace"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "Compacted kind digest: 1 groups, 3 jobs replaced.")
	into, err = e.Client.CompactedInto(ctx, ids[0])
	require.NoError(t, err)
	require.NotEmpty(t, into)
	job, err := e.Client.Get(ctx, into)
	require.NoError(t, err)
	require.JSONEq(t, `{"n":2}`, string(job.Args))
	events, err := e.Client.Events(ctx, ids[2])
	require.NoError(t, err)
	require.Equal(t, hopper.ActorOperator, events[len(events)-1].Actor)

	body = page(t, e.URL+"/jobs/"+into)
	require.Contains(t, body, `id="compacted-from"`)
	for _, id := range ids {
		require.Contains(t, body, `href="/ui/jobs/`+id+`"`)
	}
	require.Contains(t, page(t, e.URL+"/jobs/"+ids[1]), `compacted into</dt><dd class="mono"><a href="/ui/jobs/`+into+`"`)

	status, body = post(t, e.URL+"/kinds/digest/compact", url.Values{"merge": {"squash"}, "confirm": {"yes"}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, body, "merge")
}
