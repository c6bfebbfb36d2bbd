package backoff_test

import (
	"bytes"
	"errors"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperjobs/hopper/hoppertype"
	"github.com/hopperjobs/hopper/internal/backoff"
	"github.com/hopperjobs/hopper/internal/clock"
	"github.com/stretchr/testify/require"
)

var start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mid() float64 { return 0.5 } // no jitter effect

func TestDelayGrowsAndCaps(t *testing.T) {
	t.Parallel()
	p := hoppertype.RetryPolicy{Base: time.Second, Multiplier: 3, Cap: 20 * time.Second}
	require.Equal(t, time.Second, backoff.Delay(p, 1, mid))
	require.Equal(t, 3*time.Second, backoff.Delay(p, 2, mid))
	require.Equal(t, 9*time.Second, backoff.Delay(p, 3, mid))
	require.Equal(t, 20*time.Second, backoff.Delay(p, 4, mid))
	require.Equal(t, 20*time.Second, backoff.Delay(p, 5000, mid), "no overflow")
	require.Equal(t, time.Second, backoff.Delay(p, 0, mid), "n < 1 counts as the first failure")
}

func TestDelayJitterBounds(t *testing.T) {
	t.Parallel()
	p := hoppertype.RetryPolicy{Base: 10 * time.Second, Multiplier: 2, Cap: time.Hour, Jitter: 0.2}
	require.Equal(t, 8*time.Second, backoff.Delay(p, 1, func() float64 { return 0 }))
	require.Equal(t, 12*time.Second, backoff.Delay(p, 1, func() float64 { return 1 }))
	for range 1000 {
		d := backoff.Delay(p, 1, nil)
		require.GreaterOrEqual(t, d, 8*time.Second)
		require.LessOrEqual(t, d, 12*time.Second)
	}
	p.Jitter = -1
	require.Equal(t, 10*time.Second, backoff.Delay(p, 1, func() float64 { return 0 }), "negative: no jitter")
}

// logs collects a tracker's log lines.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.buf.String()), "\n")
}

func newTracker(rnd func() float64) (*backoff.Tracker, *clock.Fake, *logs) {
	clk := clock.NewFake(start)
	out := &logs{}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	tr := backoff.New(backoff.Config{Name: "promote scheduled jobs", Attrs: []any{"queue", "q1"}, Clock: clk,
		Logger: log, Rand: rnd})
	return tr, clk, out
}

func TestTrackerDelaysGrowCapAndResetOnSuccess(t *testing.T) {
	t.Parallel()
	tr, clk, _ := newTracker(mid)
	down := errors.New("connection refused")
	var got []time.Duration
	for range 12 {
		d := tr.Fail(down)
		got = append(got, d)
		clk.Advance(d)
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1600 * ms, 3200 * ms, 6400 * ms,
		12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second, 30 * time.Second}, got, "DefaultPolicy: 100 ms doubling to 30 s")
	st := tr.Status()
	require.True(t, st.Failing())
	require.Equal(t, 12, st.Failures)
	require.Equal(t, start, st.Since)
	require.ErrorIs(t, st.Err, down)

	tr.Succeed()
	require.False(t, tr.Status().Failing())
	require.Equal(t, 100*ms, tr.Fail(down), "a success resets the backoff")
	require.Equal(t, 200*ms, tr.Fail(down))
	tr.Reset()
	require.False(t, tr.Status().Failing())
	require.Equal(t, 100*ms, tr.Fail(down), "so does Reset")
}

func TestTrackerJitterStaysWithinTwentyPercent(t *testing.T) {
	t.Parallel()
	low, _, _ := newTracker(func() float64 { return 0 })
	high, _, _ := newTracker(func() float64 { return 0.9999999999 })
	for n := 1; n <= 12; n++ {
		plain := min(100*time.Millisecond<<(n-1), 30*time.Second)
		lo, hi := low.Fail(errors.New("x")), high.Fail(errors.New("x"))
		require.InDelta(t, float64(plain)*0.8, float64(lo), float64(time.Microsecond), "failure %d", n)
		require.InDelta(t, float64(plain)*1.2, float64(hi), float64(time.Microsecond), "failure %d", n)
	}
	random, _, _ := newTracker(nil)
	for n := 1; n <= 1000; n++ {
		plain := float64(min(100*time.Millisecond<<min(n-1, 20), 30*time.Second))
		d := float64(random.Fail(errors.New("x")))
		require.GreaterOrEqual(t, d, 0.8*plain, "failure %d", n)
		require.LessOrEqual(t, d, 1.2*plain, "failure %d", n)
	}
}

