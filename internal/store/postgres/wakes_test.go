package postgres

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
)

// sentWakes records what a limiter sends.
type sentWakes struct {
	mu    sync.Mutex
	calls [][]string
	fail  bool
}

func (r *sentWakes) send(_ context.Context, payloads []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, payloads)
	if r.fail {
		return errors.New("database unreachable")
	}
	return nil
}

func (r *sentWakes) all() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.calls...)
}

func queued(queue, id string) *hoppertype.JobRow {
	return &hoppertype.JobRow{ID: id, Queue: queue, State: hoppertype.StateQueued}
}

func scheduled(queue, id string, at time.Time) *hoppertype.JobRow {
	return &hoppertype.JobRow{ID: id, Queue: queue, State: hoppertype.StateScheduled, RunAt: at}
}

// The first insert into a queue after a quiet interval notifies itself; the inserts within the
// interval after it are held, and one notification with the smallest of their ids goes out
// when the interval is over. Another queue has an interval of its own.
func TestWakeLimiterSpacesAQueuesWakeUps(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	rec := &sentWakes{}
	l := newWakeLimiter(10*time.Millisecond, fake, rec.send)
	defer l.close()

	require.Empty(t, l.hold([]string{"q:a"}), "the first insert notifies at once")
	require.Equal(t, []string{"q:a"}, l.hold([]string{"q:a", "q:b"}), "b is fresh; a was sent within the interval")
	l.committed([]string{"q:a"}, []*hoppertype.JobRow{queued("a", "05"), queued("b", "01")})
	fake.Advance(2 * time.Millisecond)
	require.Equal(t, []string{"q:a"}, l.hold([]string{"q:a"}))
	l.committed([]string{"q:a"}, []*hoppertype.JobRow{queued("a", "03"), queued("a", "07")})
	require.Equal(t, []string{"q:a"}, l.hold([]string{"q:a"}))
	l.committed([]string{"q:a"}, nil) // its rows were existing jobs: nothing to announce

	fake.Advance(7 * time.Millisecond) // 9 ms after the first insert
	require.Empty(t, rec.all(), "nothing is sent before the interval is over")
	fake.Advance(time.Millisecond)
	require.Eventually(t, func() bool { return len(rec.all()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"q:a 03"}}, rec.all(), "one wake-up, with the smallest held id; b's was the insert's own")

	// The flush opened a new interval: an insert within it is held, one after a quiet one is not.
	fake.Advance(5 * time.Millisecond)
	require.Equal(t, []string{"q:a"}, l.hold([]string{"q:a"}))
	l.committed([]string{"q:a"}, []*hoppertype.JobRow{queued("a", "09")})
	fake.Advance(5 * time.Millisecond)
	require.Eventually(t, func() bool { return len(rec.all()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"q:a 09"}, rec.all()[1])
	fake.Advance(10 * time.Millisecond)
	require.Empty(t, l.hold([]string{"q:a"}), "a quiet interval later the insert notifies itself again")
	require.Zero(t, fake.Pending(), "no timer is left while nothing is held")
}

// Scheduled jobs share one key; its held wake-up carries the earliest run_at, as the trigger's.
func TestWakeLimiterHoldsScheduledWakeUps(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	rec := &sentWakes{}
	l := newWakeLimiter(10*time.Millisecond, fake, rec.send)
	defer l.close()

	later, sooner := time.Unix(2_000_000, 0), time.Unix(1_500_000, 0)
	require.Empty(t, l.hold([]string{scheduledKey}))
	held := l.hold([]string{scheduledKey, "q:a"})
	require.Equal(t, []string{scheduledKey}, held)
	l.committed(held, []*hoppertype.JobRow{scheduled("x", "02", later), scheduled("y", "01", sooner), queued("a", "03")})
	fake.Advance(10 * time.Millisecond)
	require.Eventually(t, func() bool { return len(rec.all()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"s:" + strconv.FormatInt(sooner.UnixMicro(), 10)}}, rec.all())
}

// Close sends what is held at once and stops holding; a held insert that commits after Close
// sends its own. A failed send drops the wake-ups (workers poll) and does not stop the limiter.
func TestWakeLimiterClose(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	rec := &sentWakes{}
	l := newWakeLimiter(time.Hour, fake, rec.send)

	l.hold([]string{"q:a"})
	held := l.hold([]string{"q:a"})
	l.committed(held, []*hoppertype.JobRow{queued("a", "02")})
	late := l.hold([]string{"q:a"})
	require.Equal(t, []string{"q:a"}, late)
	l.close()
	require.Equal(t, [][]string{{"q:a 02"}}, rec.all())
	require.Zero(t, fake.Pending())
	require.Empty(t, l.hold([]string{"q:a"}), "a closed limiter holds nothing")
	l.committed(late, []*hoppertype.JobRow{queued("a", "04")})
	require.Equal(t, [][]string{{"q:a 02"}, {"q:a 04"}}, rec.all())
	l.close() // twice is fine

	rec2 := &sentWakes{fail: true}
	l2 := newWakeLimiter(10*time.Millisecond, fake, rec2.send)
	defer l2.close()
	l2.hold([]string{"q:a"})
	l2.committed(l2.hold([]string{"q:a"}), []*hoppertype.JobRow{queued("a", "01")})
	fake.Advance(10 * time.Millisecond)
	require.Eventually(t, func() bool { return len(rec2.all()) == 1 }, 5*time.Second, time.Millisecond)
	fake.Advance(10 * time.Millisecond)
	require.Empty(t, l2.hold([]string{"q:a"}), "after a failed send the next quiet insert notifies itself")
	require.Len(t, rec2.all(), 1, "a failed send is not retried")
}

// A store inserting into many short-lived queues does not keep an entry per queue forever.
func TestWakeLimiterForgetsQuietQueues(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	l := newWakeLimiter(10*time.Millisecond, fake, (&sentWakes{}).send)
	defer l.close()
	for i := range 10 * pruneAbove {
		l.hold([]string{"q:" + strconv.Itoa(i)})
		fake.Advance(time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	require.LessOrEqual(t, len(l.last), pruneAbove+1)
}

// A nil limiter (WakeInterval negative) holds nothing.
func TestNoWakeLimiter(t *testing.T) {
	var l *wakeLimiter
	require.Empty(t, l.hold([]string{"q:a"}))
	l.committed([]string{"q:a"}, []*hoppertype.JobRow{queued("a", "01")})
	l.close()
}
