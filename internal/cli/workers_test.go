package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/hopperjobs/hopper/hopperclient"
	"github.com/hopperjobs/hopper/internal/apispec"
	"github.com/stretchr/testify/require"
)

// A stream on several queues shows them all; one from a server that knows of one queue per
// stream shows its queue.
func TestWorkersLsShowsAStreamsQueues(t *testing.T) {
	t.Parallel()
	f := &fleetJSON{streams: []*hopperclient.StreamInfo{
		apispec.FromStream(&hopperv1.Stream{Id: "1", Worker: "w", Queue: "reports", Queues: []string{"reports", "emails"}, Credit: 20}),
		apispec.FromStream(&hopperv1.Stream{Id: "2", Worker: "old", Queue: "mail", Credit: 5}),
	}}
	var out bytes.Buffer
	require.NoError(t, printFleet(&out, nil, f, time.Now()))
	require.Regexp(t, `1\s+w\s+reports,emails\s+20`, out.String())
	require.Regexp(t, `2\s+old\s+mail\s+5`, out.String())
}

// An idle node's heartbeat says since when it is idle (it does not heartbeat until it runs a
// job, so an old heartbeat is no sign of death); a busy node's is its age alone.
func TestWorkersLsShowsIdleNodes(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	nodes := []*hopper.Node{
		{ID: "busy", Host: "h1", PID: 1, StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-5 * time.Second)},
		{ID: "quiet", Host: "h2", PID: 2, StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-5 * time.Minute), Idle: true},
	}
	var out bytes.Buffer
	require.NoError(t, printFleet(&out, nodes, &fleetJSON{}, now))
	require.Regexp(t, `busy\s+h1\s+1\s+1h0m0s ago\s+5s ago\s+-\n`, out.String())
	require.Regexp(t, `quiet\s+h2\s+2\s+1h0m0s ago\s+idle since 5m0s ago\s+-\n`, out.String())
}

// The kinds a worker takes in batches are marked in its KINDS, one outside its kinds too (a
// worker of any kind may batch some), and listed in its JSON.
func TestWorkersLsMarksBatchKinds(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := &fleetJSON{workers: []*hopperclient.WorkerInfo{
		apispec.FromWorker(&hopperv1.Worker{Name: "batcher", Queue: "mail", Kinds: []string{"send", "digest"}, BatchKinds: []string{"digest"}}),
		apispec.FromWorker(&hopperv1.Worker{Name: "any", Queue: "mail", BatchKinds: []string{"digest"}}),
		apispec.FromWorker(&hopperv1.Worker{Name: "plain", Queue: "mail", Kinds: []string{"send"}}),
	}}
	var out bytes.Buffer
	require.NoError(t, printFleet(&out, nil, f, now))
	require.Regexp(t, `batcher\s+mail\s+send,digest\[batch\]\s`, out.String())
	require.Regexp(t, `any\s+mail\s+\*,digest\[batch\]\s`, out.String())
	require.Regexp(t, `plain\s+mail\s+send\s`, out.String())
	require.Equal(t, []string{"digest"}, workerKindsJSON(t, f)["batcher"])
}

// workerKindsJSON is each worker's batch_kinds as hopper workers ls --json prints them.
func workerKindsJSON(t *testing.T, f *fleetJSON) map[string][]string {
	t.Helper()
	for _, wk := range f.workers {
		f.Workers = append(f.Workers, workerJSON{Name: wk.Name, BatchKinds: wk.BatchKinds})
	}
	raw, err := json.Marshal(f)
	require.NoError(t, err)
	var back struct {
		Workers []struct {
			Name       string   `json:"name"`
			BatchKinds []string `json:"batch_kinds"`
		} `json:"workers"`
	}
	require.NoError(t, json.Unmarshal(raw, &back))
	out := map[string][]string{}
	for _, w := range back.Workers {
		out[w.Name] = w.BatchKinds
	}
	return out
}
