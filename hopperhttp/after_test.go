package hopperhttp_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper"
	"github.com/stretchr/testify/require"
)

// After and On-Parent-Failure make the job wait for its parents (docs/workflows.md); a bad
// one is a 400 whose message names the field, and stores nothing.
func TestAsyncAfter(t *testing.T) {
	t.Parallel()
	b := setup(t, setupOpts{})
	_, p1 := b.post(t, "/v1/async/resize", `{"size":"small"}`, nil)
	_, p2 := b.post(t, "/v1/async/resize", `{"size":"large"}`, nil)

	r, child := b.post(t, "/v1/async/publish", `{"album":7}`, http.Header{
		"After": {p1.Job.ID + ", " + p2.Job.ID}, "On-Parent-Failure": {"skip"}})
	require.Equal(t, "waiting", child.Job.State, r.body)
	job, err := b.client.Get(t.Context(), child.Job.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.StateWaiting, job.State)
	require.NotContains(t, job.Headers, "http.header.after", "the parents are not recorded twice")
	parent, err := b.client.Get(t.Context(), p1.Job.ID)
	require.NoError(t, err)
	require.True(t, parent.HasChildren)

	_, again := b.post(t, "/v1/async/publish", `{"album":8}`, http.Header{"After": {p1.Job.ID, p2.Job.ID}})
	require.Equal(t, "waiting", again.Job.State, "the header repeated")

	unknown := uuid.Must(uuid.NewV7()).String()
	tooMany := strings.TrimSuffix(strings.Repeat(p1.Job.ID+",", hopper.MaxParents+1), ",")
	for name, c := range map[string]struct {
		header http.Header
		field  string
	}{
		"empty id":       {http.Header{"After": {p1.Job.ID + ",,"}}, "after[1]"},
		"unknown parent": {http.Header{"After": {p1.Job.ID + "," + unknown}}, "after[1]"},
		"with merge key": {http.Header{"After": {p1.Job.ID}, "Merge-Key": {"m"}}, "after"},
		"too many":       {http.Header{"After": {tooMany}}, "after"},
		"unknown policy": {http.Header{"After": {p1.Job.ID}, "On-Parent-Failure": {"later"}}, "on_parent_failure"},
		"empty policy":   {http.Header{"After": {p1.Job.ID}, "On-Parent-Failure": {" "}}, "On-Parent-Failure"},
	} {
		r := b.do(t, http.MethodPost, "/v1/async/publish", `{"album":9}`, c.header)
		r.requireError(t, http.StatusBadRequest, "invalid_argument")
		require.Contains(t, r.body, c.field, name)
	}
	list, err := b.client.List(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, list.Jobs, 4, "the refused requests stored nothing")
}
