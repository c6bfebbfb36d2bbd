package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/internal/workerapi"
	"github.com/stretchr/testify/require"
)

// businessFailure fails one job for good with a business error code and a checkpoint, as a
// remote worker would, and returns its id.
func (b *serverBundle) businessFailure(t *testing.T, code string) string {
	t.Helper()
	c, err := hopper.NewClient(hopper.Config{Store: b.store, DisableMaintenance: true, WorkerID: "code-maker"})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	defer stoptest.Within(t, c, 10*time.Second)
	res, err := c.Enqueue(t.Context(), hopper.RawArgs{KindName: "charge", JSON: []byte(`{}`)}, &hopper.InsertOpts{Queue: "codes"})
	require.NoError(t, err)
	jobs, err := workerapi.Of(c).Activate(t.Context(), workerapi.ActivateParams{Worker: "w", Queue: "codes"})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	_, err = workerapi.Of(c).FailJob(t.Context(), res.Job.ID, jobs[0].Token, workerapi.FailParams{
		Error: code + ": no funds", ErrorCode: code, Checkpoint: json.RawMessage(`{"step":2}`)})
	require.NoError(t, err)
	return res.Job.ID
}

// jobs ls and dlq ls filter by business error code, locally and through a server; jobs show
// shows the code and the checkpoint; a bad code is a usage error naming the field.
func TestErrorCodeFiltersAndShow(t *testing.T) {
	b := startServer(t, false)
	declined := b.businessFailure(t, "card_declined")
	b.deadLetters(t, "billing")
	for _, runner := range []func(t *testing.T, args ...string) result{b.remote, b.run} {
		for _, args := range [][]string{{"jobs", "ls"}, {"dlq", "ls"}} {
			res := runner(t, append(args, "--error-code", "card_declined,other", "--json")...)
			require.Equal(t, ExitOK, res.code, res.stderr)
			var page struct {
				Jobs []struct{ ID, LastErrorCode string } `json:"jobs"`
			}
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &page), res.stdout)
			require.Len(t, page.Jobs, 1, args)
			require.Equal(t, declined, page.Jobs[0].ID)
			require.Equal(t, "card_declined", page.Jobs[0].LastErrorCode)

			res = runner(t, append(args, "--error-code", "card declined")...)
			require.Equal(t, ExitUsage, res.code, res.stdout)
			require.Contains(t, res.stderr, "error_codes")
		}
		res := runner(t, "jobs", "show", declined)
		require.Equal(t, ExitOK, res.code, res.stderr)
		require.Contains(t, res.stdout, "card_declined (a business error)\n")
		require.Contains(t, res.stdout, `{"step":2}`)
		require.Contains(t, res.stdout, "error (business error)")
	}
}
