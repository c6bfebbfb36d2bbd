package hopper

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

func TestConfigGovernorLimitsAreChecked(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	defer st.Close()
	for _, tc := range []struct {
		field  string
		mutate func(*Config)
	}{
		{"Config.MaxCPU", func(c *Config) { c.MaxCPU = -0.5 }},
		{"Config.MaxCPU", func(c *Config) { c.MaxCPU = 80 }},
		{"Config.MaxCPU", func(c *Config) { c.MaxCPU = math.NaN() }},
		{"Config.MaxMemory", func(c *Config) { c.MaxMemory = -1 }},
	} {
		cfg := Config{Store: st, Workers: NewWorkers()}
		tc.mutate(&cfg)
		_, err := NewClient(cfg)
		var ve *ValidationError
		require.ErrorAs(t, err, &ve)
		require.Equal(t, tc.field, ve.Field)
	}
	c, err := NewClient(Config{Store: st})
	require.NoError(t, err)
	require.Equal(t, GovernorStatus{}, c.Governor(), "no limit: no governor")
}

func TestGovernorStatus(t *testing.T) {
	t.Parallel()
	ws := NewWorkers()
	AddWorkerFunc(ws, func(ctx context.Context, job *Job[sendEmail]) error { return nil })
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: sqlitetest.Path(t)})
	require.NoError(t, err)
	defer st.Close()
	c, err := NewClient(Config{Store: st, Workers: ws, MaxCPU: 0.8, MaxMemory: 1 << 40})
	if errors.Is(err, ErrGovernorUnsupported) {
		t.Skip(err)
	}
	require.NoError(t, err)
	gs := c.Governor()
	require.True(t, gs.Enabled)
	require.False(t, gs.Holding, "nothing measured yet")
	require.Equal(t, 0.8, gs.MaxCPU)
	require.Equal(t, int64(1<<40), gs.MaxMemory)
}

// A queue's queued jobs await compute and its running ones compute (the seed's pending work,
// split); contract 15: the queue shows as held by governor while every live node that works it
// is held back by its governor; a node that is not held, a pause, or no live node clears it.
func TestQueuesShowWhatAwaitsCompute(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	for range 4 {
		_, err := b.client.Enqueue(ctx, sendEmail{}, &InsertOpts{Queue: "mail"})
		require.NoError(t, err)
	}
	_, err := b.client.Enqueue(ctx, sendEmail{}, &InsertOpts{Queue: "mail", Delay: time.Hour})
	require.NoError(t, err)
	claimed, _, err := b.store.JobClaim(ctx, &store.ClaimParams{Queue: "mail", Limit: 1, WorkerID: "w", LeaseDuration: time.Hour})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	queue := func() *QueueInfo {
		t.Helper()
		qs, err := b.client.Queues(ctx)
		require.NoError(t, err)
		require.Len(t, qs, 1)
		return qs[0]
	}
	q := queue()
	require.Equal(t, int64(3), q.AwaitingCompute, "the queued jobs, not the scheduled one")
	require.Equal(t, int64(1), q.Computing, "the running job")
	require.Equal(t, q.Counts[StateQueued]+q.Counts[StateRunning], q.Computing+q.AwaitingCompute,
		"pending work = computing + awaiting compute")
	held := func() bool { t.Helper(); return queue().HeldByGovernor }
	beat := func(id string, holding bool) {
		n := &hoppertype.Node{ID: id, Queues: []string{"mail"}}
		if holding {
			n.Holding, n.HeldQueues = true, []string{"mail"}
		}
		require.NoError(t, b.store.NodeHeartbeat(ctx, n))
	}
	require.False(t, held(), "no node works the queue")
	beat("node-a", true)
	require.True(t, held(), "its only live node is held")
	beat("node-b", false)
	require.False(t, held(), "node-b can take them")
	beat("node-b", true)
	require.True(t, held())
	require.Equal(t, int64(3), queue().AwaitingCompute, "held or not, the same jobs await compute")
	require.NoError(t, b.client.PauseQueue(ctx, "mail"))
	require.False(t, held(), "a paused queue's jobs wait for the resume")
	require.NoError(t, b.client.ResumeQueue(ctx, "mail"))
	b.clock.Advance(31 * time.Second) // past NodeTTL: both nodes are dead
	require.False(t, held(), "dead nodes hold nothing back")
}
