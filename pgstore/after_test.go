package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hopperjobs/hopper"
	"github.com/hopperjobs/hopper/internal/pgtest"
	"github.com/hopperjobs/hopper/internal/stoptest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// A child enqueued in the application's transaction, with its parent in the same transaction
// or committed before: it exists (and flags its parent) only if the transaction commits, and
// runs once its parent has ended (contracts 17 and 19, docs/workflows.md).
func TestEnqueueTxWithAfter(t *testing.T) {
	pgtest.Require(t)
	t.Parallel()
	schema := pgtest.FreshSchema(t, "hopper_pgstore_")
	st := open(t, schema)
	ws := hopper.NewWorkers()
	ran := make(chan string, 4)
	release := make(chan struct{})
	hopper.AddWorkerFunc(ws, func(ctx context.Context, job *hopper.Job[note]) error {
		if job.Args.Text == "parent" {
			<-release
		}
		ran <- job.Args.Text
		return nil
	})
	client, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws, PollInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, client.Start(t.Context()))
	defer stoptest.Within(t, client, 10*time.Second)
	conn, err := pgx.Connect(t.Context(), pgtest.URL())
	require.NoError(t, err)
	defer conn.Close(context.Background())

	// Rolled back: neither the child nor its parent's flag is left.
	done, err := client.Enqueue(t.Context(), note{Text: "done"}, nil)
	require.NoError(t, err)
	require.Equal(t, "done", receive(t, ran))
	// Its handler has returned; its outcome is written just after.
	require.Eventually(t, func() bool {
		got, err := client.Get(t.Context(), done.Job.ID)
		return err == nil && got.State == hopper.StateCompleted
	}, 10*time.Second, 5*time.Millisecond, "the parent completes")
	tx, err := conn.Begin(t.Context())
	require.NoError(t, err)
	child, err := client.EnqueueTx(t.Context(), st.Tx(tx), note{Text: "rolled back"}, &hopper.InsertOpts{After: []string{done.Job.ID}})
	require.NoError(t, err)
	require.Equal(t, hopper.StateQueued, child.Job.State, "its parent had ended: released by its insert")
	require.NoError(t, tx.Rollback(t.Context()))
	_, err = client.Get(t.Context(), child.Job.ID)
	require.ErrorIs(t, err, hopper.ErrNotFound)
	parent, err := client.Get(t.Context(), done.Job.ID)
	require.NoError(t, err)
	require.False(t, parent.HasChildren, "the flag went with the rollback")

	// A parent and its child in one transaction: the child waits for the parent. An unknown
	// parent is refused in a transaction too, and the application rolls it all back.
	tx, err = conn.Begin(t.Context())
	require.NoError(t, err)
	p, err := client.EnqueueTx(t.Context(), st.Tx(tx), note{Text: "parent"}, nil)
	require.NoError(t, err)
	c, err := client.EnqueueTx(t.Context(), st.Tx(tx), note{Text: "child"}, &hopper.InsertOpts{After: []string{p.Job.ID}})
	require.NoError(t, err)
	require.Equal(t, hopper.StateWaiting, c.Job.State)
	_, err = client.EnqueueTx(t.Context(), st.Tx(tx), note{Text: "orphan"},
		&hopper.InsertOpts{After: []string{uuid.Must(uuid.NewV7()).String()}})
	var verr *hopper.ValidationError
	require.ErrorAs(t, err, &verr)
	require.Equal(t, "after[0]", verr.Field)
	require.NoError(t, tx.Rollback(t.Context()))
	for _, id := range []string{p.Job.ID, c.Job.ID} {
		_, err = client.Get(t.Context(), id)
		require.ErrorIs(t, err, hopper.ErrNotFound)
	}

	// Committed, the parent runs, then its child.
	tx, err = conn.Begin(t.Context())
	require.NoError(t, err)
	p, err = client.EnqueueTx(t.Context(), st.Tx(tx), note{Text: "parent"}, nil)
	require.NoError(t, err)
	c, err = client.EnqueueTx(t.Context(), st.Tx(tx), note{Text: "child"}, &hopper.InsertOpts{After: []string{p.Job.ID}})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(t.Context()))
	got, err := client.Get(t.Context(), c.Job.ID)
	require.NoError(t, err)
	require.Equal(t, hopper.StateWaiting, got.State)
	close(release)
	require.Equal(t, "parent", receive(t, ran))
	require.Equal(t, "child", receive(t, ran), "the child runs after its parent")
}

func receive(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no job ran")
		return ""
	}
}
