package cli

import (
	"bytes"
	"testing"
	"time"

	hopperv1 "github.com/hopperjobs/hopper/gen/hopper/v1"
	"github.com/stretchr/testify/require"
)

// A stream on several queues shows them all; one from a server that knows of one queue per
// stream shows its queue.
func TestWorkersLsShowsAStreamsQueues(t *testing.T) {
	t.Parallel()
	f := &fleetJSON{streams: []*hopperv1.Stream{
		{Id: "1", Worker: "w", Queue: "reports", Queues: []string{"reports", "emails"}, Credit: 20},
		{Id: "2", Worker: "old", Queue: "mail", Credit: 5},
	}}
	var out bytes.Buffer
	require.NoError(t, printFleet(&out, nil, f, time.Now()))
	require.Regexp(t, `1\s+w\s+reports,emails\s+20`, out.String())
	require.Regexp(t, `2\s+old\s+mail\s+5`, out.String())
}
