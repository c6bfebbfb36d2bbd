package hoppertype

import (
	"testing"
	"time"
)

func TestStalled(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	running := func(beat, lease time.Duration) *JobRow {
		return &JobRow{State: StateRunning, HeartbeatAt: now.Add(-beat), LeaseExpiresAt: now.Add(lease)}
	}
	cases := []struct {
		name string
		job  *JobRow
		want bool
	}{
		{"fresh heartbeat", running(time.Second, time.Minute), false},
		{"old heartbeat, lease valid", running(3*time.Minute, time.Minute), true},
		{"old heartbeat, lease expired: a rescue case, not stalled", running(3*time.Minute, -time.Second), false},
		{"not running", &JobRow{State: StateQueued, HeartbeatAt: now.Add(-time.Hour), LeaseExpiresAt: now.Add(time.Hour)}, false},
	}
	for _, c := range cases {
		if got := c.job.Stalled(now, 2*time.Minute); got != c.want {
			t.Errorf("%s: Stalled = %v, want %v", c.name, got, c.want)
		}
	}
	if running(time.Hour, time.Hour).Stalled(now, 0) {
		t.Error("a zero threshold turns the check off")
	}
}
