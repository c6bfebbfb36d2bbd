package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/internal/store"
	"github.com/stretchr/testify/require"
)

func testProgress(t *testing.T, opener Opener) {
	parallel(t, opener, "ClampedAndHeartbeat", progressClampedAndHeartbeat)
	parallel(t, opener, "HeartbeatKeepsLease", progressHeartbeatKeepsLease)
}

// Progress is clamped to 0–100, stored with its message, and counts as a heartbeat; it does not
// move the lease.
func progressClampedAndHeartbeat(t *testing.T, b *bundle) {
	job := b.running(t)
	cases := []struct{ percent, want int }{{150, 100}, {-5, 0}, {42, 42}, {100, 100}, {0, 0}}
	for _, c := range cases {
		b.clock.Advance(3 * time.Second)
		msg := fmt.Sprintf("reported %d", c.percent)
		require.NoError(t, b.store.JobProgress(t.Context(), &store.ProgressParams{
			ID: job.ID, Token: job.Token, Percent: c.percent, Message: msg,
		}))
		got := b.get(t, job.ID)
		require.Equal(t, c.want, got.ProgressPercent, "percent %d", c.percent)
		require.Equal(t, msg, got.ProgressMessage)
		sameTime(t, b.clock.Now(), got.HeartbeatAt, "heartbeat_at after progress")
		sameTime(t, job.LeaseExpiresAt, got.LeaseExpiresAt, "lease after progress")
	}
}

func progressHeartbeatKeepsLease(t *testing.T, b *bundle) {
	job := b.running(t)
	b.clock.Advance(7 * time.Second)
	require.NoError(t, b.store.JobHeartbeat(t.Context(), &store.HeartbeatParams{ID: job.ID, Token: job.Token}))
	got := b.get(t, job.ID)
	sameTime(t, b.clock.Now(), got.HeartbeatAt, "heartbeat_at")
	sameTime(t, job.LeaseExpiresAt, got.LeaseExpiresAt, "a heartbeat is not a lease extension")

	// The lease still expires when it was going to.
	b.clock.Advance(defaultLease - 7*time.Second + time.Second)
	require.Equal(t, []string{job.ID}, b.rescue(t).JobIDs)
}
