package hopper

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

func TestConfigGovernorLimitsAreChecked(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: t.TempDir() + "/c.db"})
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
	st, err := sqlite.Open(t.Context(), sqlite.Config{Path: t.TempDir() + "/c.db"})
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

// Contract 15: a queue's queued jobs await compute while every live node that works it is
// held back by its governor; a node that is not held, or a pause, makes it 0.
func TestQueuesShowAwaitingCompute(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, nil)
	ctx := t.Context()
	for range 3 {
		_, err := b.client.Enqueue(ctx, sendEmail{}, &InsertOpts{Queue: "mail"})
		require.NoError(t, err)
	}
	_, err := b.client.Enqueue(ctx, sendEmail{}, &InsertOpts{Queue: "mail", Delay: time.Hour})
	require.NoError(t, err)
	awaiting := func() int64 {
		t.Helper()
		qs, err := b.client.Queues(ctx)
		require.NoError(t, err)
		require.Len(t, qs, 1)
		return qs[0].AwaitingCompute
	}
	beat := func(id string, held bool) {
		n := &hoppertype.Node{ID: id, Queues: []string{"mail"}}
		if held {
			n.Holding, n.HeldQueues = true, []string{"mail"}
		}
		require.NoError(t, b.store.NodeHeartbeat(ctx, n))
	}
	require.Zero(t, awaiting(), "no node works the queue")
	beat("node-a", true)
	require.Equal(t, int64(3), awaiting(), "the queued jobs, not the scheduled one")
	beat("node-b", false)
	require.Zero(t, awaiting(), "node-b can take them")
	beat("node-b", true)
	require.Equal(t, int64(3), awaiting())
	require.NoError(t, b.client.PauseQueue(ctx, "mail"))
	require.Zero(t, awaiting(), "a paused queue's jobs wait for the resume")
	require.NoError(t, b.client.ResumeQueue(ctx, "mail"))
	b.clock.Advance(31 * time.Second) // past NodeTTL: both nodes are dead
	require.Zero(t, awaiting(), "dead nodes hold nothing back")
}
