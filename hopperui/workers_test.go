package hopperui_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hopperui"
	"github.com/hopperjobs/hopper/internal/uitest"
	"github.com/stretchr/testify/require"
)

// The workers page says since when a node is idle (it holds no jobs and does not heartbeat
// until it runs one, so an old heartbeat is no sign of death), and shows a busy node's
// heartbeat alone.
func TestWorkersPageShowsIdleNodes(t *testing.T) {
	e := uitest.Start(t, nil) // its process runs no job: its node is idle
	require.NoError(t, e.Store.NodeHeartbeat(t.Context(), &hopper.Node{ID: "busy-node", Host: "h", PID: 1}))
	// row returns the table row of node on the workers page ("" when it is not listed).
	row := func(page, node string) string {
		for r := range strings.SplitSeq(page, "<tr>") {
			if strings.Contains(r, `<td class="mono">`+node) {
				return r
			}
		}
		return ""
	}
	var page string
	require.Eventually(t, func() bool {
		resp, err := http.Get(e.URL + "/workers")
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		page = string(body)
		return strings.Contains(row(page, "ui-test-node"), "idle since")
	}, 10*time.Second, 10*time.Millisecond, "the idle node's heartbeat says since when it is idle")
	busy := row(page, "busy-node")
	require.NotEmpty(t, busy)
	require.NotContains(t, busy, "idle since", "a node that is not idle shows its heartbeat alone")
	require.Contains(t, busy, " ago</td>")
}

// fakeRemote is a server's registry as the dashboard sees it.
type fakeRemote struct{ workers []hopperui.RemoteWorker }

func (f fakeRemote) Remote(context.Context) ([]hopperui.RemoteWorker, []hopperui.Stream) {
	return f.workers, nil
}

// The workers page says which kinds a remote worker takes in batches.
func TestWorkersPageShowsBatchKinds(t *testing.T) {
	now := time.Now()
	src := fakeRemote{workers: []hopperui.RemoteWorker{
		{Name: "batcher", Queue: "mail", Kinds: []string{"digest", "send"}, BatchKinds: []string{"digest"}, LastSeen: now, Streams: 1},
		{Name: "plain", Queue: "mail", Kinds: []string{"send"}, LastSeen: now, Polls: 1},
	}}
	e := uitest.Start(t, &uitest.Opts{UI: func(c *hopperui.Config) { c.Remote = src }})
	body := page(t, e.URL+"/workers")
	require.Contains(t, row(body, "<td>batcher"), `digest, send <span class="muted batch-kinds">(in batches: digest)</span>`)
	require.NotContains(t, row(body, "<td>plain"), "in batches")
}
