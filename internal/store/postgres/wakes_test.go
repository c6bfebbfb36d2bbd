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

// keys is a test's shorthand for a list of wake-up keys.
func keys(k ...string) []string { return k }

// spend makes key's burst of notifications, each sent by its insert.
func spend(t *testing.T, l *wakeLimiter, key string) {
	t.Helper()
	for range wakeBurst {
		turn := l.reserve(keys(key))
		require.Equal(t, keys(key), turn.sending)
		l.release(turn, nil)
	}
}

// Inserts into a queue notify themselves for a burst; once it is spent, the inserts are held,
// and one notification with the smallest of their ids goes out per interval. Another queue has
// its own pace.
func TestWakeLimiterPacesAQueuesWakeUps(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	rec := &sentWakes{}
	l := newWakeLimiter(10*time.Millisecond, fake, rec.send)
	defer l.close()

	spend(t, l, "q:a")
	turn := l.reserve(keys("q:a", "q:b"))
	require.Equal(t, wakeTurn{sending: keys("q:b"), held: keys("q:a")}, turn, "a's burst is spent, b's is whole")
	l.release(turn, []*hoppertype.JobRow{queued("a", "05"), queued("b", "01")})
	fake.Advance(2 * time.Millisecond)
	turn = l.reserve(keys("q:a"))
	require.Equal(t, wakeTurn{held: keys("q:a")}, turn)
	l.release(turn, []*hoppertype.JobRow{queued("a", "03"), queued("a", "07")})
	l.release(l.reserve(keys("q:a")), nil) // a failed insert, or existing jobs: nothing to announce

	fake.Advance(7 * time.Millisecond) // 9 ms after the burst
	require.Empty(t, rec.all(), "nothing is sent before the interval is over")
	fake.Advance(time.Millisecond)
	require.Eventually(t, func() bool { return len(rec.all()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"q:a 03"}}, rec.all(), "one wake-up, with the smallest held id; b's was its insert's own")

	// The flush took the interval's turn: an insert within the next one is held too.
	fake.Advance(5 * time.Millisecond)
	turn = l.reserve(keys("q:a"))
	require.Equal(t, keys("q:a"), turn.held)
	l.release(turn, []*hoppertype.JobRow{queued("a", "09")})
	fake.Advance(5 * time.Millisecond)
	require.Eventually(t, func() bool { return len(rec.all()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"q:a 09"}, rec.all()[1])

	// A quiet spell of a burst's intervals restores the whole burst.
	fake.Advance(wakeBurst * 10 * time.Millisecond)
	require.Eventually(t, func() bool { return len(l.reserve(keys("q:c")).sending) == 1 }, 5*time.Second, time.Millisecond)
	spend(t, l, "q:a")
	require.Equal(t, keys("q:a"), l.reserve(keys("q:a")).held)
}

// A key is held while its notifying statement is in flight, however long that takes, and the
// held wake-up goes out as soon as it returns; a flush in flight holds the key the same way.
func TestWakeLimiterHoldsWhileANotificationIsInFlight(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	rec := &sentWakes{}
	unblock := make(chan struct{})
	sending := make(chan struct{}, 10)
	l := newWakeLimiter(time.Millisecond, fake, func(ctx context.Context, p []string) error {
		sending <- struct{}{}
		<-unblock
		return rec.send(ctx, p)
	})
	defer l.close()

	slow := l.reserve(keys("q:a"))
	fake.Advance(50 * time.Millisecond) // the statement takes long: the interval is long over
	held := l.reserve(keys("q:a"))
	require.Equal(t, keys("q:a"), held.held, "held while the first statement is in flight")
	l.release(held, []*hoppertype.JobRow{queued("a", "04")})
	require.Zero(t, fake.Pending(), "nothing is armed while the key is in flight")
	l.release(slow, []*hoppertype.JobRow{queued("a", "01")})
	<-sending // the flush, armed when the key came free, is sending
	during := l.reserve(keys("q:a"))
	require.Equal(t, keys("q:a"), during.held, "held while the flush is in flight")
	l.release(during, []*hoppertype.JobRow{queued("a", "06")})
	unblock <- struct{}{}
	fake.Advance(time.Millisecond)
	<-sending
	unblock <- struct{}{}
	require.Eventually(t, func() bool { return len(rec.all()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"q:a 04"}, {"q:a 06"}}, rec.all())
}

// Scheduled jobs share one key; its held wake-up carries the earliest run_at, as the trigger's.
func TestWakeLimiterHoldsScheduledWakeUps(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	rec := &sentWakes{}
	l := newWakeLimiter(10*time.Millisecond, fake, rec.send)
	defer l.close()

	later, sooner := time.Unix(2_000_000, 0), time.Unix(1_500_000, 0)
	spend(t, l, scheduledKey)
	turn := l.reserve(keys(scheduledKey, "q:a"))
	require.Equal(t, wakeTurn{sending: keys("q:a"), held: keys(scheduledKey)}, turn)
	l.release(turn, []*hoppertype.JobRow{scheduled("x", "02", later), scheduled("y", "01", sooner), queued("a", "03")})
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

	spend(t, l, "q:a")
	l.release(l.reserve(keys("q:a")), []*hoppertype.JobRow{queued("a", "02")})
	late := l.reserve(keys("q:a"))
	require.Equal(t, keys("q:a"), late.held)
	l.close()
	require.Equal(t, [][]string{{"q:a 02"}}, rec.all())
	require.Zero(t, fake.Pending())
	require.Equal(t, wakeTurn{}, l.reserve(keys("q:a")), "a closed limiter holds nothing")
	l.release(late, []*hoppertype.JobRow{queued("a", "04")})
	require.Equal(t, [][]string{{"q:a 02"}, {"q:a 04"}}, rec.all())
	l.close() // twice is fine

	rec2 := &sentWakes{fail: true}
	l2 := newWakeLimiter(10*time.Millisecond, fake, rec2.send)
	defer l2.close()
	spend(t, l2, "q:a")
	l2.release(l2.reserve(keys("q:a")), []*hoppertype.JobRow{queued("a", "01")})
	fake.Advance(10 * time.Millisecond)
	require.Eventually(t, func() bool { return len(rec2.all()) == 1 }, 5*time.Second, time.Millisecond)
	fake.Advance(10 * time.Millisecond)
	require.Eventually(t, func() bool { return len(l2.reserve(keys("q:b")).sending) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, keys("q:a"), l2.reserve(keys("q:a")).sending, "after a failed send the next insert notifies itself")
	require.Len(t, rec2.all(), 1, "a failed send is not retried")
}

// A store inserting into many short-lived queues does not keep an entry per queue forever.
func TestWakeLimiterForgetsQuietQueues(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	l := newWakeLimiter(10*time.Millisecond, fake, (&sentWakes{}).send)
	defer l.close()
	for i := range 10 * pruneAbove {
		l.release(l.reserve(keys("q:"+strconv.Itoa(i))), nil)
		fake.Advance(time.Millisecond)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	require.LessOrEqual(t, len(l.keys), pruneAbove+1)
}

// A nil limiter (WakeInterval negative) holds nothing.
func TestNoWakeLimiter(t *testing.T) {
	var l *wakeLimiter
	require.Equal(t, wakeTurn{}, l.reserve(keys("q:a")))
	l.release(wakeTurn{held: keys("q:a")}, []*hoppertype.JobRow{queued("a", "01")})
	l.close()
}
