package hopper

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/stretchr/testify/require"
)

// claimSpy records the jobs that batches of outcomes claimed as they released them.
type claimSpy struct {
	store.Store
	mu      sync.Mutex
	claimed map[string]int
}

func (s *claimSpy) JobFinishClaim(ctx context.Context, ps []*store.FinishParams, rc *store.ReleaseClaim) ([]error, error) {
	errs, err := s.Store.JobFinishClaim(ctx, ps, rc)
	if err == nil && rc != nil {
		s.mu.Lock()
		for _, j := range rc.Jobs {
			s.claimed[j.ID]++
		}
		s.mu.Unlock()
	}
	return errs, err
}

func (s *claimSpy) times(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimed[id]
}

// A child released by its parents' outcomes is claimed with them, in their batch's
// transaction, by the process that ran them, and runs once, on the slot one of them freed.
func TestReleasedChildIsClaimedWithItsParentsEnd(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		releasedChildClaimed(t, nil)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		pgtest.Require(t)
		schema := pgtest.FreshSchema(t, "hopper_released_")
		releasedChildClaimed(t, func(t *testing.T, clk clock.Clock) store.Store {
			st, err := postgres.Open(t.Context(), postgres.Config{URL: pgtest.URL(), Schema: schema, MaxConns: 4, Clock: clk})
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			return st
		})
	})
}

func releasedChildClaimed(t *testing.T, open func(t *testing.T, clk clock.Clock) store.Store) {
	ws := NewWorkers()
	var runs atomic.Int32
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error {
		if job.Args.To == "child" {
			runs.Add(1)
		}
		return nil
	})
	spy := &claimSpy{claimed: map[string]int{}}
	b := setup(t, ws, func(c *Config) {
		spy.Store = c.Store
		if open != nil {
			spy.Store = open(t, c.Clock)
		}
		c.Store = spy
	})
	ctx := t.Context()
	res, err := b.client.EnqueueWorkflow(ctx, Workflow{Name: "fan-in", Steps: []WorkflowStep{
		{Name: "a", Args: sendEmail{To: "a"}}, {Name: "b", Args: sendEmail{To: "b"}},
		{Name: "child", Args: sendEmail{To: "child"}, After: []string{"a", "b"}}}})
	require.NoError(t, err)
	child := res.Job("child")
	b.waitFor(t, child.ID, StateCompleted)
	require.Equal(t, 1, spy.times(child.ID), "claimed by its last parent's batch of outcomes")
	require.EqualValues(t, 1, runs.Load())
	events, err := b.client.Events(ctx, child.ID)
	require.NoError(t, err)
	var starts int
	for _, ev := range events {
		if ev.To == StateRunning {
			starts++
		}
	}
	require.Equal(t, 1, starts)
}
