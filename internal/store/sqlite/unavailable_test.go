package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/sqlite"
	"github.com/stretchr/testify/require"
)

// Another process holds the database's write lock past the busy timeout: writes fail with
// store.ErrUnavailable (not an internal error), Ping reports it while reads still work, and
// both recover when the lock is released.
func TestAWriteLockHeldPastTheBusyTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: path, BusyTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	ctx := t.Context()
	node := &hoppertype.Node{ID: "n1", Host: "h", PID: 1}
	require.NoError(t, s.NodeHeartbeat(ctx, node))
	require.NoError(t, s.Ping(ctx))

	other, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	defer other.Close()
	conn, err := other.Conn(ctx)
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "BEGIN IMMEDIATE") // the write lock, held
	require.NoError(t, err)

	err = s.NodeHeartbeat(ctx, node)
	require.ErrorIs(t, err, store.ErrUnavailable)
	t.Log(err)
	_, err = s.JobCounts(ctx)
	require.NoError(t, err, "reads go on")
	require.ErrorIs(t, s.Ping(ctx), store.ErrUnavailable, "the failed write shows in Ping")

	_, err = conn.ExecContext(context.Background(), "ROLLBACK")
	require.NoError(t, err)
	require.NoError(t, s.NodeHeartbeat(ctx, node))
	require.NoError(t, s.Ping(ctx))
}