func TestTrackerLogsStateChangesNotAttempts(t *testing.T) {
	t.Parallel()
	tr, clk, out := newTracker(mid)
	tr.Succeed() // no outage yet: nothing to say
	down := errors.New("dial tcp 127.0.0.1:5432: connection refused")
	// A 20-second outage: 8 tries.
	for clk.Now().Sub(start) < 20*time.Second {
		clk.Advance(tr.Fail(down))
	}
	tr.Succeed()
	tr.Succeed()
	tr.Fail(down)
	tr.Reset() // the loop stopped trying: no line
	require.Equal(t, []string{
		`level=WARN msg="promote scheduled jobs failed; retrying with backoff" queue=q1 err="dial tcp 127.0.0.1:5432: connection refused" retry_in=100ms`,
		`level=INFO msg="promote scheduled jobs recovered" queue=q1 failures=8 outage=25.5s`,
		`level=WARN msg="promote scheduled jobs failed; retrying with backoff" queue=q1 err="dial tcp 127.0.0.1:5432: connection refused" retry_in=100ms`,
	}, out.lines())
}

func TestTrackerRemindsOnceAMinuteDuringALongOutage(t *testing.T) {
	t.Parallel()
	tr, clk, out := newTracker(mid)
	down := errors.New("disk full")
	for clk.Now().Sub(start) < 5*time.Minute {
		clk.Advance(tr.Fail(down))
	}
	lines := out.lines()
	require.Len(t, lines, 5, "the first failure, then one reminder a minute:\n%s", strings.Join(lines, "\n"))
	require.Contains(t, lines[1], `msg="promote scheduled jobs still failing"`)
	require.Contains(t, lines[1], "failures=")
	require.Contains(t, lines[1], `err="disk full"`)
}

func TestSetReportsTheFailingLoops(t *testing.T) {
	t.Parallel()
	var set backoff.Set
	a := set.New(backoff.Config{Name: "claim jobs", Attrs: []any{"queue", "default"}})
	b := set.New(backoff.Config{Name: "node heartbeat"})
	require.Empty(t, set.Failing())
	a.Fail(errors.New("boom"))
	b.Fail(errors.New("boom"))
	b.Succeed()
	failing := set.Failing()
	require.Len(t, failing, 1)
	require.Equal(t, "claim jobs", failing[0].Name)
	require.Contains(t, failing[0].String(), "claim jobs queue=default: 1 failures since ")
	require.Contains(t, failing[0].String(), ": boom")
	require.Regexp(t, `^claim jobs queue=default: 1 failures since \S+$`, failing[0].Brief(), "without the error")
}

// A delay beyond the longest Duration is the longest, not a negative one (found by FuzzDelay:
// a cap of math.MaxInt64 retried at once from attempt 64 on).
func TestDelayNeverOverflows(t *testing.T) {
	t.Parallel()
	p := hoppertype.RetryPolicy{Base: time.Second, Multiplier: 2, Cap: math.MaxInt64}
	require.Equal(t, time.Duration(math.MaxInt64), backoff.Delay(p, 100, mid))
	p.Jitter = 1
	require.Equal(t, time.Duration(math.MaxInt64), backoff.Delay(p, 70, func() float64 { return 0.99 }))
	wild := hoppertype.RetryPolicy{Base: time.Second, Multiplier: 1e300, Cap: time.Hour, Jitter: 1e300}
	require.GreaterOrEqual(t, backoff.Delay(wild, 2, func() float64 { return 0.9 }), time.Duration(0))
	require.Equal(t, time.Duration(0), backoff.Delay(wild, 2, func() float64 { return 0.1 }))
}
