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

// try returns what the limiter decides for an insert of keys that then fails before it commits.
func try(l *wakeLimiter, k ...string) wakeTurn {
	turn := l.reserve(keys(k...))
	l.release(turn, nil)
	return turn
}

// spend makes key's burst of notifications, each sent by its insert.
func spend(t *testing.T, l *wakeLimiter, key string) {
	t.Helper()
	for range wakeBurst {
		require.Equal(t, keys(key), try(l, key).sending)
	}
}

// waitIdle waits until no notification of key is in flight (a flush has returned).
func waitIdle(t *testing.T, l *wakeLimiter, key string) {
	t.Helper()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.keys[key].inflight == 0
	}, 5*time.Second, time.Millisecond)
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
	l.release(turn, []*hoppertype.JobRow{queued("a", "05"), queued("b", "01")})
	require.Equal(t, keys("q:b"), turn.sending, "b's burst is whole")
	require.Equal(t, keys("q:a"), turn.held, "a's is spent")
	fake.Advance(2 * time.Millisecond)
	turn = l.reserve(keys("q:a"))
	l.release(turn, []*hoppertype.JobRow{queued("a", "03"), queued("a", "07")})
	require.Equal(t, keys("q:a"), turn.held)
	require.Equal(t, keys("q:a"), try(l, "q:a").held) // a failed insert: nothing more to announce

	fake.Advance(7 * time.Millisecond) // 9 ms after the burst
	require.Empty(t, rec.all(), "nothing is sent before the interval is over")
	fake.Advance(time.Millisecond)
	require.Eventually(t, func() bool { return len(rec.all()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"q:a 03"}}, rec.all(), "one wake-up, with the smallest held id; b's was its insert's own")
	waitIdle(t, l, "q:a")

	// The flush took the interval's turn: an insert within the next one is held too.
	fake.Advance(5 * time.Millisecond)
	turn = l.reserve(keys("q:a"))
	l.release(turn, []*hoppertype.JobRow{queued("a", "09")})
	require.Equal(t, keys("q:a"), turn.held)
	fake.Advance(5 * time.Millisecond)
	require.Eventually(t, func() bool { return len(rec.all()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"q:a 09"}, rec.all()[1])
	waitIdle(t, l, "q:a")

	// A quiet spell of a burst's intervals restores the whole burst.
	fake.Advance(wakeBurst * 10 * time.Millisecond)
	spend(t, l, "q:a")
	require.Equal(t, keys("q:a"), try(l, "q:a").held)
}

// While a held wake-up waits for its turn (its flush is armed but has not run), a new insert
// does not take the turn before it: it is held too, and the flush carries the smaller id.
func TestWakeLimiterHeldWakeUpsGoFirst(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	rec := &sentWakes{}
	l := newWakeLimiter(10*time.Millisecond, fake, rec.send)
	l.mu.Lock()
	l.keys["q:a"] = &wakeState{first: "04"} // free by pace and in flight, as before a flush runs
	l.mu.Unlock()
	turn := l.reserve(keys("q:a"))
	l.release(turn, []*hoppertype.JobRow{queued("a", "02")})
	require.Equal(t, wakeTurn{held: keys("q:a"), taken: true}, turn)
	l.close()
	require.Equal(t, [][]string{{"q:a 02"}}, rec.all())
}

