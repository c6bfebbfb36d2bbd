package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/hopperjobs/hopper/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type note struct {
	Text string `json:"text"`
}

func (note) Kind() string { return "note" }

func open(t *testing.T, schema string) *pgstore.Store {
	t.Helper()
	st, err := pgstore.Open(t.Context(), pgstore.Config{URL: pgtest.URL(), Schema: schema, MaxConns: 4})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// Contract 17 through the public API: a job enqueued in the application's transaction exists
// if and only if that transaction commits, and workers start it when it commits.
func TestEnqueueTxCommitAndRollback(t *testing.T) {
	pgtest.Require(t)
	t.Parallel()
	schema := pgtest.FreshSchema(t, "hopper_pgstore_")
	st := open(t, schema)
	ws := hopper.NewWorkers()
	ran := make(chan string, 2)
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[note]) error {
		ran <- job.Args.Text
		return nil
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, PollInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, client.Start(t.Context()))
	defer stoptest.Within(t, client, 10*time.Second)

	conn, err := pgx.Connect(t.Context(), pgtest.URL())
	require.NoError(t, err)
	defer conn.Close(context.Background())

	tx, err := conn.Begin(t.Context())
	require.NoError(t, err)
	rolledBack, err := client.EnqueueTx(t.Context(), st.Tx(tx), note{Text: "rolled back"}, nil)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(t.Context()))
	_, err = client.Get(t.Context(), rolledBack.Job.ID)
	require.ErrorIs(t, err, hopper.ErrNotFound, "a rolled-back enqueue leaves no job")

	tx, err = conn.Begin(t.Context())
	require.NoError(t, err)
	committed, err := client.EnqueueTx(t.Context(), st.Tx(tx), note{Text: "committed"}, nil)
	require.NoError(t, err)
	_, err = client.Get(t.Context(), committed.Job.ID)
	require.ErrorIs(t, err, hopper.ErrNotFound, "invisible before the commit")
	require.NoError(t, tx.Commit(t.Context()))
	select { // the commit's NOTIFY wakes the worker: it does not poll (PollInterval is an hour)
	case text := <-ran:
		require.Equal(t, "committed", text)
	case <-time.After(10 * time.Second):
		t.Fatal("the committed job was not started")
	}
}

// Contract 6 across processes: a cancel issued by one client reaches the handler running the
// job in another within a second, pushed over NOTIFY rather than found at a lease renewal.
func TestCancelReachesAnotherNode(t *testing.T) {
	pgtest.Require(t)
	t.Parallel()
	schema := pgtest.FreshSchema(t, "hopper_pgstore_")
	ws := hopper.NewWorkers()
	started, causes := make(chan struct{}), make(chan error, 1)
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[note]) error {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	worker, err := hopper.NewClient(hopper.Config{Store: open(t, schema), Workers: ws, LeaseDuration: time.Hour})
	require.NoError(t, err)
	require.NoError(t, worker.Start(t.Context()))
	defer stoptest.Within(t, worker, 10*time.Second)
	other, err := hopper.NewClient(hopper.Config{Store: open(t, schema), DisableMaintenance: true})
	require.NoError(t, err)

	res, err := other.Enqueue(t.Context(), note{Text: "long"}, nil)
	require.NoError(t, err)
	<-started
	_, err = other.Cancel(t.Context(), res.Job.ID)
	require.NoError(t, err)
	// Without the push the handler would learn of the cancel at its next lease renewal, 20
	// minutes away; the wait below is only a generous bound for a slow machine.
	select {
	case cause := <-causes:
		require.ErrorIs(t, cause, hopper.ErrJobCanceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the cancel never reached the running handler (the lease is an hour long)")
	}
}
