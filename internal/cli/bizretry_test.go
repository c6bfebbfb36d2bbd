package cli

import (
	"strings"
	"testing"

	"github.com/hopperjobs/hopper"
	"github.com/stretchr/testify/require"
)

// --retry-business-errors gives the job a retry policy that retries business errors, directly
// and through a server; without it the job has no policy of its own.
func TestEnqueueRetryBusinessErrors(t *testing.T) {
	b := startServer(t, false)
	res := b.remote(t, "enqueue", "send-email", "--retry-business-errors")
	require.Equal(t, ExitOK, res.code, res.stderr)
	for _, id := range []string{b.enqueue(t, "send-email", "--retry-business-errors"), strings.TrimSpace(res.stdout)} {
		job, err := b.store.JobGet(t.Context(), id)
		require.NoError(t, err)
		require.Equal(t, &hopper.RetryPolicy{RetryBusinessErrors: true}, job.RetryPolicy)
	}
	job, err := b.store.JobGet(t.Context(), b.enqueue(t, "send-email"))
	require.NoError(t, err)
	require.Nil(t, job.RetryPolicy)
}
