package sqlite_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// An ending that releases children names their queues, each once, and no other: the engine
// wakes only those (a wake-up makes a busy queue claim at once, with few free slots). A child
// still waiting for another parent, or canceled by a failure, names nothing.
func TestFinishNamesTheQueuesItReleased(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openFresh(t)
	job := func(queue string, after ...string) *store.InsertParams {
		return &store.InsertParams{ID: uuid.Must(uuid.NewV7()).String(), Kind: "noop", Queue: queue,
			Args: json.RawMessage(`{}`), MaxAttempts: 1, Actor: hoppertype.ActorAPI, After: after}
	}
	a, b, other := job("work"), job("work"), job("work")
	ps := []*store.InsertParams{a, b, other,
		job("fan-in", a.ID), job("fan-in", a.ID, b.ID), job("fan-in", b.ID), job("later", b.ID, other.ID)}
	_, err := s.JobInsertMany(ctx, ps)
	require.NoError(t, err)
	claimed, _, err := s.JobClaim(ctx, &store.ClaimParams{Queue: "work", Limit: 3, WorkerID: "w1", LeaseDuration: time.Minute})
	require.NoError(t, err)
	require.Len(t, claimed, 3)
	finish := func(j *hoppertype.JobRow, state hoppertype.JobState) *store.FinishParams {
		outcome := hoppertype.OutcomeOK
		if state == hoppertype.StateFailed {
			outcome = hoppertype.OutcomeError
		}
		return &store.FinishParams{ID: j.ID, Token: j.Token, State: state, Outcome: outcome,
			Actor: hoppertype.ActorWorker, Job: j}
	}
	byID := map[string]*hoppertype.JobRow{}
	for _, j := range claimed {
		byID[j.ID] = j
	}
	// a's ending releases its own child in fan-in; the child of a and b still waits for b.
	done := []*store.FinishParams{finish(byID[a.ID], hoppertype.StateCompleted)}
	errs, err := s.JobFinishMany(ctx, done)
	require.NoError(t, err)
	require.NoError(t, errs[0])
	require.Equal(t, []string{"fan-in"}, done[0].Released)
	// other's failure cancels its child in later: nothing to wake.
	done = []*store.FinishParams{finish(byID[other.ID], hoppertype.StateFailed)}
	_, err = s.JobFinishMany(ctx, done)
	require.NoError(t, err)
	require.Empty(t, done[0].Released)
	// b's ending releases two children, both in fan-in: named once.
	done = []*store.FinishParams{finish(byID[b.ID], hoppertype.StateCompleted)}
	_, err = s.JobFinishMany(ctx, done)
	require.NoError(t, err)
	require.Equal(t, []string{"fan-in"}, done[0].Released)
}

// Children are stored apart from the jobs that run at once, at the table's start, the newest
// first: their release, claim and end then write pages of children, not again the pages of
// their parents (insertChildSQL).
func TestChildrenAreStoredApart(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openFresh(t)
	job := func(after ...string) *store.InsertParams {
		return &store.InsertParams{ID: uuid.Must(uuid.NewV7()).String(), Kind: "noop", Queue: "work",
			Args: json.RawMessage(`{}`), MaxAttempts: 1, Actor: hoppertype.ActorAPI, After: after}
	}
	var order []string // the ids in the expected storage order: children first
	var plain []string
	for range 3 {
		a, b, c := job(), job(), job()
		child := job(a.ID, b.ID)
		_, err := s.JobInsertMany(ctx, []*store.InsertParams{a, b, child, c})
		require.NoError(t, err)
		order = append([]string{child.ID}, order...)
		plain = append(plain, a.ID, b.ID, c.ID)
	}
	got, err := sqlite.JobsInStorageOrder(s)
	require.NoError(t, err)
	require.Equal(t, append(order, plain...), got)
}
