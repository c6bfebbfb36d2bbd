package workerapi

import (
	"errors"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/stretchr/testify/require"
)

// Every refusal of ActivateParams names the field of the wire protocol.
func TestActivateParamsNameTheirField(t *testing.T) {
	t.Parallel()
	ok := ActivateParams{Worker: "w"}
	require.NoError(t, ok.Check())
	for field, p := range map[string]ActivateParams{
		"worker":          {},
		"max_jobs":        {Worker: "w", MaxJobs: MaxActivateJobs + 1},
		"ahead":           {Worker: "w", MaxJobs: 2, Ahead: 2},
		"lease_timeout":   {Worker: "w", LeaseDuration: time.Millisecond},
		"request_timeout": {Worker: "w", Wait: MaxActivateWait + time.Second},
		"queues[1]":       {Worker: "w", Queues: []string{"a", "b c"}},
		"kind":            {Worker: "w", Kinds: []string{"two words"}},
	} {
		var ve *hoppertype.ValidationError
		err := p.Check()
		require.True(t, errors.As(err, &ve), "%s: %v", field, err)
		require.Equal(t, field, ve.Field)
	}
	multi := ActivateParams{Worker: "w", Queues: []string{"a", "b"}, MaxJobs: 2, Ahead: 1}
	require.ErrorContains(t, multi.Check(), "needs a single queue")
	d := ActivateParams{Worker: "w"}
	require.NoError(t, d.Validate(time.Minute))
	require.Equal(t, []string{DefaultQueue}, d.QueueNames())
	require.Equal(t, time.Minute, d.LeaseDuration)
	require.Equal(t, 1, d.MaxJobs)
}
