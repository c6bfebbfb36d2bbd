package hoppertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/hoppertest"
	"github.com/hopperjobs/hopper/internal/sqlitetest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/sqlitestore"
	"github.com/stretchr/testify/require"
)

type flaky struct{}

func (flaky) Kind() string { return "flaky" }

// A user's test drives retries with the fake clock instead of sleeping.
func TestFakeClockDrivesRetries(t *testing.T) {
	clk := hoppertest.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st, err := sqlitestore.Open(t.Context(), sqlitestore.Config{Path: sqlitetest.Path(t), Clock: clk})
	require.NoError(t, err)
	defer st.Close()
	ws := hopper.NewWorkers()
	calls := 0
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[flaky]) error {
		calls++
		if calls == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, Clock: clk, MaxWorkers: 1})
	require.NoError(t, err)
	require.NoError(t, client.Start(t.Context()))
	defer stoptest.Within(t, client, 10*time.Second)
	res, err := client.Enqueue(t.Context(), flaky{}, &hopper.InsertOpts{RetryPolicy: &hopper.RetryPolicy{Base: time.Minute, Jitter: -1}})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		clk.Advance(10 * time.Second)
		job, err := client.Get(context.Background(), res.Job.ID)
		require.NoError(t, err)
		return job.State == hopper.StateCompleted
	}, 10*time.Second, time.Millisecond)
}
