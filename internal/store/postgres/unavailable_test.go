package postgres_test

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/store"
	"github.com/hopperjobs/hopper/internal/store/postgres"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// A database nobody answers for: Open fails with store.ErrUnavailable, so a program can tell
// "try again later" from a bad configuration.
func TestOpenOnAPortNothingListensOnIsUnavailable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err = postgres.Open(ctx, postgres.Config{URL: "postgres://postgres@" + addr + "/test?sslmode=disable&connect_timeout=2",
		Schema: "hopper_unreachable"})
	require.ErrorIs(t, err, store.ErrUnavailable)
	t.Log(err)
}

// The database terminates the store's connections (as a restart or an operator does): the
// calls that find their connection gone fail with store.ErrUnavailable, and the store
// recovers on its own with new connections.
func TestTerminatedConnectionsAreUnavailableThenRecover(t *testing.T) {
	t.Parallel()
	requireDatabase(t)
	app := "hopper-terminate-" + freshSchema(t)[len("hopper_test_"):]
	u, err := url.Parse(databaseURL())
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	s, err := postgres.Open(t.Context(), postgres.Config{URL: u.String(), Schema: freshSchema(t), MaxConns: 1})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	node := &hoppertype.Node{ID: "n1", Host: "h", PID: 1}
	require.NoError(t, s.NodeHeartbeat(ctx, node))
	require.NoError(t, s.Ping(ctx))

	admin, err := pgx.Connect(ctx, databaseURL())
	require.NoError(t, err)
	defer admin.Close(context.Background())
	var n int
	require.NoError(t, admin.QueryRow(ctx,
		`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n))
	require.Equal(t, 1, n, "the pool's one connection")

	err = s.NodeHeartbeat(ctx, node)
	require.ErrorIs(t, err, store.ErrUnavailable)
	t.Log(err)
	require.Eventually(t, func() bool { return s.Ping(ctx) == nil }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, s.NodeHeartbeat(ctx, node))
}