// A key is held while its notifying statement is in flight, and the held wake-up goes out as
// soon as it returns; a flush in flight holds the key the same way. A statement in flight for
// longer than wakeStuckAfter holds nothing back any more.
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
	fake.Advance(10 * time.Millisecond) // the interval is long over; the statement still runs
	held := l.reserve(keys("q:a"))
	l.release(held, []*hoppertype.JobRow{queued("a", "04")})
	require.Equal(t, keys("q:a"), held.held, "held while the first statement is in flight")
	require.Empty(t, sending)
	l.release(slow, []*hoppertype.JobRow{queued("a", "01")})
	recv(t, sending) // the flush, armed when the key came free, is sending
	during := l.reserve(keys("q:a"))
	l.release(during, []*hoppertype.JobRow{queued("a", "06")})
	require.Equal(t, keys("q:a"), during.held, "held while the flush is in flight")
	unblock <- struct{}{}
	fake.Advance(time.Millisecond)
	recv(t, sending)
	unblock <- struct{}{}
	require.Eventually(t, func() bool { return len(rec.all()) == 2 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"q:a 04"}, {"q:a 06"}}, rec.all())

	stuck := l.reserve(keys("q:b"))
	defer l.release(stuck, nil) // before close
	held = l.reserve(keys("q:b"))
	l.release(held, []*hoppertype.JobRow{queued("b", "07")})
	fake.Advance(wakeStuckAfter - time.Millisecond)
	require.Empty(t, sending, "held while the statement is in flight")
	fake.Advance(time.Millisecond)
	recv(t, sending)
	unblock <- struct{}{}
	require.Eventually(t, func() bool { return len(rec.all()) == 3 }, 5*time.Second, time.Millisecond)
	require.Equal(t, []string{"q:b 07"}, rec.all()[2], "a stuck statement holds nothing back")
}

// recv waits for a flush to start sending, failing the test after 5 s.
func recv(t *testing.T, sending <-chan struct{}) {
	t.Helper()
	select {
	case <-sending:
	case <-time.After(5 * time.Second):
		t.Fatal("no flush within 5 s")
	}
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
	l.release(turn, []*hoppertype.JobRow{scheduled("x", "02", later), scheduled("y", "01", sooner), queued("a", "03")})
	require.Equal(t, keys("q:a"), turn.sending)
	require.Equal(t, keys(scheduledKey), turn.held)
	fake.Advance(10 * time.Millisecond)
	require.Eventually(t, func() bool { return len(rec.all()) == 1 }, 5*time.Second, time.Millisecond)
	require.Equal(t, [][]string{{"s:" + strconv.FormatInt(sooner.UnixMicro(), 10)}}, rec.all())
}

// Close waits for the inserts under way, which send what they held themselves, then sends
// what is held and stops holding. A failed send drops the wake-ups (workers poll) and does
// not stop the limiter.
func TestWakeLimiterClose(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	rec := &sentWakes{}
	l := newWakeLimiter(time.Hour, fake, rec.send)

	spend(t, l, "q:a")
	turn := l.reserve(keys("q:a"))
	l.release(turn, []*hoppertype.JobRow{queued("a", "02")})
	late := l.reserve(keys("q:a"))
	require.Equal(t, keys("q:a"), late.held)
	closed := make(chan struct{})
	go func() {
		l.close()
		close(closed)
	}()
	require.Never(t, func() bool {
		select {
		case <-closed:
			return true
		default:
			return false
		}
	}, 50*time.Millisecond, time.Millisecond, "close waits for the insert under way")
	l.release(late, []*hoppertype.JobRow{queued("a", "04")})
	<-closed
	require.Equal(t, [][]string{{"q:a 04"}, {"q:a 02"}}, rec.all())
	require.Zero(t, fake.Pending())
	require.Equal(t, wakeTurn{}, try(l, "q:a"), "a closed limiter holds nothing")
	l.close() // twice is fine

	rec2 := &sentWakes{fail: true}
	l2 := newWakeLimiter(10*time.Millisecond, fake, rec2.send)
	defer l2.close()
	spend(t, l2, "q:a")
	turn = l2.reserve(keys("q:a"))
	l2.release(turn, []*hoppertype.JobRow{queued("a", "01")})
	fake.Advance(10 * time.Millisecond)
	require.Eventually(t, func() bool { return len(rec2.all()) == 1 }, 5*time.Second, time.Millisecond)
	waitIdle(t, l2, "q:a")
	fake.Advance(10 * time.Millisecond)
	require.Equal(t, keys("q:a"), try(l2, "q:a").sending, "after a failed send the next insert notifies itself")
	require.Len(t, rec2.all(), 1, "a failed send is not retried")
}

// A store inserting into many short-lived queues does not keep an entry per queue forever.
func TestWakeLimiterForgetsQuietQueues(t *testing.T) {
	fake := clock.NewFake(time.Unix(1_000_000, 0))
	l := newWakeLimiter(10*time.Millisecond, fake, (&sentWakes{}).send)
	defer l.close()
	for i := range 10 * pruneAbove {
		try(l, "q:"+strconv.Itoa(i))
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
